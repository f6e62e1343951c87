package staticpods

import (
	"net/http"
	"time"

	"k8s.io/utils/clock"
)

// Kubelet's default periods (KubeletConfiguration fileCheckFrequency and
// httpCheckFrequency).
const (
	DefaultFileCheckFrequency = 20 * time.Second
	DefaultHTTPCheckFrequency = 20 * time.Second
)

// Option configures a FileSource or a URLSource.
type Option func(*options)

type options struct {
	clock     clock.WithTicker
	period    time.Duration
	onRefused func(Refusal)
	client    *http.Client
	// listed, for tests: called after each read of the source.
	listed func()
}

func defaultOptions(period time.Duration) options {
	return options{clock: clock.RealClock{}, period: period, onRefused: func(Refusal) {},
		client: &http.Client{Timeout: 10 * time.Second}}
}

// WithClock sets the clock of the periodic re-read (tests pass a fake one).
func WithClock(c clock.WithTicker) Option { return func(o *options) { o.clock = c } }

// WithPeriod sets how often the source is read again whatever the watch
// says (fileCheckFrequency, httpCheckFrequency: 20 s). Zero or less keeps
// the default.
func WithPeriod(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.period = d
		}
	}
}

// WithOnRefused is called, from the source's goroutine, for every manifest
// refused (named by its path or URL; the error matches ErrInvalidManifest,
// ErrTooLarge, ErrNotRegular, ErrAPIReference or ErrDuplicateName) and for
// every read of the source that failed. Errors never hold manifest contents.
func WithOnRefused(f func(Refusal)) Option { return func(o *options) { o.onRefused = f } }

// WithHTTPClient sets the URL source's client (kubelet's: a 10 s timeout).
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.client = c } }
