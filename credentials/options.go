package credentials

import (
	"time"

	"k8s.io/utils/clock"
)

// Option configures the keyrings of this package.
type Option func(*options)

type options struct {
	clock         clock.Clock
	lifetime      time.Duration
	tokens        bool
	helpers       bool
	helperTimeout time.Duration
	pluginTimeout time.Duration
	onError       func(source string, err error)

	getServiceAccount ServiceAccountFunc
	getToken          ServiceAccountTokenFunc
}

// DefaultCacheLifetime is how long the node keyring keeps what it read, as
// kubelet's caching provider does.
const DefaultCacheLifetime = 5 * time.Minute

func newOptions(opts []Option) options {
	o := options{
		clock:         clock.RealClock{},
		lifetime:      DefaultCacheLifetime,
		helperTimeout: 10 * time.Second,
		pluginTimeout: time.Minute,
		onError:       func(string, error) {},
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithClock sets the clock for cache expiry.
// A nil clock keeps the real clock.
func WithClock(c clock.Clock) Option {
	return func(o *options) {
		if c != nil {
			o.clock = c
		}
	}
}

// WithCacheLifetime sets how long the node keyring keeps a read config.
func WithCacheLifetime(d time.Duration) Option { return func(o *options) { o.lifetime = d } }

// WithTokens carries "identitytoken" and "registrytoken" from config files
// and secrets into the returned credentials. Kubelet drops them.
func WithTokens() Option { return func(o *options) { o.tokens = true } }

// WithHelpers makes the node keyring ask docker credential helpers
// ("credHelpers", "credsStore" in config.json), each call bounded by
// timeout. Kubelet ignores helpers.
func WithHelpers(timeout time.Duration) Option {
	return func(o *options) { o.helpers, o.helperTimeout = true, timeout }
}

// WithPluginTimeout bounds one run of an exec credential plugin (kubelet:
// one minute).
func WithPluginTimeout(d time.Duration) Option { return func(o *options) { o.pluginTimeout = d } }

// WithErrorHandler receives the errors that a lookup cannot return (an
// unreadable node file, a failing helper or plugin), with the source's
// name. Messages never contain credentials. A nil handler keeps the
// default, which drops them.
func WithErrorHandler(f func(source string, err error)) Option {
	return func(o *options) {
		if f != nil {
			o.onError = f
		}
	}
}
