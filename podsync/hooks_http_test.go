package podsync_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podstart/podstart/podsync"
)

// hookServer records the requests an HTTP hook makes.
type hookServer struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (s *hookServer) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...)
}

// TestHTTPLifecycleHook ports kubelet v1.37.2's lifecycle handler tests
// (TestRunHandlerHttp, ...WithHeaders, TestRunHandlerHTTPPort,
// TestRunHTTPHandler, TestRunHandlerHttpFailure,
// TestRunHandlerHttpsFailureFallback) onto a post-start hook run by
// SyncPod against a real HTTP server.
func TestHTTPLifecycleHook(t *testing.T) {
	rec := &hookServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, r.Clone(r.Context()))
		rec.mu.Unlock()
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	_, portText, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portText)

	closed := httptest.NewServer(http.NotFoundHandler())
	_, closedPortText, _ := net.SplitHostPort(closed.Listener.Addr().String())
	closedPort, _ := strconv.Atoi(closedPortText)
	closed.Close()

	tests := []struct {
		name     string
		get      corev1.HTTPGetAction
		ports    []corev1.ContainerPort
		wantErr  string // in the hook's message; "" for success
		wantReqs int
		wantPath string
		wantUA   string
		wantHdr  map[string]string // headers on the last request ("" for absent)
		wantEv   string
	}{
		{
			name:     "path without a leading slash, kubelet's User-Agent and Accept",
			get:      corev1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromInt(port), Path: "bar"},
			wantReqs: 1, wantPath: "/bar", wantUA: "kube-lifecycle/1.37",
			wantHdr: map[string]string{"Accept": "*/*"},
		},
		{
			name: "the hook's headers; its own User-Agent kept",
			get: corev1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromInt(port), Path: "/bar",
				HTTPHeaders: []corev1.HTTPHeader{{Name: "Foo", Value: "bar"}, {Name: "User-Agent", Value: "mine"}}},
			wantReqs: 1, wantPath: "/bar", wantUA: "mine",
			wantHdr: map[string]string{"Foo": "bar"},
		},
		{
			name:     "a named port resolves to the container's port",
			get:      corev1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromString("quux"), Path: "foo"},
			ports:    []corev1.ContainerPort{{Name: "quux", ContainerPort: int32(port)}},
			wantReqs: 1, wantPath: "/foo", wantUA: "kube-lifecycle/1.37",
		},
		{
			// A numeric string ("8080") is refused by validation before
			// it gets here; kubelet v1.37 dropped its numeric fallback.
			name:    "a name the container's ports lack",
			get:     corev1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromString("web"), Path: "bar"},
			ports:   []corev1.ContainerPort{{Name: "quux", ContainerPort: int32(port)}},
			wantErr: `HTTP lifecycle hook (bar) for Container "app" in Pod "hook_shop(uid-hook)" failed - error: port "web" not found`,
		},
		{
			name:     "an error status is no failure: kubelet does not look at it",
			get:      corev1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromInt(port), Path: "fail"},
			wantReqs: 1, wantPath: "/fail", wantUA: "kube-lifecycle/1.37",
		},
		{
			name:    "no answer fails the hook",
			get:     corev1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromInt(closedPort), Path: "bar"},
			wantErr: `HTTP lifecycle hook (bar) for Container "app" in Pod "hook_shop(uid-hook)" failed - error: Get "http://127.0.0.1:` + closedPortText + `/bar"`,
		},
		{
			name: "HTTPS answered in HTTP: asked again in HTTP, without Authorization, and an event",
			get: corev1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromInt(port), Path: "bar", Scheme: corev1.URISchemeHTTPS,
				HTTPHeaders: []corev1.HTTPHeader{{Name: "Authorization", Value: "secret"}}},
			wantReqs: 1, wantPath: "/bar", wantUA: "kube-lifecycle/1.37",
			wantHdr: map[string]string{"Authorization": ""},
			wantEv:  "LifecycleHTTPFallback: request to HTTPS lifecycle hook 127.0.0.1:" + portText + " got HTTP response, retry with HTTP succeeded",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec.mu.Lock()
			rec.reqs = nil
			rec.mu.Unlock()
			h := newHarness(t, false, nil)
			get := tt.get
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: "shop", UID: "uid-hook"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1", Ports: tt.ports,
					Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{HTTPGet: &get}}}}},
			}
			r := h.sync(pod)
			var failed *podsync.SyncResult
			for _, sr := range r.Results {
				if sr.Err != nil {
					failed = sr
				}
			}
			if tt.wantErr == "" && failed != nil {
				t.Fatalf("hook failed: %+v", failed)
			}
			if tt.wantErr != "" && failed == nil {
				t.Logf("results: %v; sync error %v", r.Error(), r.SyncError)
			}
			if tt.wantErr != "" && (failed == nil || !errors.Is(failed.Err, podsync.ErrPostStartHook) || !strings.Contains(failed.Message, tt.wantErr)) {
				t.Fatalf("result %+v, want a PostStartHookError with %q", failed, tt.wantErr)
			}
			reqs := rec.requests()
			if len(reqs) != tt.wantReqs {
				t.Fatalf("%d requests, want %d", len(reqs), tt.wantReqs)
			}
			if len(reqs) > 0 {
				last := reqs[len(reqs)-1]
				if last.URL.Path != tt.wantPath || last.UserAgent() != tt.wantUA {
					t.Errorf("request %s with User-Agent %q, want %s and %q", last.URL.Path, last.UserAgent(), tt.wantPath, tt.wantUA)
				}
				for k, v := range tt.wantHdr {
					if got := last.Header.Get(k); got != v {
						t.Errorf("header %s = %q, want %q", k, got, v)
					}
				}
			}
			if tt.wantEv != "" && !h.ev.has(tt.wantEv) {
				t.Errorf("events %q, want %q", h.ev.list, tt.wantEv)
			}
			if tt.wantEv == "" && h.ev.has("LifecycleHTTPFallback") {
				t.Errorf("unexpected fallback event: %q", h.ev.list)
			}
		})
	}
}

// A sleep hook cut short fails with kubelet's text, and its error still
// matches the context's (kubelet's runSleepHandler).
func TestSleepHookInterrupted(t *testing.T) {
	h := newHarness(t, false, nil)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: "shop", UID: "uid-hook"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1",
			Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 30}}}}}},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := h.syncer.Status(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan podsync.Result)
	go func() { done <- h.syncer.SyncPod(ctx, pod, st, nil) }()
	for !h.clk.HasWaiters() { // the hook's timer is armed
		goruntime.Gosched()
	}
	cancel()
	r := <-done
	var failed *podsync.SyncResult
	for _, sr := range r.Results {
		if sr.Err != nil && errors.Is(sr.Err, podsync.ErrPostStartHook) {
			failed = sr
		}
	}
	want := `Sleep lifecycle hook (30) for Container "app" in Pod "hook_shop(uid-hook)" failed - error: container terminated before sleep hook finished`
	if failed == nil || !strings.Contains(failed.Message, want) || !errors.Is(failed.Err, context.Canceled) {
		t.Fatalf("result %+v, want %q matching context.Canceled", failed, want)
	}
}

// The default client is kubelet's insecureContainerLifecycleHTTPClient: an
// HTTPS hook is not refused for a certificate nobody can verify (the
// container's own), and a redirect to another host is not followed.
func TestHTTPSLifecycleHookDefaultClient(t *testing.T) {
	var elsewhere hookServer
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.mu.Lock()
		elsewhere.reqs = append(elsewhere.reqs, r)
		elsewhere.mu.Unlock()
	}))
	defer other.Close()
	_, otherPort, _ := net.SplitHostPort(other.Listener.Addr().String())
	var rec hookServer
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, r.Clone(r.Context()))
		rec.mu.Unlock()
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "http://localhost:"+otherPort+"/there", http.StatusFound)
		}
	}))
	defer srv.Close()
	_, portText, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portText)
	for _, path := range []string{"here", "moved"} {
		h := newHarness(t, false, nil)
		get := corev1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromInt(port), Path: path, Scheme: corev1.URISchemeHTTPS}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "hook-" + path, Namespace: "shop", UID: types.UID("uid-hook-" + path)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1",
				Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{HTTPGet: &get}}}}},
		}
		r := h.sync(pod)
		for _, sr := range r.Results {
			if sr.Err != nil {
				t.Fatalf("%s: %s failed: %v (%s)", path, sr.Action, sr.Err, sr.Message)
			}
		}
		if h.ev.has("LifecycleHTTPFallback") {
			t.Errorf("%s: fell back to HTTP: %q", path, h.ev.list)
		}
	}
	if n := len(rec.requests()); n != 2 {
		t.Errorf("%d HTTPS requests, want 2", n)
	}
	if n := len(elsewhere.requests()); n != 0 {
		t.Errorf("the redirect to another host was followed (%d requests)", n)
	}
}
