package nodeapi

import (
	"container/list"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/utils/clock"
)

// User is who made a request, as an authenticator found it.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Authenticator tells who made a request: ok false means it has no
// credentials this authenticator reads, or they are not valid; an error
// means it could not tell (the request is refused with 401 either way, as
// kubelet's).
type Authenticator interface {
	Authenticate(r *http.Request) (u User, ok bool, err error)
}

// Authenticators tries each in order and takes the first that knows the
// request, as kubelet's union of x509 and token authenticators; errors
// are returned only when none knows it. Anonymous requests are refused:
// kubelet's default (authentication.anonymous.enabled false).
type Authenticators []Authenticator

// Authenticate implements Authenticator.
func (as Authenticators) Authenticate(r *http.Request) (User, bool, error) {
	var errs []error
	for _, a := range as {
		u, ok, err := a.Authenticate(r)
		if ok {
			return u, true, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return User{}, false, errors.Join(errs...)
}

// X509 authenticates clients by their TLS certificate, verified against
// the client CA (kubelet's authentication.x509.clientCAFile): the user is
// the subject's common name, the groups its organizations.
type X509 struct {
	ClientCAs *x509.CertPool
}

// Authenticate implements Authenticator.
func (a X509) Authenticate(r *http.Request) (User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 || a.ClientCAs == nil {
		return User{}, false, nil
	}
	leaf := r.TLS.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range r.TLS.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: a.ClientCAs, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return User{}, false, fmt.Errorf("verifying certificate %s failed: %w", certName(leaf), err)
	}
	if leaf.Subject.CommonName == "" {
		return User{}, false, errors.New("x509: subject with cn= is required")
	}
	return User{Name: leaf.Subject.CommonName, Groups: append([]string(nil), leaf.Subject.Organization...)}, true, nil
}

func certName(c *x509.Certificate) string {
	return fmt.Sprintf("SN=%s, CN=%s", c.SerialNumber, c.Subject.CommonName)
}

// TokenReviewer creates a TokenReview in the API server (client-go's
// AuthenticationV1().TokenReviews().Create fits in a line).
type TokenReviewer interface {
	CreateTokenReview(ctx context.Context, review *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error)
}

// DefaultWebhookCacheTTL is how long kubelet keeps a token's review
// (authentication.webhook.cacheTTL), answers yes and no alike.
const DefaultWebhookCacheTTL = 2 * time.Minute

// Tokens authenticates bearer tokens through TokenReview, as kubelet's
// webhook token authenticator: the token from "Authorization: Bearer",
// reviewed for Audiences (none: the API server's), each answer kept for
// the TTL. The cache holds a hash of the token, never the token.
type Tokens struct {
	reviewer  TokenReviewer
	audiences []string
	ttl       time.Duration
	clock     clock.PassiveClock
	cache     ttlCache[tokenAnswer]
}

type tokenAnswer struct {
	user User
	ok   bool
}

// NewTokens returns a token authenticator over r, keeping answers for ttl
// (0: DefaultWebhookCacheTTL).
func NewTokens(r TokenReviewer, ttl time.Duration, audiences ...string) *Tokens {
	if ttl == 0 {
		ttl = DefaultWebhookCacheTTL
	}
	return &Tokens{reviewer: r, audiences: audiences, ttl: ttl, clock: clock.RealClock{}}
}

// Authenticate implements Authenticator.
func (t *Tokens) Authenticate(r *http.Request) (User, bool, error) {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	scheme, token, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return User{}, false, nil
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return User{}, false, nil
	}
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:])
	now := t.clock.Now()
	if a, hit := t.cache.get(key, now); hit {
		return a.user, a.ok, nil
	}
	review, err := t.reviewer.CreateTokenReview(r.Context(), &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: t.audiences}})
	if err != nil {
		// Not cached, as kubelet's (errors are not cached).
		return User{}, false, fmt.Errorf("token review: %w", err)
	}
	a := tokenAnswer{ok: review.Status.Authenticated}
	if a.ok && len(t.audiences) > 0 && !intersects(t.audiences, review.Status.Audiences) {
		a.ok = false
	}
	if a.ok {
		u := review.Status.User
		a.user = User{Name: u.Username, UID: u.UID, Groups: u.Groups}
		if len(u.Extra) > 0 {
			a.user.Extra = map[string][]string{}
			for k, v := range u.Extra {
				a.user.Extra[k] = v
			}
		}
	}
	t.cache.put(key, a, now, now.Add(t.ttl))
	return a.user, a.ok, nil
}

func intersects(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

// Attributes is what a request asks to do, as kubelet's authorizer sees
// it: always a resource request on the node object ("nodes", the node's
// name, API version v1, no group and namespace).
type Attributes struct {
	User        User
	Verb        string // create, get, update, patch, delete
	Subresource string // proxy, stats, metrics, log, pods, healthz, configz, ...
	Name        string // the node's name
	Path        string
}

// RequestAttributes is kubelet's nodeAuthorizerAttributesGetter with
// KubeletFineGrainedAuthz (GA, locked on in v1.37): the verb from the
// method, and the subresources to check in order; the request is allowed
// if any is. /pods, /runningpods/, /healthz and /configz ask for their own
// subresource and then "proxy"; /stats/, /metrics, /logs/, /checkpoint/,
// /statusz and /flagz for theirs; everything else for "proxy".
func RequestAttributes(nodeName string, u User, r *http.Request) []Attributes {
	verb := ""
	switch r.Method {
	case http.MethodPost:
		verb = "create"
	case http.MethodGet:
		verb = "get"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	}
	p := r.URL.Path
	var subs []string
	switch {
	case isSubpath(p, "/allocatedPods"), isSubpath(p, "/pods"):
		subs = append(subs, "pods")
	case isSubpath(p, "/healthz"):
		subs = append(subs, "healthz")
	case isSubpath(p, "/configz"):
		subs = append(subs, "configz")
	case isSubpath(p, "/runningpods/"):
		subs = append(subs, "pods")
	}
	switch {
	case isSubpath(p, "/stats/"):
		subs = append(subs, "stats")
	case isSubpath(p, "/metrics"):
		subs = append(subs, "metrics")
	case isSubpath(p, "/logs/"):
		subs = append(subs, "log")
	case isSubpath(p, "/checkpoint/"):
		subs = append(subs, "checkpoint")
	case isSubpath(p, "/statusz"):
		subs = append(subs, "statusz")
	case isSubpath(p, "/flagz"):
		subs = append(subs, "configz")
	default:
		subs = append(subs, "proxy")
	}
	attrs := make([]Attributes, len(subs))
	for i, s := range subs {
		attrs[i] = Attributes{User: u, Verb: verb, Subresource: s, Name: nodeName, Path: p}
	}
	return attrs
}

// isSubpath is kubelet's: sub is path or beneath it.
func isSubpath(sub, path string) bool {
	path = strings.TrimSuffix(path, "/")
	return sub == path || strings.HasPrefix(sub, path) && len(sub) > len(path) && sub[len(path)] == '/'
}

// Authorizer decides whether a user may do what the attributes say.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (allowed bool, reason string, err error)
}

// SubjectAccessReviewer creates a SubjectAccessReview in the API server
// (client-go's AuthorizationV1().SubjectAccessReviews().Create).
type SubjectAccessReviewer interface {
	CreateSubjectAccessReview(ctx context.Context, review *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error)
}

// Kubelet's webhook authorizer cache defaults
// (authorization.webhook.cacheAuthorizedTTL, cacheUnauthorizedTTL).
const (
	DefaultAuthorizedTTL   = 5 * time.Minute
	DefaultUnauthorizedTTL = 30 * time.Second
)

// Reviews authorizes through SubjectAccessReview, as kubelet's webhook
// authorizer (authorization.mode Webhook, its default): allowed answers
// kept for authorizedTTL, denied ones for unauthorizedTTL, errors not
// kept.
type Reviews struct {
	reviewer                 SubjectAccessReviewer
	authorizedTTL, deniedTTL time.Duration
	clock                    clock.PassiveClock
	cache                    ttlCache[reviewAnswer]
}

type reviewAnswer struct {
	allowed bool
	reason  string
}

// NewReviews returns an authorizer over r (zero TTLs: kubelet's).
func NewReviews(r SubjectAccessReviewer, authorizedTTL, unauthorizedTTL time.Duration) *Reviews {
	if authorizedTTL == 0 {
		authorizedTTL = DefaultAuthorizedTTL
	}
	if unauthorizedTTL == 0 {
		unauthorizedTTL = DefaultUnauthorizedTTL
	}
	return &Reviews{reviewer: r, authorizedTTL: authorizedTTL, deniedTTL: unauthorizedTTL, clock: clock.RealClock{}}
}

// Authorize implements Authorizer.
func (rv *Reviews) Authorize(ctx context.Context, a Attributes) (bool, string, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: a.Verb, Version: "v1", Resource: "nodes",
			Subresource: a.Subresource, Name: a.Name},
		User: a.User.Name, UID: a.User.UID, Groups: a.User.Groups,
	}}
	if len(a.User.Extra) > 0 {
		sar.Spec.Extra = map[string]authorizationv1.ExtraValue{}
		for k, v := range a.User.Extra {
			sar.Spec.Extra[k] = v
		}
	}
	key := reviewKey(sar.Spec)
	now := rv.clock.Now()
	if c, hit := rv.cache.get(key, now); hit {
		return c.allowed, c.reason, nil
	}
	got, err := rv.reviewer.CreateSubjectAccessReview(ctx, sar)
	if err != nil {
		return false, "", fmt.Errorf("subject access review: %w", err)
	}
	c := reviewAnswer{allowed: got.Status.Allowed && !got.Status.Denied, reason: got.Status.Reason}
	ttl := rv.deniedTTL
	if c.allowed {
		ttl = rv.authorizedTTL
	}
	rv.cache.put(key, c, now, now.Add(ttl))
	return c.allowed, c.reason, nil
}

// reviewKey identifies a review's question.
func reviewKey(s authorizationv1.SubjectAccessReviewSpec) string {
	var b strings.Builder
	ra := s.ResourceAttributes
	fmt.Fprintf(&b, "%q %q %q %q %q %q|", s.User, s.UID, ra.Verb, ra.Resource, ra.Subresource, ra.Name)
	groups := append([]string(nil), s.Groups...)
	sort.Strings(groups)
	fmt.Fprintf(&b, "%q|", groups)
	keys := make([]string, 0, len(s.Extra))
	for k := range s.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%q=%q;", k, []string(s.Extra[k]))
	}
	return b.String()
}

// maxCached bounds each answer cache, so that requests with ever new
// tokens or users cannot grow it without end (kubelet's caches are
// bounded too).
const maxCached = 4096

// ttlCache keeps answers until they expire, at most maxCached of them:
// when full, the expired go first, then the entry nearest its expiry.
// Entries are kept in one list per TTL, each in expiry order, so that a
// miss's eviction looks at the lists' fronts only: O(1) for the one or
// two TTLs a cache has, where a scan of every entry under the lock made
// each miss of a full cache serialise the node API for a while.
type ttlCache[V any] struct {
	mu    sync.Mutex
	m     map[string]*list.Element // of *ttlEntry[V]
	byTTL map[time.Duration]*list.List
}

type ttlEntry[V any] struct {
	key     string
	v       V
	expires time.Time
	in      *list.List
}

func (c *ttlCache[V]) get(key string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[key]
	if !ok {
		var zero V
		return zero, false
	}
	e := el.Value.(*ttlEntry[V])
	if now.After(e.expires) {
		c.remove(el)
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *ttlCache[V]) put(key string, v V, now, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*list.Element{}
		c.byTTL = map[time.Duration]*list.List{}
	}
	if el, ok := c.m[key]; ok {
		c.remove(el)
	}
	if len(c.m) >= maxCached {
		// The expired first: each list's front ones.
		for _, l := range c.byTTL {
			for l.Len() > 0 && now.After(l.Front().Value.(*ttlEntry[V]).expires) {
				c.remove(l.Front())
			}
		}
		if len(c.m) >= maxCached {
			var soonest *list.Element
			for _, l := range c.byTTL {
				if f := l.Front(); f != nil && (soonest == nil || f.Value.(*ttlEntry[V]).expires.Before(soonest.Value.(*ttlEntry[V]).expires)) {
					soonest = f
				}
			}
			c.remove(soonest)
		}
	}
	ttl := expires.Sub(now)
	l := c.byTTL[ttl]
	if l == nil {
		l = list.New()
		c.byTTL[ttl] = l
	}
	e := &ttlEntry[V]{key: key, v: v, expires: expires, in: l}
	// In expiry order: at the back, unless the clock went back.
	at := l.Back()
	for at != nil && at.Value.(*ttlEntry[V]).expires.After(expires) {
		at = at.Prev()
	}
	if at == nil {
		c.m[key] = l.PushFront(e)
	} else {
		c.m[key] = l.InsertAfter(e, at)
	}
}

// remove drops the entry el.
func (c *ttlCache[V]) remove(el *list.Element) {
	e := el.Value.(*ttlEntry[V])
	e.in.Remove(el)
	delete(c.m, e.key)
}
