// Command podagent is podstart's side of the bench tier: a process that
// runs the pods of a manifest directory with podworker over podsync over
// runtime.Dial, as standalone kubelet runs them as static pods, so that
// its CPU and memory are measured as kubelet's are.
//
// Each manifest (JSON or YAML, one pod) is read once at start, named and
// given a UID as kubelet names its static pods (<name>-<node name>; a UID
// hashed from the manifest and the node name), defaulted as the API server
// would (defaults.Pod) and upserted; then SourcesReady. Nothing else runs:
// no status manager, log rotation, image GC, eviction or file watch (the
// issue compares podworker with kubelet). With -cgroup-root it makes
// kubelet's QoS and pod cgroups there (podworker.WithPodCgroups), as the
// bench's kubelet does under a root of its own. It stops on SIGTERM or SIGINT,
// leaving its pods running, as kubelet does.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	goruntime "runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/cgroups"
	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/staticpods"
)

func main() {
	endpoint := flag.String("cri", "", "CRI endpoint, unix:///path")
	manifests := flag.String("manifests", "", "directory of pod manifests")
	rootDir := flag.String("root-dir", "", "kubelet-style root dir")
	logsDir := flag.String("pod-logs-dir", "", "pod logs dir")
	nodeName := flag.String("node-name", "bench", "the node's name (static pods are named <name>-<node name>)")
	cgroupRoot := flag.String("cgroup-root", "", `make kubelet's QoS and pod cgroups (cgroupfs) under this cgroup root, as kubelet's cgroupsPerQOS with cgroupRoot; "": none, as cgroupsPerQOS false`)
	flag.Parse()
	if r := os.Getenv("PODAGENT_MEMPROFILERATE"); r != "" {
		// Diagnosis only: a finer heap profile costs memory of its own.
		if n, err := strconv.Atoi(r); err == nil {
			goruntime.MemProfileRate = n
		}
	}
	if *endpoint == "" || *manifests == "" || *rootDir == "" || *logsDir == "" {
		log.Fatal("podagent: -cri, -manifests, -root-dir and -pod-logs-dir are required")
	}
	pods, err := readPods(*manifests, *nodeName)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	rt, err := runtime.Dial(ctx, *endpoint, runtime.WithConnectTimeout(20*time.Second),
		runtime.WithDialOptions(experimental.WithBufferPool(smallBuffers{mem.DefaultBufferPool()})))
	cancel()
	if err != nil {
		log.Fatal(err)
	}
	perQOS := *cgroupRoot != ""
	node := criconfig.Node{RootDir: *rootDir, PodLogsDir: *logsDir, CgroupsPerQOS: &perQOS, CgroupRoot: *cgroupRoot,
		CgroupDriver: cgroups.DriverCgroupfs, ResolvConf: "/etc/resolv.conf"}
	var opts []podworker.Option
	if perQOS {
		m, err := podCgroups(node)
		if err != nil {
			log.Fatal(err)
		}
		opts = append(opts, podworker.WithPodCgroups(m))
	}
	syncer := podsync.NewSyncer(rt, nil, podsync.WithNode(node))
	w := podworker.New(syncer, opts...)
	// Watching the syncs before the pods are upserted: the start's burst
	// is the first to free.
	freeLoop := freeAfterBursts(w, podworker.QuietAfter+3*time.Second, func() {
		// A collection shrinks an idle goroutine's stack by half at
		// most: the two before FreeOSMemory's own bring the pods'
		// workers, grown to 8-16 KiB by their syncs, back to a few KiB.
		goruntime.GC()
		goruntime.GC()
		debug.FreeOSMemory()
		var m goruntime.MemStats
		goruntime.ReadMemStats(&m)
		log.Printf("podagent: idle after syncs, returned free memory: heap objects %d KiB, heap in use %d KiB, heap idle %d KiB (released %d KiB), stacks %d KiB; %s",
			m.HeapAlloc>>10, m.HeapInuse>>10, m.HeapIdle>>10, m.HeapReleased>>10, m.StackInuse>>10, rss())
	})
	freeCtx, stopFree := context.WithCancel(context.Background())
	freed := make(chan struct{})
	go func() {
		defer close(freed)
		freeLoop(freeCtx)
	}()
	for _, p := range pods {
		if err := w.Upsert(p); err != nil {
			log.Printf("podagent: %s: %v", p.Name, err)
		}
	}
	w.SourcesReady()
	log.Printf("podagent: %d pods upserted", len(pods))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	if f := os.Getenv("PODAGENT_HEAPPROFILE"); f != "" {
		writeHeapProfile(f)
	}
	stopFree()
	<-freed
	w.Close()
	rt.Close()
}

// freeAfterBursts returns the heap a burst of syncs grew and left free to
// the system (free: debug.FreeOSMemory), once the Workers have been idle
// and synced no pod for quiet after it. The runtime's scavenger alone
// keeps that memory while the heap is below its goal (twice the live
// heap): a node that started its pods would keep the start's peak, though
// its steady state (a relist a minute) allocates little. Quiet should
// outlast the fast relists that follow a change (podworker.QuietAfter),
// whose garbage would grow the heap again. It watches the syncs from its
// call on (a sync before it is not seen); the loop it returns runs until
// its ctx ends or the Workers are closed.
func freeAfterBursts(w *podworker.Workers, quiet time.Duration, free func()) (loop func(ctx context.Context)) {
	synced := make(chan struct{}, 1)
	remove := w.OnSync(func(types.UID, podworker.PodState) {
		select {
		case synced <- struct{}{}:
		default:
		}
	})
	return func(ctx context.Context) {
		defer remove()
		freeBursts(ctx, w, quiet, free, synced)
	}
}

func freeBursts(ctx context.Context, w *podworker.Workers, quiet time.Duration, free func(), synced <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-synced:
		}
		for quietFor := false; !quietFor; {
			if w.WaitIdle(ctx) != nil {
				return
			}
			t := time.NewTimer(quiet)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-synced: // not over yet
				t.Stop()
			case <-t.C:
				quietFor = true
			}
		}
		free()
	}
}

// smallBuffers is a gRPC buffer pool that pools only buffers of up to
// 32 KiB (HTTP/2 frames, small messages) and leaves larger ones to the
// garbage collector: gRPC's default pool keeps a 1 MiB buffer for every
// message over 32 KiB it received (a relist of a few hundred containers),
// for good, on a node agent that receives one a minute.
type smallBuffers struct{ pool mem.BufferPool }

const maxPooledBuffer = 32 << 10

func (p smallBuffers) Get(n int) *[]byte {
	if n > maxPooledBuffer {
		b := make([]byte, n)
		return &b
	}
	return p.pool.Get(n)
}

func (p smallBuffers) Put(b *[]byte) {
	if cap(*b) > maxPooledBuffer {
		return
	}
	p.pool.Put(b)
}

// writeHeapProfile writes the heap profile and the runtime's memory
// figures (to the log), to see what the RSS the bench measures is made of.
func writeHeapProfile(name string) {
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	log.Printf("podagent: heap objects %d KiB, heap in use %d KiB, heap idle %d KiB (released %d KiB), stacks %d KiB, goroutines %d, runtime total %d KiB; %s",
		m.HeapAlloc>>10, m.HeapInuse>>10, m.HeapIdle>>10, m.HeapReleased>>10, m.StackInuse>>10, goruntime.NumGoroutine(), m.Sys>>10, rss())
	f, err := os.Create(name)
	if err != nil {
		log.Print(err)
		return
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		log.Print(err)
	}
}

// rss is the process's resident set from /proc/self/status: all of it,
// its anonymous pages (heap, stacks, the runtime's own) and its file
// pages (the binary's and libraries' pages touched).
func rss() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && (k == "VmRSS" || k == "RssAnon" || k == "RssFile") {
			out = append(out, k+" "+strings.TrimSpace(v))
		}
	}
	return strings.Join(out, ", ")
}

// podCgroups makes kubelet's QoS cgroups under the node's cgroup root
// (node allocatable enforced on kubepods: the host's capacity, no
// reservation) and returns the manager that makes the pods'.
func podCgroups(node criconfig.Node) (*cgroups.Manager, error) {
	tree, err := cgroups.DetectTree("")
	if err != nil {
		return nil, err
	}
	m, err := cgroups.NewManager(tree, node, cgroups.WithNodeAllocatable(cgroups.NodeAllocatable{Capacity: cgroups.HostCapacity()}))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return m, m.EnsureQoS(ctx)
}

// readPods reads the manifests of dir with kubelet's file source rules
// (staticpods): the static pods kubelet would run, by file name; any
// manifest refused is an error (the bench runs every one).
func readPods(dir, nodeName string) ([]*corev1.Pod, error) {
	src, err := staticpods.NewFileSource(dir, nodeName)
	if err != nil {
		return nil, err
	}
	pods, refused, ok := src.Read()
	if len(refused) > 0 {
		return nil, refused[0]
	}
	if !ok {
		return nil, fmt.Errorf("%s: not read", dir)
	}
	return pods, nil
}
