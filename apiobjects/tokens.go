package apiobjects

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Kubelet's token manager constants (pkg/kubelet/token).
const (
	tokenMaxTTL    = 24 * time.Hour
	tokenGCPeriod  = time.Minute
	tokenMaxJitter = 10 * time.Second
)

// ErrNoTokenRequester: a serviceAccountToken projection with no
// TokenRequester to ask the API server (kubelet in standalone mode).
var ErrNoTokenRequester = errors.New("cannot use TokenManager when kubelet is in standalone mode")

// Tokens is kubelet's service account token manager: it caches the API
// server's TokenRequest answers and asks again only when a token is older
// than 80% of its lifetime or than 24 hours (less a jitter of up to 10 s,
// so that pods started together do not renew together). When a renewal
// fails, the cached token is served while it has not expired. Expired
// entries are dropped by Cleanup (Run calls it every minute), a pod's by
// DeleteServiceAccountToken. Tokens never appear in its errors or logs;
// its cache keys, which it may log, hold no secret.
type Tokens struct {
	req   TokenRequester
	clock clock.Clock

	mu    sync.RWMutex
	cache map[string]*authenticationv1.TokenRequest

	ranCleanup func() // a test's hook: Run cleaned up and armed its timer
}

// TokensOption configures Tokens.
type TokensOption func(*Tokens)

// WithTokenClock sets the clock that ages tokens (default: the real one).
func WithTokenClock(c clock.Clock) TokensOption { return func(t *Tokens) { t.clock = c } }

// NewTokens returns a token manager asking req for tokens. A nil req fails
// every request with ErrNoTokenRequester.
func NewTokens(req TokenRequester, opts ...TokensOption) *Tokens {
	t := &Tokens{req: req, clock: clock.RealClock{}, cache: map[string]*authenticationv1.TokenRequest{}}
	for _, o := range opts {
		o(t)
	}
	return t
}

// GetServiceAccountToken is kubelet's: the cached token for this service
// account and request (audiences, expiration, bound object, service
// account UID) unless it needs a refresh; otherwise a new one from the
// TokenRequester. If that fails, the cached token is returned while it is
// valid (the failure is logged to the context's logger), and an error
// otherwise. The result is shared: do not modify it.
func (m *Tokens) GetServiceAccountToken(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	if m == nil {
		return nil, fmt.Errorf("failed to fetch token: %w", ErrNoTokenRequester)
	}
	key := tokenKey(name, namespace, tr)
	ctr, ok := m.get(key)
	if ok && !m.requiresRefresh(ctx, ctr) {
		return ctr, nil
	}
	got, err := m.request(ctx, namespace, name, tr)
	if err != nil {
		switch {
		case !ok:
			return nil, fmt.Errorf("failed to fetch token: %w", err)
		case m.expired(ctr):
			return nil, fmt.Errorf("token %s expired and refresh failed: %w", key, err)
		}
		logr.FromContextOrDiscard(ctx).Error(err, "Couldn't update token", "cacheKey", key)
		return ctr, nil
	}
	m.mu.Lock()
	m.cache[key] = got
	m.mu.Unlock()
	return got, nil
}

func (m *Tokens) request(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	if m.req == nil {
		return nil, ErrNoTokenRequester
	}
	got, err := m.req.CreateToken(ctx, namespace, name, tr)
	if err == nil && got == nil {
		err = errors.New("TokenRequester returned no token and no error")
	}
	return got, err
}

// DeleteServiceAccountToken drops the tokens bound to the pod, as kubelet
// does when the pod's projected volumes are torn down.
func (m *Tokens) DeleteServiceAccountToken(podUID types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, tr := range m.cache {
		if tr.Spec.BoundObjectRef != nil && tr.Spec.BoundObjectRef.UID == podUID {
			delete(m.cache, k)
		}
	}
}

// Cleanup drops the expired tokens.
func (m *Tokens) Cleanup() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, tr := range m.cache {
		if m.expired(tr) {
			delete(m.cache, k)
		}
	}
}

// Run calls Cleanup now and every minute until ctx is done, as kubelet's
// token manager does in the background.
func (m *Tokens) Run(ctx context.Context) {
	for {
		m.Cleanup()
		t := m.clock.NewTimer(tokenGCPeriod)
		if m.ranCleanup != nil {
			m.ranCleanup()
		}
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

func (m *Tokens) get(key string) (*authenticationv1.TokenRequest, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	tr, ok := m.cache[key]
	return tr, ok
}

func (m *Tokens) expired(tr *authenticationv1.TokenRequest) bool {
	return m.clock.Now().After(tr.Status.ExpirationTimestamp.Time)
}

// requiresRefresh is kubelet's: older than 24 hours, or within 20% of its
// lifetime of expiry, each less a jitter of up to 10 s. A token without
// expirationSeconds is never refreshed (kubelet logs it).
func (m *Tokens) requiresRefresh(ctx context.Context, tr *authenticationv1.TokenRequest) bool {
	if tr.Spec.ExpirationSeconds == nil {
		logr.FromContextOrDiscard(ctx).Error(nil, "Expiration seconds was nil for token request", "boundObjectRef", tr.Spec.BoundObjectRef)
		return false
	}
	now := m.clock.Now()
	exp := tr.Status.ExpirationTimestamp.Time
	iat := exp.Add(-time.Duration(*tr.Spec.ExpirationSeconds) * time.Second)
	jitter := time.Duration(rand.Float64()*tokenMaxJitter.Seconds()) * time.Second
	if now.After(iat.Add(tokenMaxTTL - jitter)) {
		return true
	}
	return now.After(exp.Add(-time.Duration(*tr.Spec.ExpirationSeconds*20/100)*time.Second - jitter))
}

// tokenKey is kubelet's keyFunc: safe to log, it holds no token.
func tokenKey(name, namespace string, tr *authenticationv1.TokenRequest) string {
	var exp int64
	if tr.Spec.ExpirationSeconds != nil {
		exp = *tr.Spec.ExpirationSeconds
	}
	var ref authenticationv1.BoundObjectReference
	if tr.Spec.BoundObjectRef != nil {
		ref = *tr.Spec.BoundObjectRef
	}
	return fmt.Sprintf("%q/%q/%#v/%#v/%#v/%q", name, namespace, tr.Spec.Audiences, exp, ref, tr.UID)
}
