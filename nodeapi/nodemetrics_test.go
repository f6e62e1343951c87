package nodeapi

import (
	"net/http"
	"testing"

	"github.com/podstart/podstart/runtime/fake"
)

// /metrics, /metrics/probes and /metrics/cadvisor are served by the
// handlers Config gives, to users allowed nodes/metrics only; without a
// handler the path is not found.
func TestNodeMetricsRoutes(t *testing.T) {
	rv := &reviewer{
		tokens:  map[string]string{"prom-token": "prometheus", "bob-token": "bob"},
		allowed: map[string]map[string]bool{"prometheus": {"metrics": true}, "bob": {"stats": true}},
	}
	text := func(body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) })
	}
	s := newServer(t, Config{Pods: staticPods{}, Runtime: fake.New(), NodeMetrics: text("node"), ProbeMetrics: text("probes"),
		CadvisorMetrics: text("cadvisor")}, rv)
	for path, want := range map[string]string{"/metrics": "node", "/metrics/probes": "probes", "/metrics/cadvisor": "cadvisor"} {
		if code, body := get(t, s, path, "prom-token"); code != 200 || body != want {
			t.Errorf("GET %s: %d %q, want 200 %q", path, code, body, want)
		}
		if code, body := get(t, s, path, "bob-token"); code != 403 || body != "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[metrics])\n" {
			t.Errorf("GET %s as bob: %d %q", path, code, body)
		}
	}
	bare := newServer(t, Config{Pods: staticPods{}, Runtime: fake.New()}, rv)
	if code, _ := get(t, bare, "/metrics/cadvisor", "prom-token"); code != 404 {
		t.Errorf("without a handler: %d, want 404", code)
	}
}
