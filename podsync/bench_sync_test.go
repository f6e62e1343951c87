package podsync_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

// benchPod: 3 regular init containers and 3 apps.
func benchPod() *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "shop", UID: "uid-bench"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways}}
	for i := 0; i < 3; i++ {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: fmt.Sprintf("init-%d", i), Image: "busybox:1.35", ImagePullPolicy: corev1.PullIfNotPresent})
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprintf("app-%d", i), Image: "busybox:1.35", ImagePullPolicy: corev1.PullIfNotPresent})
	}
	return p
}

func benchFake() *fake.Runtime {
	return fake.New(fake.WithStartFunc(exitInits(nil)))
}

// startPod runs Status and SyncPod until the pod runs, as an agent's loop.
func startPod(b *testing.B, rt runtime.Runtime, root string, opts ...podsync.Option) {
	run, done := newStarter(b, rt, root, opts...)
	defer done()
	run()
}

// newStarter makes the image manager and Syncer an agent makes once, and
// returns the loop that starts the pod with them.
func newStarter(b *testing.B, rt runtime.Runtime, root string, opts ...podsync.Option) (run, done func()) {
	ims := images.NewManager(rt)
	s := podsync.NewSyncer(rt, ims, append([]podsync.Option{podsync.WithRootDir(root), podsync.WithPodLogsDir(root)}, opts...)...)
	run = func() {
		pod := benchPod()
		ctx := context.Background()
		for n := 0; n < 10; n++ {
			st, err := s.Status(ctx, pod)
			if err != nil {
				b.Fatal(err)
			}
			done := true
			for _, c := range pod.Spec.Containers {
				if cs := st.FindContainerStatusByName(c.Name); cs == nil || cs.State != podsync.ContainerStateRunning {
					done = false
				}
			}
			if done {
				return
			}
			if err := s.SyncPod(ctx, pod, st, nil).Error(); err != nil {
				b.Fatal(err)
			}
		}
		b.Fatal("pod did not start")
	}
	return run, func() { ims.Close() }
}

type served struct {
	srv  *fake.Server
	conn *runtime.Client
	dir  string
}

func serve(b *testing.B, f *fake.Runtime, opts ...runtime.Option) served {
	dir, err := os.MkdirTemp("", "bench-")
	if err != nil {
		b.Fatal(err)
	}
	srv := fake.NewServer(f)
	ep, err := srv.ServeUnix(filepath.Join(dir, "cri.sock"))
	if err != nil {
		b.Fatal(err)
	}
	c, err := runtime.Dial(context.Background(), ep, opts...)
	if err != nil {
		b.Fatal(err)
	}
	return served{srv: srv, conn: c, dir: dir}
}

func (s served) close() {
	s.conn.Close()
	s.srv.Stop()
	os.RemoveAll(s.dir)
}

// replay makes the recorded CRI calls with the generated gRPC clients.
func replay(b *testing.B, conn *grpc.ClientConn, calls []fake.Call) {
	ctx := context.Background()
	rs, is := runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
	var err error
	for _, c := range calls {
		switch req := c.Request.(type) {
		case *runtimeapi.PullImageRequest:
			_, err = is.PullImage(ctx, req)
		case *runtimeapi.ImageStatusRequest:
			_, err = is.ImageStatus(ctx, req)
		case *runtimeapi.RunPodSandboxRequest:
			_, err = rs.RunPodSandbox(ctx, req)
		case *runtimeapi.PodSandboxStatusRequest:
			_, err = rs.PodSandboxStatus(ctx, req)
		case *runtimeapi.ListPodSandboxRequest:
			_, err = rs.ListPodSandbox(ctx, req)
		case *runtimeapi.CreateContainerRequest:
			_, err = rs.CreateContainer(ctx, req)
		case *runtimeapi.StartContainerRequest:
			_, err = rs.StartContainer(ctx, req)
		case *runtimeapi.ListContainersRequest:
			_, err = rs.ListContainers(ctx, req)
		case *runtimeapi.ContainerStatusRequest:
			_, err = rs.ContainerStatus(ctx, req)
		default:
			b.Fatalf("no replay for %s", c.Method)
		}
		if err != nil {
			b.Fatalf("%s: %v", c.Method, err)
		}
	}
}

// BenchmarkSyncPod starts a fresh pod (3 init, 3 app containers) with
// podstart's Status and SyncPod loop, over the unix socket and in-process,
// and, as the baseline, replays the very same CRI requests with the bare
// generated gRPC client. The fake's IDs are deterministic, so each
// iteration's fresh fake sees identical requests.
func BenchmarkSyncPod(b *testing.B) {
	root := benchRoot(b)
	b.Run("podstart-unix-socket", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			s := serve(b, benchFake())
			b.StartTimer()
			startPod(b, s.conn, root)
			b.StopTimer()
			s.close()
			b.StartTimer()
		}
	})
	// Record podstart's requests once.
	f := benchFake()
	startPod(b, f, root)
	calls := f.Calls()
	for i := range calls {
		calls[i].Request = proto.Clone(calls[i].Request)
	}
	b.Run("bare-grpc-unix-socket", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			s := serve(b, benchFake())
			b.StartTimer()
			replay(b, s.conn.Conn(), calls)
			b.StopTimer()
			s.close()
			b.StartTimer()
		}
	})
	b.Run("podstart-unix-socket-no-deadlines", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			s := serve(b, benchFake(), runtime.WithCallTimeout(0))
			b.StartTimer()
			startPod(b, s.conn, root)
			b.StopTimer()
			s.close()
			b.StartTimer()
		}
	})
	b.Run("podstart-unix-socket-no-files", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			s := serve(b, benchFake())
			b.StartTimer()
			startPod(b, s.conn, root, podsync.WithMountOptions(mounts.WithDisk(noDisk{})))
			b.StopTimer()
			s.close()
			b.StartTimer()
		}
	})
	// podstart's own work and the fake's, with no transport: a new pod
	// each time, on a Syncer made (untimed) as a node makes it once. Its
	// CPU profile, less runtime/fake, is podstart's own cost of a start:
	// -cpuprofile, then go tool pprof -top -cum -focus newStarter.func1
	// -ignore runtime/fake.
	b.Run("podstart-in-process", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			podRoot, err := os.MkdirTemp(root, "")
			if err != nil {
				b.Fatal(err)
			}
			start, done := newStarter(b, benchFake(), podRoot)
			b.StartTimer()
			start()
			b.StopTimer()
			done()
			os.RemoveAll(podRoot)
			b.StartTimer()
		}
	})
	b.ReportMetric(float64(len(calls)), "cri-calls")
}

// benchRoot is where pods' directories go: $PODSTART_BENCH_ROOT (say a
// tmpfs, to tell the file system's cost from podstart's) or a temporary
// directory.
func benchRoot(b *testing.B) string {
	if dir := os.Getenv("PODSTART_BENCH_ROOT"); dir != "" {
		root, err := os.MkdirTemp(dir, "bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(root) })
		return root
	}
	return b.TempDir()
}

// noDisk keeps mounts' side effects off the file system, to tell podstart's
// own CPU cost from the files kubelet also writes on every start.
type noDisk struct{}

func (noDisk) MakeSubPathDir(string, string) error              { return nil }
func (noDisk) ResolveSubPath(root, sub string) (string, error)  { return root + "/" + sub, nil }
func (noDisk) WriteFile(string, []byte, os.FileMode) error      { return nil }
func (noDisk) ReadFile(string) ([]byte, error)                  { return nil, nil }
func (noDisk) CreateTerminationFile(dir string) (string, error) { return dir + "/0", nil }

// BenchmarkSyncPodOverhead pairs the two: each iteration starts the pod
// with podstart and replays the same CRI calls bare, each against a fresh
// fake on its own socket, alternating which goes first; overhead-% is
// podstart's total time over the bare total, minus one. Pairing cancels
// the drift of a shared machine that separate benchmarks suffer.
func BenchmarkSyncPodOverhead(b *testing.B) {
	b.Run("call-timeouts", func(b *testing.B) { pairedOverhead(b) })
	b.Run("no-call-timeouts", func(b *testing.B) { pairedOverhead(b, runtime.WithCallTimeout(0)) })
}

func pairedOverhead(b *testing.B, opts ...runtime.Option) {
	root := benchRoot(b)
	f := benchFake()
	startPod(b, f, root)
	calls := f.Calls()
	var podstart, bare time.Duration
	// Allocations of the whole process (the fake server's too, the same
	// in both), read outside the timed part.
	var podstartAllocs, bareAllocs, podstartBytes, bareBytes uint64
	var m0, m1 goruntime.MemStats
	// Time spent inside CRI calls, as the client sees them.
	var inCalls atomic.Int64
	var podstartInCalls, bareInCalls time.Duration
	opts = append(opts, runtime.WithDialOptions(grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		t0 := time.Now()
		err := invoke(ctx, method, req, reply, cc, callOpts...)
		inCalls.Add(int64(time.Since(t0)))
		return err
	})))
	run := func(withPodstart bool) {
		f := benchFake()
		s := serve(b, f, opts...)
		defer s.close()
		before := len(f.Calls()) // Dial's Version
		defer func() {
			// Both make the very same calls.
			if got := len(f.Calls()) - before; got != len(calls) {
				b.Fatalf("%d CRI calls, want %d (podstart: %v)", got, len(calls), withPodstart)
			}
		}()
		if withPodstart {
			// A new pod each time: its directories do not exist yet.
			podRoot, err := os.MkdirTemp(root, "")
			if err != nil {
				b.Fatal(err)
			}
			defer os.RemoveAll(podRoot)
			// The Syncer is made once per node, not per pod: not timed.
			start, done := newStarter(b, s.conn, podRoot)
			defer done()
			goruntime.ReadMemStats(&m0)
			inCalls.Store(0)
			t0 := time.Now()
			start()
			podstart += time.Since(t0)
			podstartInCalls += time.Duration(inCalls.Load())
			goruntime.ReadMemStats(&m1)
			podstartAllocs += m1.Mallocs - m0.Mallocs
			podstartBytes += m1.TotalAlloc - m0.TotalAlloc
			return
		}
		goruntime.ReadMemStats(&m0)
		inCalls.Store(0)
		t0 := time.Now()
		replay(b, s.conn.Conn(), calls)
		bare += time.Since(t0)
		bareInCalls += time.Duration(inCalls.Load())
		goruntime.ReadMemStats(&m1)
		bareAllocs += m1.Mallocs - m0.Mallocs
		bareBytes += m1.TotalAlloc - m0.TotalAlloc
	}
	for i := 0; i < b.N; i++ {
		first := i%2 == 0
		run(first)
		run(!first)
	}
	b.ReportMetric(float64(podstart)/float64(b.N), "podstart-ns/op")
	b.ReportMetric(float64(bare)/float64(b.N), "bare-ns/op")
	b.ReportMetric((float64(podstart)/float64(bare)-1)*100, "overhead-%")
	b.ReportMetric(float64(len(calls)), "cri-calls")
	// Where podstart's extra time goes: its own work between calls, and
	// calls that take longer than the same calls made bare.
	b.ReportMetric(float64(podstart-podstartInCalls)/float64(b.N), "podstart-between-calls-ns/op")
	b.ReportMetric(float64(podstartInCalls-bareInCalls)/float64(b.N), "podstart-slower-calls-ns/op")
	// podstart's own allocations per pod start: the difference.
	b.ReportMetric((float64(podstartAllocs)-float64(bareAllocs))/float64(b.N), "podstart-allocs/start")
	b.ReportMetric((float64(podstartBytes)-float64(bareBytes))/float64(b.N), "podstart-B/start")
}

// BenchmarkReplayGapCost measures what work between CRI calls costs on
// this machine, with no podstart in the way: the bare replay of the 45
// calls with a busy gap of g before each call, paired with the replay
// without gaps. wall-per-gap-ns/ns is the extra wall time per nanosecond
// of gap: 1 if the work only adds itself, more when the runtime's side
// goes idle during the gap and must be woken for the next call (a VM's
// idle vCPU is slow to wake). It is the exchange rate at which
// BenchmarkSyncPodOverhead turns podstart's own work into overhead.
func BenchmarkReplayGapCost(b *testing.B) {
	root := benchRoot(b)
	f := benchFake()
	startPod(b, f, root)
	calls := f.Calls()
	for _, gap := range []time.Duration{2 * time.Microsecond, 5 * time.Microsecond, 12 * time.Microsecond} {
		b.Run(gap.String(), func(b *testing.B) {
			var with, without time.Duration
			run := func(g time.Duration) time.Duration {
				s := serve(b, benchFake())
				defer s.close()
				t0 := time.Now()
				replayWithGap(b, s.conn.Conn(), calls, g)
				return time.Since(t0)
			}
			for i := 0; i < b.N; i++ {
				if i%2 == 0 {
					with += run(gap)
					without += run(0)
				} else {
					without += run(0)
					with += run(gap)
				}
			}
			b.ReportMetric(float64(without)/float64(b.N), "bare-ns/op")
			b.ReportMetric(float64(with)/float64(b.N), "gapped-ns/op")
			b.ReportMetric(float64(with-without)/float64(b.N)/float64(len(calls)*int(gap)), "wall-per-gap-ns/ns")
		})
	}
}

// replayWithGap is replay with gap of busy work (no sleep: a sleeping
// goroutine is what a waiting one is) before each call.
func replayWithGap(b *testing.B, conn *grpc.ClientConn, calls []fake.Call, gap time.Duration) {
	for i := range calls {
		if gap > 0 {
			for t := time.Now(); time.Since(t) < gap; {
			}
		}
		replay(b, conn, calls[i:i+1])
	}
}
