package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// The agent's API requests in the burst tier: each request its client
// sends (a wrapped transport: verb, resource, when, how long), and how
// long client-go's rate limiter held each request of the test process
// (client-go's metrics hook: the agent's client is the only one of the
// process with a limit that binds, kubelet's kubeAPIQPS 50 and burst 100;
// the test's own has 10,000).

// apiRequest is one request the agent's client sent.
type apiRequest struct {
	verb, resource string
	start          time.Time
	took           time.Duration
}

// apiRecorder records the agent's requests and the rate limiter's waits.
type apiRecorder struct {
	mu       sync.Mutex
	requests []apiRequest
	waits    []apiWait
}

// apiWait is how long the rate limiter held one request, and when it let
// it go.
type apiWait struct {
	at   time.Time
	wait time.Duration
}

var (
	registerClientMetrics sync.Once
	clientWaits           *apiRecorder // where the hook's waits go
	clientWaitsMu         sync.Mutex
)

// burstAgentClient is the agent's client (clientFor's, kubelet's rate
// limits) with its requests recorded into r, and client-go's rate
// limiter waits too.
func burstAgentClient(t *testing.T, kubeconfig string, r *apiRecorder) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := rest.LoadTLSFiles(cfg); err != nil {
		t.Fatal(err)
	}
	cfg.CertFile, cfg.KeyFile, cfg.CAFile = "", "", ""
	setKubeletRateLimits(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return recordingTransport{rt, r} }
	registerClientMetrics.Do(func() {
		clientmetrics.Register(clientmetrics.RegisterOpts{RateLimiterLatency: waitObserver{}})
	})
	clientWaitsMu.Lock()
	clientWaits = r
	clientWaitsMu.Unlock()
	t.Cleanup(func() {
		clientWaitsMu.Lock()
		clientWaits = nil
		clientWaitsMu.Unlock()
	})
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type recordingTransport struct {
	rt http.RoundTripper
	r  *apiRecorder
}

func (t recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.rt.RoundTrip(req)
	verb := req.Method
	if req.URL.Query().Get("watch") == "true" {
		verb = "WATCH"
	}
	t.r.mu.Lock()
	t.r.requests = append(t.r.requests, apiRequest{verb: verb, resource: apiResource(req.URL.Path), start: start, took: time.Since(start)})
	t.r.mu.Unlock()
	return resp, err
}

// waitObserver is client-go's RateLimiterLatency hook.
type waitObserver struct{}

func (waitObserver) Observe(_ context.Context, _ string, _ url.URL, latency time.Duration) {
	clientWaitsMu.Lock()
	r := clientWaits
	clientWaitsMu.Unlock()
	if r == nil {
		return
	}
	r.mu.Lock()
	r.waits = append(r.waits, apiWait{at: time.Now(), wait: latency})
	r.mu.Unlock()
}

// apiResource is a request path's resource and subresource
// ("pods/status", "events", "serviceaccounts/token", "leases").
func apiResource(path string) string {
	seg := strings.Split(strings.Trim(path, "/"), "/")
	// /api/v1/... or /apis/group/version/...
	i := 2
	if len(seg) > 0 && seg[0] == "apis" {
		i = 3
	}
	if len(seg) > i+1 && seg[i] == "namespaces" {
		if len(seg) == i+2 {
			return "namespaces"
		}
		i += 2
	}
	if i >= len(seg) {
		return path
	}
	if len(seg) > i+2 {
		return seg[i] + "/" + seg[i+2]
	}
	return seg[i]
}

// window is the requests that started between from and to, counted by
// verb and resource, and the rate limiter's waits that ended then.
func (r *apiRecorder) window(from, to time.Time) (counts map[string]int, waits []time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	counts = map[string]int{}
	for _, q := range r.requests {
		if !q.start.Before(from) && !q.start.After(to) {
			counts[q.verb+" "+q.resource]++
		}
	}
	for _, w := range r.waits {
		if !w.at.Before(from) && !w.at.After(to) {
			waits = append(waits, w.wait)
		}
	}
	return counts, waits
}

// logAPI prints the agent's API requests of the burst by verb and
// resource, per pod, and how long the rate limiter held them.
func (r *burstResult) logAPI(t *testing.T, rec *apiRecorder) {
	t.Helper()
	counts, waits := rec.window(r.t0, r.last)
	tailCounts, _ := rec.window(r.last.Add(time.Nanosecond), r.last.Add(r.tailFor))
	var b strings.Builder
	fmt.Fprintf(&b, "burst %s, the agent's API requests (first create → last Ready; the %v after):\n", r.label, r.tailFor)
	fmt.Fprintf(&b, "  %-36s %8s %8s %8s\n", "request", "count", "per pod", "after")
	total := 0
	for _, k := range sortedKeys(counts, tailCounts) {
		fmt.Fprintf(&b, "  %-36s %8d %8.2f %8d\n", k, counts[k], float64(counts[k])/float64(r.n), tailCounts[k])
		total += counts[k]
	}
	fmt.Fprintf(&b, "  %-36s %8d %8.2f\n", "all", total, float64(total)/float64(r.n))
	d := distOf(waits)
	var sum time.Duration
	held := 0
	for _, w := range waits {
		sum += w
		if w > 10*time.Millisecond {
			held++
		}
	}
	fmt.Fprintf(&b, "  client-go's rate limiter (kubeAPIQPS 50, burst 100): %d requests, %d held over 10 ms; wait p50 %v, p90 %v, p99 %v, max %v, sum %v",
		d.n, held, d.p50.Round(time.Millisecond), d.p90.Round(time.Millisecond), d.p99.Round(time.Millisecond), d.max.Round(time.Millisecond), sum.Round(time.Millisecond))
	t.Log(b.String())
}

var throttled = regexp.MustCompile(`"Waited before sending request" delay="([^"]+)".* verb="([A-Z]+)"`)

// kubeletThrottles reads kubelet's log for client-go's "Waited before
// sending request" lines between from and to: at -v=2 client-go logs a
// wait over 1 s, at most once a second (at -v=3, every wait over 50 ms).
func kubeletThrottles(path string, from, to time.Time) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	n, top, verbs := 0, time.Duration(0), map[string]int{}
	for sc.Scan() {
		line := sc.Text()
		m := throttled.FindStringSubmatch(line)
		h := klogHeader.FindStringSubmatch(line)
		if m == nil || h == nil {
			continue
		}
		at, err := time.ParseInLocation("0102 15:04:05.000000", h[1], time.Local)
		if err != nil {
			continue
		}
		at = at.AddDate(from.Year(), 0, 0)
		if at.Before(from) || at.After(to) {
			continue
		}
		d, err := time.ParseDuration(m[1])
		if err != nil {
			continue
		}
		n++
		top = max(top, d)
		verbs[m[2]]++
	}
	return fmt.Sprintf("%d logged (the longest %v; by verb %v)", n, top.Round(time.Millisecond), verbs)
}
