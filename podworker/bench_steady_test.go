package podworker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/internal/wiretest"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/probes"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
	"github.com/podstart/podstart/statusmanager"
	smfake "github.com/podstart/podstart/statusmanager/fake"
)

// steadyNode is a node agent's pod path as examples/nodeagent wires it
// (Workers with probes, pull secrets, host IPs and the runtime's events;
// a status manager writing to an API server), on runtime/fake and a fake
// clock, so that a benchmark steps simulated time and waits for the work
// each step makes due (Workers.WaitIdle), with no sleeps.
type steadyNode struct {
	b        testing.TB
	clk      *testingclock.FakeClock
	rt       *fake.Runtime
	api      *smfake.Client
	statuses *statusmanager.Manager
	workers  *podworker.Workers
	pods     []*corev1.Pod
	dirty    atomic.Bool  // a new status waits for the status manager (Run's wake)
	syncs    atomic.Int64 // listener calls: pod syncs
	elapsed  time.Duration
}

func newSteadyNode(b testing.TB, n int, wire bool) *steadyNode {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s := &steadyNode{b: b, clk: clk, rt: fake.New(fake.WithStartFunc(exitInits), fake.WithClock(clk))}
	var rt runtime.Runtime = s.rt
	if wire {
		rt, _ = wiretest.Serve(b, s.rt) // CRI over gRPC on a unix socket, as runtime.Dial
	}
	for i := 0; i < n; i++ {
		s.pods = append(s.pods, testPod(fmt.Sprintf("steady%04d", i)))
	}
	s.api = smfake.NewClient(s.pods...)
	ims := images.NewManager(rt)
	b.Cleanup(func() { ims.Close() })
	prober := probes.New(rt, probes.WithClock(clk))
	b.Cleanup(func() { prober.Close() })
	root := b.TempDir()
	syncer := podsync.NewSyncer(rt, ims, podsync.WithClock(clk), podsync.WithProbes(prober),
		podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs")))
	s.statuses = statusmanager.New(s.api, statusmanager.WithClock(clk))
	s.workers = podworker.New(syncer, podworker.WithClock(clk), podworker.WithProbes(prober),
		podworker.WithRuntimeName("fake"), podworker.WithHostIPs("10.0.0.1"),
		podworker.WithPullSecrets(func(context.Context, *corev1.Pod) ([]corev1.Secret, error) { return nil, nil }),
		podworker.WithOnSync(func(uid types.UID, st podworker.PodState) {
			s.syncs.Add(1)
			s.statuses.OnSync(uid, st)
			s.dirty.Store(true)
		}))
	b.Cleanup(func() { s.workers.Close() })

	for _, p := range s.pods {
		if err := s.workers.Upsert(p); err != nil {
			b.Fatal(err)
		}
	}
	// Run until every pod runs and its status is written, then hand the
	// workers the API server's pods as an informer would after the
	// writes, and let a few minutes pass.
	for i := 0; !s.allRunning(); i++ {
		if i > 600 {
			b.Fatalf("%d pods not running after %d simulated seconds", n, i)
		}
		s.step(time.Second)
	}
	s.step(time.Minute)
	for _, p := range s.pods {
		api, _ := s.api.Pod(p.Namespace, p.Name)
		if err := s.workers.Upsert(api); err != nil {
			b.Fatal(err)
		}
	}
	s.step(3 * time.Minute)
	return s
}

func (s *steadyNode) allRunning() bool {
	for _, p := range s.pods {
		st, ok := s.workers.Status(p.UID)
		if !ok || !running(st) {
			return false
		}
		if _, ok := s.statuses.Written(p.UID); !ok {
			return false
		}
	}
	return true
}

// step advances simulated time by d in 1 s steps (the relist period),
// letting the Workers finish what each step made due, and runs the status
// manager as its Run would: a write of new statuses when woken, a
// reconcile of every pod each DefaultSyncPeriod.
func (s *steadyNode) step(d time.Duration) {
	ctx := context.Background()
	for end := s.elapsed + d; s.elapsed < end; {
		s.clk.Step(time.Second)
		s.elapsed += time.Second
		if err := s.workers.WaitIdle(ctx); err != nil {
			s.b.Fatal(err)
		}
		var err error
		switch {
		case s.elapsed%statusmanager.DefaultSyncPeriod == 0:
			s.dirty.Store(false)
			err = s.statuses.Sync(ctx, true)
		case s.dirty.Swap(false):
			err = s.statuses.Sync(ctx, false)
		}
		if err != nil {
			s.b.Fatal(err)
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSteadyState: one simulated minute (60 relists, 6 status
// reconciles, a resync and a garbage collection period) of a node with N
// running pods (2 init, 2 app containers each) where nothing changes.
// ns/op is the wall time of that minute's work; cpu-ms/min the process's
// CPU time (all goroutines); cri-calls/min, api-calls/min and syncs/min
// the CRI calls, API server calls and pod syncs it made; mem-KiB/pod the
// live heap and goroutine stacks the node added, after a collection, per
// pod. Run with -benchtime=10x
// (building the node is the slow part); STEADY_CPUPROFILE=file profiles
// the steady minutes alone, to file.<N> (file.wire.<N>).
func BenchmarkSteadyState(b *testing.B) {
	for _, n := range []int{100, 250, 500} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) { steadyState(b, n, false) })
	}
	// The same over CRI's gRPC (runtime/fake served on a unix socket):
	// the process pays both ends of each call.
	for _, n := range []int{100, 250, 500} {
		b.Run(fmt.Sprintf("wire/pods=%d", n), func(b *testing.B) { steadyState(b, n, true) })
	}
}

func steadyState(b *testing.B, n int, wire bool) {
	var ms goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&ms)
	heap := ms.HeapAlloc + ms.StackInuse
	s := newSteadyNode(b, n, wire)
	s.rt.ResetCalls()
	s.api.ClearCalls()
	s.syncs.Store(0)
	goruntime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	if f := os.Getenv("STEADY_CPUPROFILE"); f != "" {
		// Only the steady minutes, not building the node.
		if wire {
			f += ".wire"
		}
		out, err := os.Create(fmt.Sprintf("%s.%d", f, n))
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(out); err != nil {
			b.Fatal(err)
		}
		defer out.Close()
		defer pprof.StopCPUProfile()
	}
	cpu := cpuTime()
	apiCalls := 0
	for i := 0; i < b.N; i++ {
		s.step(time.Minute)
		apiCalls += len(s.api.Verbs())
		s.api.ClearCalls() // the fake keeps every call
	}
	cpu = cpuTime() - cpu
	b.StopTimer()
	b.ReportMetric(float64(apiCalls)/float64(b.N), "api-calls/min")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/min")
	b.ReportMetric(float64(len(s.rt.Calls()))/float64(b.N), "cri-calls/min")
	b.ReportMetric(float64(s.syncs.Load())/float64(b.N), "syncs/min")
	goruntime.GC()
	goruntime.ReadMemStats(&ms)
	b.ReportMetric((float64(ms.HeapAlloc+ms.StackInuse)-float64(heap))/1024/float64(n), "mem-KiB/pod")
	goruntime.KeepAlive(s)
}
