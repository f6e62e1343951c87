package nodeapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mountsfake "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podstep"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// TestRouteMethods: each route answers a method it does not have as
// kubelet v1.37.2's go-restful routes do (405, "405: Method Not
// Allowed", the route's methods in Allow) without running its handler:
// a HEAD is no GET. Before, HEAD ran the GET handlers (exec,
// containerLogs, portForward, ...) with an empty verb. healthz and
// /metrics/resource are plain handlers in kubelet and serve HEAD.
func TestRouteMethods(t *testing.T) {
	rt := fake.New(fake.WithImages("busybox:1.35"))
	dir := t.TempDir()
	syncer := podsync.NewSyncer(rt, nil, podsync.WithRootDir(dir), podsync.WithPodLogsDir(dir+"/logs"), podsync.WithMounter(mountsfake.New()))
	p, err := podstep.New(syncer, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1.35"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, _ = p.Sync(context.Background())
	}
	reads := 0
	s := newServer(t, Config{Insecure: true, Pods: staticPods{p.Pod()}, Runtime: rt,
		Logs: func(context.Context, string, string, *corev1.PodLogOptions, io.Writer, io.Writer) error {
			reads++
			return nil
		}}, nil)
	for _, tc := range []struct {
		method, path, allow string
	}{
		{"HEAD", "/pods", "GET"},
		{"HEAD", "/pods/", "GET"},
		{"HEAD", "/runningpods/", "GET"},
		{"HEAD", "/stats/summary", "GET, POST"},
		{"HEAD", "/containerLogs/shop/web/app", "GET"},
		{"HEAD", "/exec/shop/web/app?command=ls&output=1", "GET, POST"},
		{"HEAD", "/exec/shop/web/uid-web/app?command=ls&output=1", "GET, POST"},
		{"HEAD", "/attach/shop/web/app?output=1", "GET, POST"},
		{"HEAD", "/attach/shop/web/uid-web/app?output=1", "GET, POST"},
		{"HEAD", "/portForward/shop/web", "GET, POST"},
		{"HEAD", "/portForward/shop/web/uid-web", "GET, POST"},
		{"HEAD", "/run/shop/web/app?cmd=ls", "POST"},
		{"HEAD", "/run/shop/web/uid-web/app?cmd=ls", "POST"},
		{"GET", "/run/shop/web/app?cmd=ls", "POST"},
		{"PUT", "/exec/shop/web/app?command=ls&output=1", "GET, POST"},
		{"DELETE", "/containerLogs/shop/web/app", "GET"},
		{"POST", "/pods", "GET"},
	} {
		rt.ResetCalls()
		r := httptest.NewRequest(tc.method, tc.path, nil)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != tc.allow || w.Body.String() != "405: Method Not Allowed" {
			t.Errorf("%s %s = %d, Allow %q, %q; want 405, Allow %q, kubelet's body", tc.method, tc.path, w.Code, w.Header().Get("Allow"), w.Body.String(), tc.allow)
		}
		if calls := rt.Calls(); len(calls) > 0 {
			t.Errorf("%s %s called the runtime: %v", tc.method, tc.path, calls)
		}
	}
	if reads > 0 {
		t.Errorf("a HEAD read %d logs", reads)
	}
	for _, path := range []string{"/healthz", "/healthz/ping", "/metrics/resource"} {
		r := httptest.NewRequest(http.MethodHead, path, nil)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code == http.StatusMethodNotAllowed {
			t.Errorf("HEAD %s = 405; kubelet serves it", path)
		}
	}
}
