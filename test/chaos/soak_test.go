//go:build chaos

package chaos

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/test/criproxy"
)

var (
	soakFlag   = flag.Duration("chaos.soak", 0, "TestSoak: how long the churn runs (0: TestSoak skips; the issue's soak is 1h)")
	soakLife   = flag.Duration("chaos.soak-life", 30*time.Second, "TestSoak: how long each pod lives before its delete")
	soakEvery  = flag.Duration("chaos.soak-interval", time.Second, "TestSoak: time between two pod creations")
	soakSample = flag.Duration("chaos.soak-sample", 5*time.Minute, "TestSoak: time between two samples")
	soakPprof  = flag.String("chaos.soak-pprof", "127.0.0.1:10395", "TestSoak: the loopback address where the agent serves /debug/pprof (PODSTART_PPROF_ADDR)")
)

// Pod lifecycle CRI methods: the calls a pod costs, whatever the time.
var lifecycleMethods = []string{
	"RunPodSandbox", "PodSandboxStatus", "StopPodSandbox", "RemovePodSandbox",
	"CreateContainer", "StartContainer", "ContainerStatus", "StopContainer", "RemoveContainer",
	"ImageStatus", "PullImage", "ExecSync",
}

// soakSampleRow is one sample of the soak.
type soakSampleRow struct {
	at                  time.Duration // since the churn began
	rssKiB, fds, gorout int
	live, created       int     // pods the API server holds; pods created since the last sample
	perPod, lifePerPod  float64 // CRI calls since the last sample per pod created, all and lifecycle ones
}

// TestSoak is the soak, on demand (-chaos.soak=1h): one node, a
// pod created every -chaos.soak-interval and deleted after
// -chaos.soak-life, no faults; every -chaos.soak-sample the agent's RSS,
// open files and goroutines, and the CRI calls per pod created since the
// last sample (test/criproxy, counting). The goroutines at the end must
// not exceed 1.25 × the first sample's + 50; leftovers 0 at the end.
func TestSoak(t *testing.T) {
	if *soakFlag <= 0 {
		t.Skip("the soak runs on demand: -chaos.soak=1h (see README.md)")
	}
	e := chaosEnv(t)
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("soak seed %d: %v of churn, a pod every %v living %v, samples every %v", seed, *soakFlag, *soakEvery, *soakLife, *soakSample)
	var proxy *criproxy.Proxy
	r := newRun(t, e, seed, setup{
		proxy: func(socket string) (string, error) {
			p, err := criproxy.Start(socket, e.endpoint, criproxy.CountOnly())
			if err != nil {
				return "", err
			}
			proxy = p
			t.Cleanup(func() { p.Close() })
			return p.Endpoint(), nil
		},
		env: []string{"PODSTART_PPROF_ADDR=" + *soakPprof},
	})
	tsv := filepath.Join(e.dir, fmt.Sprintf("soak-%d.tsv", seed))
	out, err := os.Create(tsv)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	fmt.Fprintln(out, "minute\trss_kib\topen_files\tgoroutines\tlive_pods\tpods_created\tcri_calls_per_pod\tlifecycle_cri_calls_per_pod")

	var rows []soakSampleRow
	lastCounts, lastCreated := proxy.Counts(), 0
	begin := time.Now()
	sample := func() {
		counts := proxy.Counts()
		created := len(r.created) - lastCreated
		all, life := 0, 0
		var byMethod []string
		for m, n := range counts {
			d := n - lastCounts[m]
			all += d
			if d > 0 && created > 0 {
				byMethod = append(byMethod, fmt.Sprintf("%s %.1f", m[strings.LastIndexByte(m, '/')+1:], float64(d)/float64(created)))
			}
			for _, l := range lifecycleMethods {
				if strings.HasSuffix(m, "/"+l) {
					life += d
				}
			}
		}
		pods, err := r.apiPods()
		if err != nil {
			t.Logf("sample: %v", err)
		}
		row := soakSampleRow{at: time.Since(begin), live: len(pods), created: created}
		row.rssKiB, row.fds = procStats(t, r.agent.pid())
		row.gorout = goroutines(t, *soakPprof)
		if created > 0 {
			row.perPod, row.lifePerPod = float64(all)/float64(created), float64(life)/float64(created)
		}
		rows = append(rows, row)
		lastCounts, lastCreated = counts, len(r.created)
		sort.Strings(byMethod)
		t.Logf("soak sample at %v: RSS %d KiB, open files %d, goroutines %d, live pods %d, pods created %d, CRI calls per pod %.1f (lifecycle %.1f; by method: %s)",
			row.at.Round(time.Second), row.rssKiB, row.fds, row.gorout, row.live, row.created, row.perPod, row.lifePerPod, strings.Join(byMethod, ", "))
		fmt.Fprintf(out, "%.1f\t%d\t%d\t%d\t%d\t%d\t%.2f\t%.2f\n", row.at.Minutes(), row.rssKiB, row.fds, row.gorout, row.live, row.created, row.perPod, row.lifePerPod)
	}

	tick := time.NewTicker(*soakEvery)
	defer tick.Stop()
	nextSample := begin.Add(*soakSample)
	kinds := []string{kindSleep, kindProbe, kindVolumes}
	born := map[*podInfo]time.Time{}
	errs := 0
	for i := 0; time.Since(begin) < *soakFlag; i++ {
		<-tick.C
		ctx, cancel := r.ctx()
		kind := kinds[r.rng.Intn(len(kinds))]
		p, err := r.admin.CoreV1().Pods(ns).Create(ctx, r.pod(i, kind), metav1.CreateOptions{})
		if err == nil {
			info := &podInfo{name: p.Name, kind: kind, uid: p.UID}
			r.order = append(r.order, info)
			r.created[p.UID] = info
			born[info] = time.Now()
		} else {
			errs++
			t.Logf("create pod %d: %v", i, err)
		}
		grace := int64(2)
		for info, at := range born {
			if time.Since(at) < *soakLife {
				continue
			}
			if err := r.admin.CoreV1().Pods(ns).Delete(ctx, info.name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
				errs++
				t.Logf("delete %s: %v", info.name, err)
			}
			info.deleted = true
			delete(born, info)
		}
		cancel()
		if r.agent.exited() {
			t.Fatalf("the agent exited during the soak; its log:\n%s", r.agent.tail(40))
		}
		if time.Now().After(nextSample) {
			sample()
			nextSample = nextSample.Add(*soakSample)
		}
	}
	if len(rows) == 0 || time.Since(begin)-rows[len(rows)-1].at > 10*time.Second {
		sample()
	}
	// A hundred pods or more may be live (terminating ones included):
	// 90 s was short for them at a load of 50 to 100 (seed 808).
	r.deleteAllWithin(5 * time.Minute)
	r.checkLeftovers("after the soak")
	r.checkStateFiles("after the soak")
	if first, last := rows[0], rows[len(rows)-1]; float64(last.gorout) > 1.25*float64(first.gorout)+50 {
		t.Errorf("goroutines grew from %d (first sample) to %d (last)", first.gorout, last.gorout)
	}
	methods := proxy.Counts()
	names := make([]string, 0, len(methods))
	for m := range methods {
		names = append(names, m)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, m := range names {
		fmt.Fprintf(&b, "\n  %s %d", m, methods[m])
	}
	t.Logf("soak seed %d: %v, pods %d, API errors %d, leftovers %d; samples in %s; CRI calls by method:%s",
		seed, time.Since(begin).Round(time.Second), len(r.created), errs, r.leftovers, tsv, b.String())
}

// procStats is a process's resident set (VmRSS, KiB) and open files.
func procStats(t *testing.T, pid int) (rssKiB, fds int) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Errorf("agent status: %v", err)
		return 0, 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			rssKiB, _ = strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		}
	}
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Errorf("agent fds: %v", err)
	}
	return rssKiB, len(entries)
}

// goroutines reads the agent's goroutine count from its pprof endpoint
// ("goroutine profile: total N").
func goroutines(t *testing.T, addr string) int {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Errorf("goroutines: %v", err)
		return 0
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(io.LimitReader(resp.Body, 4096)).ReadString('\n')
	n, perr := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "goroutine profile: total ")))
	if perr != nil {
		t.Errorf("goroutines: %q: %v %v", line, err, perr)
	}
	return n
}
