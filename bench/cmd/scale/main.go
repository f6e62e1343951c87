// Command scale is issue 41's "10,000 pods on one agent" (virtual-kubelet
// scale), run on demand: podworker and statusmanager (writing to
// statusmanager/fake, an API server in memory) on runtime/fake, in process
// or over CRI's gRPC on a unix socket (-wire), for 1,000, 5,000 and 10,000
// pods of one container each. Each N runs in a process of its own (this
// program started again with -one N), so that its RSS is its alone. A run
// creates N pods at once and measures the time until podworker reports
// every pod Running and until the API server holds every status Running;
// then, after a settling time (the relist goes to its evented period once
// nothing changed for podworker.QuietAfter), over a steady window: the
// process's CPU time per minute (all goroutines, both ends of the wire
// with -wire), its RSS (VmRSS, the mean of one sample a second), the live
// heap after a collection, the goroutines, and the CRI and API calls per
// minute. Every figure is printed per pod too: the cost per pod must not
// grow with N. -cpuprofile and -memprofile profile the largest run: the
// CPU over the whole run (start and window), the heap after a collection
// at its end.
//
//	go run ./bench/cmd/scale [-sizes 1000,5000,10000] [-window 60s] [-wire] \
//	    [-cpuprofile scale.cpu] [-memprofile scale.heap]
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/defaults"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
	"github.com/podstart/podstart/statusmanager"
	smfake "github.com/podstart/podstart/statusmanager/fake"
)

// Result is one run, as the child prints it (JSON, its last line).
type Result struct {
	Pods int  `json:"pods"`
	Wire bool `json:"wire"`
	// ToRunning: from the first Upsert until podworker reported every pod
	// Running; ToWritten: until the API server held every status Running.
	ToRunning time.Duration `json:"toRunning"`
	ToWritten time.Duration `json:"toWritten"`
	// StartCPU is the process's CPU time from the first Upsert until
	// every status was written; StartCRICalls the CRI calls meanwhile.
	StartCPU      time.Duration `json:"startCPU"`
	StartCRICalls int           `json:"startCRICalls"`
	// Over the steady window, per minute.
	Window        time.Duration  `json:"window"`
	CPUPerMin     time.Duration  `json:"cpuPerMin"`
	CRICallsMin   float64        `json:"criCallsMin"`
	CRIByMethod   map[string]int `json:"criByMethod"`
	APICallsMin   float64        `json:"apiCallsMin"`
	RSSBaseMiB    float64        `json:"rssBaseMiB"` // before the run
	RSSMiB        float64        `json:"rssMiB"`     // mean in the window
	HeapBaseMiB   float64        `json:"heapBaseMiB"`
	HeapMiB       float64        `json:"heapMiB"` // live heap after a collection, at the end
	StackMiB      float64        `json:"stackMiB"`
	Goroutines    int            `json:"goroutines"`
	GoroutineBase int            `json:"goroutineBase"`
}

func main() {
	sizes := flag.String("sizes", "1000,5000,10000", "pod counts, comma-separated, run in order")
	window := flag.Duration("window", time.Minute, "steady window measured after all pods run")
	settle := flag.Duration("settle", 20*time.Second, "wait after all statuses are written, before the window")
	wire := flag.Bool("wire", false, "CRI over gRPC on a unix socket in -socket-dir (both ends in this process)")
	socketDir := flag.String("socket-dir", "/tmp/podstart-scale", "directory of -wire's socket and the runs' root dirs")
	cpuprofile := flag.String("cpuprofile", "", "write the largest run's CPU profile here")
	memprofile := flag.String("memprofile", "", "write the largest run's heap profile here")
	one := flag.Int("one", 0, "run N pods in this process and print its Result as JSON (what the parent starts)")
	timeout := flag.Duration("timeout", 15*time.Minute, "give up a run after this long")
	flag.Parse()
	if *one > 0 {
		r, err := run(*one, *window, *settle, *wire, *socketDir, *cpuprofile, *memprofile, *timeout)
		if err != nil {
			log.Fatal(err)
		}
		if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
			log.Fatal(err)
		}
		return
	}
	var ns []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			log.Fatalf("scale: bad -sizes %q", *sizes)
		}
		ns = append(ns, n)
	}
	largest := slicesMax(ns)
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	load := loadAvg()
	var results []Result
	for _, n := range ns {
		args := []string{"-one", strconv.Itoa(n), "-window", window.String(), "-settle", settle.String(),
			"-socket-dir", *socketDir, "-timeout", timeout.String(), fmt.Sprintf("-wire=%v", *wire)}
		if n == largest {
			args = append(args, "-cpuprofile", *cpuprofile, "-memprofile", *memprofile)
		}
		cmd := exec.Command(self, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
		log.Printf("scale: %d pods...", n)
		if err := cmd.Run(); err != nil {
			log.Fatalf("scale: %d pods: %v", n, err)
		}
		var r Result
		if err := json.Unmarshal(lastLine(out.Bytes()), &r); err != nil {
			log.Fatalf("scale: %d pods: %v in %q", n, err, out.String())
		}
		log.Printf("scale: %d pods: %+v", n, r)
		results = append(results, r)
	}
	printTable(os.Stdout, results, load, loadAvg())
}

func slicesMax(ns []int) int {
	m := 0
	for _, n := range ns {
		m = max(m, n)
	}
	return m
}

func lastLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return lines[len(lines)-1]
}

func printTable(w *os.File, rs []Result, loadBefore, loadAfter string) {
	mode := "in process"
	if len(rs) > 0 && rs[0].Wire {
		mode = "over CRI's gRPC (unix socket)"
	}
	fmt.Fprintf(w, "\nruntime/fake %s; commit %s; load average before %s, after %s; window %v\n\n", mode, commit(), loadBefore, loadAfter, rs[0].Window)
	fmt.Fprintln(w, "| pods | to Running | to written | start CPU | CRI calls per start | steady CPU s/min | CPU ms/min per pod | CRI calls/min | per pod | API calls/min | RSS MiB | RSS KiB/pod | heap KiB/pod | goroutines |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rs {
		n := float64(r.Pods)
		fmt.Fprintf(w, "| %d | %.1f s (%.2f ms/pod) | %.1f s | %.1f s (%.2f ms/pod) | %.1f | %.3f | %.4f | %.0f | %.3f | %.1f | %.0f | %.1f | %.1f | %d (+%d) |\n",
			r.Pods, r.ToRunning.Seconds(), r.ToRunning.Seconds()*1000/n, r.ToWritten.Seconds(),
			r.StartCPU.Seconds(), r.StartCPU.Seconds()*1000/n, float64(r.StartCRICalls)/n,
			r.CPUPerMin.Seconds(), r.CPUPerMin.Seconds()*1000/n, r.CRICallsMin, r.CRICallsMin/n, r.APICallsMin,
			r.RSSMiB, (r.RSSMiB-r.RSSBaseMiB)*1024/n, (r.HeapMiB-r.HeapBaseMiB)*1024/n, r.Goroutines, r.Goroutines-r.GoroutineBase)
	}
	fmt.Fprintln(w)
	for _, r := range rs {
		var ms []string
		for m := range r.CRIByMethod {
			ms = append(ms, m)
		}
		sort.Strings(ms)
		var parts []string
		for _, m := range ms {
			parts = append(parts, fmt.Sprintf("%s %.1f", m, float64(r.CRIByMethod[m])*float64(time.Minute)/float64(r.Window)))
		}
		fmt.Fprintf(w, "%d pods, CRI calls per minute by method: %s\n", r.Pods, strings.Join(parts, ", "))
	}
}

func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssMiB is the process's VmRSS.
func rssMiB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// pod is the i-th pod: one container that runs until stopped, its image
// present, as the API server would hold it (defaulted).
func pod(i int) *corev1.Pod {
	name := fmt.Sprintf("scale-%05d", i)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "scale", UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))},
		Spec: corev1.PodSpec{NodeName: "scale-node",
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36", ImagePullPolicy: corev1.PullIfNotPresent}}},
	}
	defaults.Pod(p)
	return p
}

// counter is the API server as the status manager writes to it, counting
// calls and the pods whose written phase is Running.
type counter struct {
	*smfake.Client
	calls   atomic.Int64
	mu      sync.Mutex
	running map[types.UID]bool
	all     chan struct{}
	n       int
}

func (c *counter) GetPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	c.calls.Add(1)
	return c.Client.GetPod(ctx, ns, name)
}

func (c *counter) PatchPodStatus(ctx context.Context, ns, name string, patch []byte) (*corev1.Pod, error) {
	c.calls.Add(1)
	p, err := c.Client.PatchPodStatus(ctx, ns, name, patch)
	if err == nil && p.Status.Phase == corev1.PodRunning {
		c.mu.Lock()
		if !c.running[p.UID] {
			c.running[p.UID] = true
			if len(c.running) == c.n {
				close(c.all)
			}
		}
		c.mu.Unlock()
	}
	return p, err
}

func (c *counter) DeletePod(ctx context.Context, ns, name string, uid types.UID) error {
	c.calls.Add(1)
	return c.Client.DeletePod(ctx, ns, name, uid)
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func run(n int, window, settle time.Duration, wire bool, socketDir, cpuprofile, memprofile string, timeout time.Duration) (Result, error) {
	r := Result{Pods: n, Wire: wire, Window: window}
	var ms goruntime.MemStats
	goruntime.GC()
	debug.FreeOSMemory()
	goruntime.ReadMemStats(&ms)
	r.RSSBaseMiB, r.HeapBaseMiB, r.GoroutineBase = rssMiB(), float64(ms.HeapAlloc)/(1<<20), goruntime.NumGoroutine()
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return r, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return r, err
		}
		defer pprof.StopCPUProfile()
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := os.MkdirAll(socketDir, 0o755); err != nil {
		return r, err
	}
	root, err := os.MkdirTemp(socketDir, fmt.Sprintf("run-%d-", n))
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(root)

	f := fake.New(fake.WithImages("busybox:1.36"), fake.WithCallLog(false))
	var rt runtime.Runtime = f
	if wire {
		srv := fake.NewServer(f)
		endpoint, err := srv.ServeUnix(filepath.Join(root, "cri.sock"))
		if err != nil {
			return r, err
		}
		defer srv.Stop()
		c, err := runtime.Dial(ctx, endpoint)
		if err != nil {
			return r, err
		}
		defer c.Close()
		rt = c
	}
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = pod(i)
	}
	api := &counter{Client: smfake.NewClient(pods...), running: map[types.UID]bool{}, all: make(chan struct{}), n: n}
	api.SetCallLog(false)
	ims := images.NewManager(rt)
	defer ims.Close()
	syncer := podsync.NewSyncer(rt, ims, podsync.WithRootDir(filepath.Join(root, "root")), podsync.WithPodLogsDir(filepath.Join(root, "logs")))
	sm := statusmanager.New(api)
	var mu sync.Mutex
	seen := make(map[types.UID]bool, n)
	allRunning := make(chan struct{})
	workers := podworker.New(syncer, podworker.WithRuntimeName("fake"), podworker.WithHostIPs("10.0.0.1"),
		podworker.WithOnSync(func(uid types.UID, st podworker.PodState) {
			sm.OnSync(uid, st)
			if st.APIStatus.Phase != corev1.PodRunning {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if !seen[uid] {
				seen[uid] = true
				if len(seen) == n {
					close(allRunning)
				}
			}
		}))
	defer workers.Close()
	smCtx, smStop := context.WithCancel(ctx)
	smDone := make(chan struct{})
	go func() {
		defer close(smDone)
		_ = sm.Run(smCtx)
	}()
	defer func() {
		smStop()
		<-smDone
	}()

	cpu0, start := cpuTime(), time.Now()
	for _, p := range pods {
		if err := workers.Upsert(p); err != nil {
			return r, err
		}
	}
	workers.SourcesReady()
	select {
	case <-allRunning:
		r.ToRunning = time.Since(start)
	case <-ctx.Done():
		return r, fmt.Errorf("%d pods: %d running after %v", n, len(seen), timeout)
	}
	select {
	case <-api.all:
		r.ToWritten = time.Since(start)
	case <-ctx.Done():
		return r, fmt.Errorf("%d pods: statuses not written after %v", n, timeout)
	}
	r.StartCPU, r.StartCRICalls = cpuTime()-cpu0, sum(f.CallCounts())

	// Settle, then return the start's memory as an agent does
	// (bench/cmd/podagent: the burst's garbage is not the steady state).
	time.Sleep(settle)
	goruntime.GC()
	debug.FreeOSMemory()

	f.ResetCalls()
	api0 := api.calls.Load()
	cpu0, w0 := cpuTime(), time.Now()
	var rss []float64
	t := time.NewTicker(time.Second)
	for time.Since(w0) < window {
		<-t.C
		rss = append(rss, rssMiB())
	}
	t.Stop()
	elapsed := time.Since(w0)
	perMin := float64(time.Minute) / float64(elapsed)
	r.CPUPerMin = time.Duration(float64(cpuTime()-cpu0) * perMin)
	r.CRIByMethod = f.CallCounts()
	r.CRICallsMin = float64(sum(r.CRIByMethod)) * perMin
	r.APICallsMin = float64(api.calls.Load()-api0) * perMin
	for _, v := range rss {
		r.RSSMiB += v / float64(len(rss))
	}
	r.Goroutines = goruntime.NumGoroutine()
	goruntime.GC()
	goruntime.ReadMemStats(&ms)
	r.HeapMiB, r.StackMiB = float64(ms.HeapAlloc)/(1<<20), float64(ms.StackInuse)/(1<<20)
	if memprofile != "" {
		hf, err := os.Create(memprofile)
		if err != nil {
			return r, err
		}
		defer hf.Close()
		if err := pprof.WriteHeapProfile(hf); err != nil {
			return r, err
		}
	}
	goruntime.KeepAlive(workers)
	return r, nil
}
