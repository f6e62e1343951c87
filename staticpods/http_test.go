package staticpods

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// server serves body (and status) as set by the test, recording the
// header it got.
type server struct {
	mu     sync.Mutex
	status int
	body   string
	header http.Header
}

func (s *server) set(status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.body = status, body
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.header = r.Header.Clone()
	w.WriteHeader(s.status)
	w.Write([]byte(s.body))
}

func TestURLSource(t *testing.T) {
	srv := &server{}
	srv.set(http.StatusOK, manifest("a", "nginx"))
	ts := httptest.NewServer(srv)
	defer ts.Close()
	clk := clocktesting.NewFakeClock(time.Now())
	polls := make(chan struct{}, 100)
	refusals := make(chan Refusal, 100)
	h := http.Header{"X-Token": []string{"t"}}
	s, err := NewURLSource(ts.URL, h, "n", WithClock(clk),
		WithOnRefused(func(r Refusal) { refusals <- r }),
		func(o *options) { o.listed = func() { polls <- struct{}{} } })
	if err != nil {
		t.Fatal(err)
	}
	out, _ := runSource(t, s.Run)
	poll := func() {
		t.Helper()
		<-polls
		clk.Step(DefaultHTTPCheckFrequency)
	}

	u := next(t, out)
	if u.Op != OpAdd || podNames(u.Pods) != "a-n" || u.Pods[0].Annotations[ConfigSourceAnnotation] != "http" {
		t.Fatalf("first: %v %s %v", u.Op, podNames(u.Pods), u.Pods[0].Annotations)
	}
	if len(u.Pods[0].Spec.Tolerations) != 0 {
		t.Errorf("HTTP pod has tolerations %v", u.Pods[0].Spec.Tolerations)
	}
	srv.mu.Lock()
	if srv.header.Get("X-Token") != "t" {
		t.Errorf("header not sent: %v", srv.header)
	}
	srv.mu.Unlock()

	// Not 200: the pods stay, the poll is refused.
	srv.set(http.StatusInternalServerError, "")
	poll()
	if r := <-refusals; !errors.Is(r, ErrHTTP) || !strings.Contains(r.Error(), "500") {
		t.Errorf("500: %v", r)
	}
	// A PodList replaces the pod.
	srv.set(http.StatusOK, `{"apiVersion":"v1","kind":"PodList","items":[{"metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}]}`)
	poll()
	if u := next(t, out); u.Op != OpRemove || podNames(u.Pods) != "a-n" {
		t.Fatalf("list: %v %s", u.Op, podNames(u.Pods))
	}
	if u := next(t, out); u.Op != OpAdd || podNames(u.Pods) != "b-n" {
		t.Fatalf("list: %v %s", u.Op, podNames(u.Pods))
	}
	// A bad body: refused, without its contents in the error; pods stay.
	srv.set(http.StatusOK, "secret-token-in-body: [")
	poll()
	if r := <-refusals; !errors.Is(r, ErrInvalidManifest) || strings.Contains(r.Error(), "secret-token") {
		t.Errorf("bad body: %v", r)
	}
	// An empty body removes every pod.
	srv.set(http.StatusOK, "")
	poll()
	if u := next(t, out); u.Op != OpRemove || podNames(u.Pods) != "b-n" {
		t.Fatalf("empty body: %v %s", u.Op, podNames(u.Pods))
	}
}

func TestURLSourceRedactsPassword(t *testing.T) {
	s, err := NewURLSource("http://user:hunter2@127.0.0.1:1/pods", nil, "n")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.loc, "hunter2") {
		t.Errorf("location %q", s.loc)
	}
	if _, err := NewURLSource("", nil, "n"); !errors.Is(err, ErrBadConfig) {
		t.Errorf("empty URL: %v", err)
	}
}
