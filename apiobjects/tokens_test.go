package apiobjects

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// fakeTokenGetter is kubelet's: a fixed answer, counted.
type fakeTokenGetter struct {
	count int
	tr    *authenticationv1.TokenRequest
	err   error
}

func (f *fakeTokenGetter) CreateToken(context.Context, string, string, *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	f.count++
	return f.tr, f.err
}

func tokenRequest() *authenticationv1.TokenRequest {
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences: []string{"foo1", "foo2"}, ExpirationSeconds: ptr.To[int64](2000),
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "pod", Name: "foo-pod", UID: "foo-uid"},
	}}
}

// kubelet's TestTokenCachingAndExpiration.
func TestTokenCachingAndExpiration(t *testing.T) {
	type suite struct {
		clock *testingclock.FakeClock
		tg    *fakeTokenGetter
		mgr   *Tokens
	}
	ctx := context.Background()
	withUID := func(uid types.UID) *authenticationv1.TokenRequest {
		tr := tokenRequest()
		tr.Spec.ExpirationSeconds = ptr.To[int64](3600)
		tr.UID = uid
		return tr
	}
	cases := []struct {
		name string
		exp  time.Duration
		f    func(t *testing.T, s *suite)
	}{
		{"rotate hour token expires in the last 12 minutes", time.Hour, func(t *testing.T, s *suite) {
			s.clock.SetTime(s.clock.Now().Add(50 * time.Minute))
			if _, err := s.mgr.GetServiceAccountToken(ctx, "a", "b", tokenRequest()); err != nil {
				t.Fatal(err)
			}
			if s.tg.count != 2 {
				t.Fatalf("expected token to be refreshed: call count was %d", s.tg.count)
			}
		}},
		{"rotate 24 hour token that expires in 40 hours", 40 * time.Hour, func(t *testing.T, s *suite) {
			s.clock.SetTime(s.clock.Now().Add(25 * time.Hour))
			if _, err := s.mgr.GetServiceAccountToken(ctx, "a", "b", tokenRequest()); err != nil {
				t.Fatal(err)
			}
			if s.tg.count != 2 {
				t.Fatalf("expected token to be refreshed: call count was %d", s.tg.count)
			}
		}},
		{"rotate hour token fails, old token is still valid, doesn't error", time.Hour, func(t *testing.T, s *suite) {
			s.clock.SetTime(s.clock.Now().Add(50 * time.Minute))
			s.mgr.req = &fakeTokenGetter{err: errors.New("err")}
			tr, err := s.mgr.GetServiceAccountToken(ctx, "a", "b", tokenRequest())
			if err != nil {
				t.Fatal(err)
			}
			if tr.Status.Token != "foo" {
				t.Fatalf("unexpected token: %v", tr.Status.Token)
			}
		}},
		{"rotate fails after expiry: an error without the token", time.Hour, func(t *testing.T, s *suite) {
			s.clock.SetTime(s.clock.Now().Add(61 * time.Minute))
			s.mgr.req = &fakeTokenGetter{err: errors.New("api down")}
			_, err := s.mgr.GetServiceAccountToken(ctx, "a", "b", tokenRequest())
			want := "token " + tokenKey("b", "a", tokenRequest()) + " expired and refresh failed: api down"
			if err == nil || err.Error() != want {
				t.Fatalf("err = %v, want %s", err, want)
			}
			if strings.Contains(err.Error(), "foo\"") || strings.Contains(err.Error(), ":foo") {
				t.Errorf("token in error: %v", err)
			}
		}},
		{"service account recreated - cache miss due to different UID", time.Hour, func(t *testing.T, s *suite) {
			if _, err := s.mgr.GetServiceAccountToken(ctx, "a", "b", withUID("service-account-uid-1")); err != nil {
				t.Fatal(err)
			}
			if s.tg.count != 2 {
				t.Fatalf("call count was %d", s.tg.count)
			}
			if _, err := s.mgr.GetServiceAccountToken(ctx, "a", "b", withUID("service-account-uid-2")); err != nil {
				t.Fatal(err)
			}
			if s.tg.count != 3 {
				t.Fatalf("expected cache miss due to different service account UID: call count was %d", s.tg.count)
			}
		}},
		{"service account UID consistent - cache hit", time.Hour, func(t *testing.T, s *suite) {
			for range 2 {
				if _, err := s.mgr.GetServiceAccountToken(ctx, "a", "b", withUID("consistent-service-account-uid")); err != nil {
					t.Fatal(err)
				}
			}
			if s.tg.count != 2 {
				t.Fatalf("expected cache hit with same service account UID: call count was %d", s.tg.count)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := testingclock.NewFakeClock(time.Time{}.Add(30 * 24 * time.Hour))
			expSecs := int64(c.exp.Seconds())
			tg := &fakeTokenGetter{tr: &authenticationv1.TokenRequest{
				Spec:   authenticationv1.TokenRequestSpec{ExpirationSeconds: &expSecs},
				Status: authenticationv1.TokenRequestStatus{Token: "foo", ExpirationTimestamp: metav1.Time{Time: clock.Now().Add(c.exp)}},
			}}
			s := &suite{clock: clock, tg: tg, mgr: NewTokens(tg, WithTokenClock(clock))}
			for range 2 {
				if _, err := s.mgr.GetServiceAccountToken(ctx, "a", "b", tokenRequest()); err != nil {
					t.Fatal(err)
				}
				if s.tg.count != 1 {
					t.Fatalf("expected token to be served from cache: saw %d", s.tg.count)
				}
			}
			c.f(t, s)
		})
	}
}

// The first request failing is kubelet's "failed to fetch token".
func TestTokenFirstRequestFails(t *testing.T) {
	m := NewTokens(&fakeTokenGetter{err: errors.New("forbidden")})
	if _, err := m.GetServiceAccountToken(context.Background(), "a", "b", tokenRequest()); err == nil || err.Error() != "failed to fetch token: forbidden" {
		t.Fatalf("err = %v", err)
	}
	if _, err := NewTokens(nil).GetServiceAccountToken(context.Background(), "a", "b", tokenRequest()); !errors.Is(err, ErrNoTokenRequester) {
		t.Fatalf("nil requester: %v", err)
	}
}

// kubelet's TestRequiresRefresh (each case is clear of the 10 s jitter).
func TestRequiresRefresh(t *testing.T) {
	start := time.Now()
	cases := []struct {
		now, exp      time.Time
		expectRefresh bool
		noExpiration  bool
	}{
		{now: start.Add(10 * time.Minute), exp: start.Add(60 * time.Minute), expectRefresh: false},
		{now: start.Add(50 * time.Minute), exp: start.Add(60 * time.Minute), expectRefresh: true},
		{now: start.Add(25 * time.Hour), exp: start.Add(60 * time.Hour), expectRefresh: true},
		{now: start.Add(70 * time.Minute), exp: start.Add(60 * time.Minute), expectRefresh: true},
		{now: start, exp: start.Add(60 * time.Minute), expectRefresh: false, noExpiration: true},
		// 80% of the lifetime, with the jitter's margin on either side.
		{now: start.Add(48*time.Minute - 11*time.Second), exp: start.Add(60 * time.Minute), expectRefresh: false},
		{now: start.Add(48*time.Minute + time.Second), exp: start.Add(60 * time.Minute), expectRefresh: true},
		// 24 hours, long before 80% of a 100-hour token.
		{now: start.Add(24*time.Hour - 11*time.Second), exp: start.Add(100 * time.Hour), expectRefresh: false},
		{now: start.Add(24*time.Hour + time.Second), exp: start.Add(100 * time.Hour), expectRefresh: true},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			secs := int64(c.exp.Sub(start).Seconds())
			tr := &authenticationv1.TokenRequest{
				Spec:   authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs},
				Status: authenticationv1.TokenRequestStatus{ExpirationTimestamp: metav1.Time{Time: c.exp}},
			}
			if c.noExpiration {
				tr.Spec.ExpirationSeconds = nil
			}
			m := NewTokens(nil, WithTokenClock(testingclock.NewFakeClock(c.now)))
			for range 20 { // the jitter is random: it must not matter here
				if got := m.requiresRefresh(context.Background(), tr); got != c.expectRefresh {
					t.Fatalf("requiresRefresh = %v, want %v", got, c.expectRefresh)
				}
			}
		})
	}
}

// kubelet's TestDeleteServiceAccountToken.
func TestDeleteServiceAccountToken(t *testing.T) {
	type request struct {
		name, namespace string
		tr              authenticationv1.TokenRequest
		shouldFail      bool
	}
	req := func(i int, fail bool) request {
		n := fmt.Sprintf("fake-name-%d", i)
		return request{name: n, namespace: fmt.Sprintf("fake-namespace-%d", i), shouldFail: fail, tr: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{UID: types.UID(fmt.Sprintf("fake-uid-%d", i)), Name: n}}}}
	}
	requests := []request{req(1, false), req(2, false), req(3, false), req(4, true), req(4, false)}
	cases := []struct {
		name         string
		requestIndex []int
		deletePodUID []types.UID
		expLeftIndex []int
	}{
		{"delete none with all success requests", []int{0, 1, 2}, nil, []int{0, 1, 2}},
		{"delete one with all success requests", []int{0, 1, 2}, []types.UID{"fake-uid-1"}, []int{1, 2}},
		{"delete two with all success requests", []int{0, 1, 2}, []types.UID{"fake-uid-1", "fake-uid-3"}, []int{1}},
		{"delete all with all success requests", []int{0, 1, 2}, []types.UID{"fake-uid-1", "fake-uid-2", "fake-uid-3"}, nil},
		{"delete no pod with failed requests", []int{0, 1, 2, 3}, []types.UID{}, []int{0, 1, 2}},
		{"delete other pod with failed requests", []int{0, 1, 2, 3}, []types.UID{"fake-uid-2"}, []int{0, 2}},
		{"delete no pod with request which success after failure", []int{0, 1, 2, 3, 4}, []types.UID{}, []int{0, 1, 2, 4}},
		{"delete the pod which success after failure", []int{0, 1, 2, 3, 4}, []types.UID{"fake-uid-4"}, []int{0, 1, 2}},
		{"delete other pod with request which success after failure", []int{0, 1, 2, 3, 4}, []types.UID{"fake-uid-1"}, []int{1, 2, 4}},
		{"delete some pod not in the set", []int{0, 1, 2}, []types.UID{"fake-uid-100", "fake-uid-200"}, []int{0, 1, 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := testingclock.NewFakeClock(time.Time{}.Add(30 * 24 * time.Hour))
			m := NewTokens(nil, WithTokenClock(clock))
			for _, i := range c.requestIndex {
				r := requests[i]
				m.req = requesterFunc(func(_ context.Context, _, _ string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
					if r.shouldFail {
						return nil, errors.New("fail tr")
					}
					out := tr.DeepCopy()
					out.Status.ExpirationTimestamp = metav1.Time{Time: clock.Now().Add(10 * time.Hour)}
					return out, nil
				})
				_, _ = m.GetServiceAccountToken(context.Background(), r.namespace, r.name, &r.tr)
			}
			for _, uid := range c.deletePodUID {
				m.DeleteServiceAccountToken(uid)
			}
			if len(c.expLeftIndex) != len(m.cache) {
				t.Errorf("cache size %d, want %d", len(m.cache), len(c.expLeftIndex))
			}
			for _, i := range c.expLeftIndex {
				r := requests[i]
				if _, ok := m.get(tokenKey(r.name, r.namespace, &r.tr)); !ok {
					t.Errorf("token request %d not in cache", i)
				}
			}
		})
	}
}

// kubelet's TestCleanup (its case names are swapped: an expired token is
// dropped, a valid one kept).
func TestCleanup(t *testing.T) {
	for _, c := range []struct {
		name              string
		relativeExp       time.Duration
		expectedCacheSize int
	}{
		{"cleanup expired tokens", -time.Hour, 0},
		{"don't cleanup unexpired tokens", time.Hour, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := testingclock.NewFakeClock(time.Time{}.Add(24 * time.Hour))
			m := NewTokens(nil, WithTokenClock(clock))
			m.cache["key"] = &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{ExpirationTimestamp: metav1.Time{Time: clock.Now().Add(c.relativeExp)}}}
			m.Cleanup()
			if len(m.cache) != c.expectedCacheSize {
				t.Fatalf("cache size %d, want %d", len(m.cache), c.expectedCacheSize)
			}
		})
	}
}

// Run cleans up now and every minute of its clock, and returns when its
// context is done.
func TestTokensRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	clock := testingclock.NewFakeClock(time.Time{}.Add(24 * time.Hour))
	m := NewTokens(nil, WithTokenClock(clock))
	m.cache["a"] = &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{ExpirationTimestamp: metav1.Time{Time: clock.Now().Add(30 * time.Second)}}}
	ran := make(chan struct{})
	m.ranCleanup = func() { ran <- struct{}{} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	size := func() int {
		m.mu.RLock()
		defer m.mu.RUnlock()
		return len(m.cache)
	}
	<-ran
	if size() != 1 {
		t.Fatal("a valid token was dropped")
	}
	clock.Step(time.Minute)
	<-ran
	if size() != 0 {
		t.Fatal("an expired token was kept")
	}
	cancel()
	<-done
}

// kubelet's TestKeyFunc.
func TestKeyFunc(t *testing.T) {
	base := tokenRequest
	type unit struct {
		name, namespace string
		tr              *authenticationv1.TokenRequest
	}
	mod := func(f func(*authenticationv1.TokenRequest)) *authenticationv1.TokenRequest {
		tr := base()
		f(tr)
		return tr
	}
	cases := []struct {
		name      string
		trus      []unit
		target    unit
		shouldHit bool
	}{
		{"hit", []unit{{"foo-sa", "foo-ns", base()}, {"ame-sa", "ame-ns", mod(func(tr *authenticationv1.TokenRequest) {
			tr.Spec.Audiences = []string{"ame1", "ame2"}
			tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "pod", Name: "ame-pod", UID: "ame-uid"}
		})}}, unit{"foo-sa", "foo-ns", base()}, true},
		{"not hit due to different ExpirationSeconds", []unit{{"foo-sa", "foo-ns", base()}},
			unit{"foo-sa", "foo-ns", mod(func(tr *authenticationv1.TokenRequest) { tr.Spec.ExpirationSeconds = ptr.To[int64](2001) })}, false},
		{"not hit due to different BoundObjectRef", []unit{{"foo-sa", "foo-ns", base()}},
			unit{"foo-sa", "foo-ns", mod(func(tr *authenticationv1.TokenRequest) { tr.Spec.BoundObjectRef.Name = "diff-pod" })}, false},
		{"not hit due to different service account UID", []unit{{"foo-sa", "foo-ns", mod(func(tr *authenticationv1.TokenRequest) { tr.UID = "old-service-account-uid-123" })}},
			unit{"foo-sa", "foo-ns", mod(func(tr *authenticationv1.TokenRequest) { tr.UID = "new-service-account-uid-456" })}, false},
		{"hit with same service account UID", []unit{{"foo-sa", "foo-ns", mod(func(tr *authenticationv1.TokenRequest) { tr.UID = "same-uid" })}},
			unit{"foo-sa", "foo-ns", mod(func(tr *authenticationv1.TokenRequest) { tr.UID = "same-uid" })}, true},
		{"not hit due to different audiences", []unit{{"foo-sa", "foo-ns", base()}},
			unit{"foo-sa", "foo-ns", mod(func(tr *authenticationv1.TokenRequest) { tr.Spec.Audiences = []string{"foo1"} })}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			keys := map[string]bool{}
			for _, u := range c.trus {
				keys[tokenKey(u.name, u.namespace, u.tr)] = true
			}
			if hit := keys[tokenKey(c.target.name, c.target.namespace, c.target.tr)]; hit != c.shouldHit {
				t.Errorf("hit = %v, want %v", hit, c.shouldHit)
			}
		})
	}
	// The key's exact form, kubelet's (it appears in an error).
	want := `"foo-sa"/"foo-ns"/[]string{"foo1", "foo2"}/2000/v1.BoundObjectReference{Kind:"pod", APIVersion:"", Name:"foo-pod", UID:"foo-uid"}/""`
	if got := tokenKey("foo-sa", "foo-ns", base()); got != want {
		t.Errorf("key %s\nwant %s", got, want)
	}
}
