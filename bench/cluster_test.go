package main

import (
	"strings"
	"testing"
	"time"
)

func TestCountAudit(t *testing.T) {
	t.Parallel()
	log := `{"stage":"RequestReceived","verb":"patch","requestURI":"/api/v1/namespaces/default/pods/a/status","user":{"username":"system:node:n1"},"objectRef":{"resource":"pods","subresource":"status"},"requestReceivedTimestamp":"2026-12-02T10:00:01.000000Z"}
{"stage":"RequestReceived","verb":"patch","requestURI":"/api/v1/namespaces/default/pods/b/status","user":{"username":"system:node:n1"},"objectRef":{"resource":"pods","subresource":"status"},"requestReceivedTimestamp":"2026-12-02T10:00:02.000000Z"}
{"stage":"RequestReceived","verb":"update","requestURI":"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2","user":{"username":"system:node:n2"},"objectRef":{"resource":"leases"},"requestReceivedTimestamp":"2026-12-02T10:00:02.000000Z"}
{"stage":"ResponseComplete","verb":"update","requestURI":"/x","user":{"username":"system:node:n1"},"objectRef":{"resource":"leases"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-12-02T10:00:02.000000Z"}
{"stage":"ResponseComplete","verb":"create","requestURI":"/y","user":{"username":"system:node:n1"},"objectRef":{"resource":"serviceaccounts","subresource":"token"},"responseStatus":{"code":403},"requestReceivedTimestamp":"2026-12-02T10:00:02.000000Z"}
{"stage":"RequestReceived","verb":"get","requestURI":"/api?timeout=32s","user":{"username":"system:node:n1"},"requestReceivedTimestamp":"2026-12-02T10:00:03.000000Z"}
{"stage":"RequestReceived","verb":"watch","requestURI":"/api/v1/pods?watch=1","user":{"username":"system:node:n1"},"objectRef":{"resource":"pods"},"requestReceivedTimestamp":"2026-12-02T10:00:09.000000Z"}
`
	from := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	got, failed, err := countAudit(strings.NewReader(log), "system:node:n1", from, from.Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"patch pods/status": 2, "get /api": 1}
	if len(got) != len(want) || got["patch pods/status"] != 2 || got["get /api"] != 1 {
		t.Errorf("countAudit = %v, want %v", got, want)
	}
	if len(failed) != 1 || failed["create serviceaccounts/token 403"] != 1 {
		t.Errorf("failed = %v, want the token request's 403 alone", failed)
	}
	if _, _, err := countAudit(strings.NewReader("not json\n"), "u", from, from); err == nil {
		t.Error("a line that is not JSON: no error")
	}
}

func TestReadTracesAndSummarize(t *testing.T) {
	t.Parallel()
	out := `File: nodeagent
Type: cpu
-----------+-------------------------------------------------------
      20ms   runtime.futex
             runtime.notesleep
             github.com/podstart/podstart/podworker.(*Workers).relist
-----------+-------------------------------------------------------
      1.5s   encoding/json.(*decodeState).object (inline)
             github.com/podstart/podstart/podworker.(*Workers).sync.func1
             github.com/podstart/podstart/podworker.(*Workers).loop
-----------+-------------------------------------------------------
`
	stacks, err := readTraces(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(stacks) != 2 || stacks[0].ms != 20 || stacks[1].ms != 1500 || len(stacks[1].frames) != 3 || stacks[1].frames[0] != "encoding/json.(*decodeState).object" {
		t.Fatalf("readTraces = %+v", stacks)
	}
	s := summarize(stacks)
	if s.totalMs != 1520 || s.flatPkg["runtime"] != 20 || s.flatPkg["encoding/json"] != 1500 {
		t.Errorf("flat = %v, total %v", s.flatPkg, s.totalMs)
	}
	// Counted once per sample, however many of its frames are the package's.
	if s.cumPkg["github.com/podstart/podstart/podworker"] != 1520 || s.cumPkg["runtime"] != 20 {
		t.Errorf("cum = %v", s.cumPkg)
	}
	if l := top(s.cumPkg, s.totalMs, 1); len(l) != 1 || !strings.Contains(l[0], " podworker") {
		t.Errorf("top = %q", l)
	}
}

func TestParseMs(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]float64{"10ms": 10, "1.20s": 1200, "1.5mins": 90000, "500us": 0.5} {
		if got, err := parseMs(in); err != nil || got != want {
			t.Errorf("parseMs(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"10", "xs", ""} {
		if _, err := parseMs(bad); err == nil {
			t.Errorf("parseMs(%q): no error", bad)
		}
	}
}

func TestFuncPackage(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"github.com/podstart/podstart/podworker.(*Workers).sync.func1": "github.com/podstart/podstart/podworker",
		"runtime.mallocgc": "runtime",
		"k8s.io/client-go/tools/cache.(*Reflector).ListAndWatch": "k8s.io/client-go/tools/cache",
		"gopkg.in/yaml%2ev3.unmarshal":                           "gopkg.in/yaml%2ev3",
		"nodot":                                                  "nodot",
	} {
		if got := funcPackage(in); got != want {
			t.Errorf("funcPackage(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDefaultKubeletYAML(t *testing.T) {
	t.Parallel()
	y := defaultKubeletYAML("unix:///x.sock", "/logs", "/podstart-bench-agent-kubelet", 5431, 5433, true)
	for _, want := range []string{"containerRuntimeEndpoint: unix:///x.sock\n", "podLogsDir: /logs\n", "cgroupRoot: /podstart-bench-agent-kubelet\n",
		"port: 5431\n", "healthzPort: 5433\n", "maxPods: 1000\n", "failCgroupV1: false\n"} {
		if !strings.Contains(y, want) {
			t.Errorf("kubelet.yaml lacks %q:\n%s", want, y)
		}
	}
	// Kubelet's defaults otherwise: nothing of the standalone recipe.
	for _, not := range []string{"anonymous", "AlwaysAllow", "imageGC", "localStorageCapacityIsolation", "containerLogMaxSize", "failSwapOn", "cgroupsPerQOS"} {
		if strings.Contains(y, not) {
			t.Errorf("kubelet.yaml sets %s:\n%s", not, y)
		}
	}
	if y := defaultKubeletYAML("unix:///x", "/l", "/r", 1, 2, false); strings.Contains(y, "failCgroupV1") {
		t.Errorf("cgroup v2: failCgroupV1 set:\n%s", y)
	}
}

func TestRSSParts(t *testing.T) {
	t.Parallel()
	got := rssParts("Name:\tx\nVmRSS:\t  100 kB\nRssAnon:\t   60 kB\nRssFile:\t   40 kB\nRssShmem:\t    0 kB\n")
	if got != "RssAnon 60 kB, RssFile 40 kB, RssShmem 0 kB" {
		t.Errorf("rssParts = %q", got)
	}
}

func TestPrintClusterRatios(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	printClusterRatios(&b, []sideResult{
		{side: "kubelet", n: 100, cpuPerMin: 2, rssMiB: 100, burstCPU: 4, burstAPI: map[string]float64{"patch pods/status": 200}, apiPerMin: map[string]float64{"update leases": 6}},
		{side: "podstart", n: 100, cpuPerMin: 0.2, rssMiB: 50, burstCPU: 1, burstAPI: map[string]float64{"patch pods/status": 100}, apiPerMin: map[string]float64{"update leases": 6}},
		{side: "kubelet", n: 250, cpuPerMin: 2}, // no podstart run: no line
	})
	out := b.String()
	for _, want := range []string{"2.000 / 0.200 = 0.100", "100.0 / 50.0 = 0.500", "40.0 / 10.0 = 0.250", "2.00 / 1.00 = 0.500", "6.0 / 6.0 = 1.000"} {
		if !strings.Contains(out, want) {
			t.Errorf("ratios lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "  250 |") {
		t.Errorf("a line for N without both sides:\n%s", out)
	}
}
