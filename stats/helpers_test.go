package stats_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/runtime/fake"
	"github.com/podstart/podstart/stats"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// node is a fake runtime with pods and a host in temp dirs.
type node struct {
	rt      *fake.Runtime
	clock   *testingclock.FakeClock
	proc    string
	rootDir string
	logsDir string
	cgroup  string // the cgroup mount, empty unless a test writes it
	// cpu is each container's cumulative CPU (ns) by name, as the
	// runtime answers ListPodSandboxStats; nanoCores, when set, is the
	// rate the runtime reports itself.
	cpu       map[string]uint64
	nanoCores map[string]uint64
	noCPU     map[string]bool // containers whose stats have no CPU
	ids       map[string]string
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var procFiles = map[string]string{
	"meminfo":                "MemTotal: 1048576 kB\nMemFree: 51200 kB\nInactive(file): 102400 kB\nSwapTotal: 2048 kB\nSwapFree: 1024 kB\n",
	"stat":                   "cpu  1000 20 300 9000 50 6 7 80 0 0\ncpu0 1000 20 300 9000 50 6 7 80 0 0\nbtime 1767000000\n",
	"loadavg":                "1.36 3.49 4.53 2/3518 3715089\n",
	"sys/kernel/pid_max":     "4194304\n",
	"sys/kernel/threads-max": "127000\n",
	"1/net/dev": "Inter-|   Receive                                                |  Transmit\n" +
		" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n" +
		"    lo:  500 5 0 0 0 0 0 0 500 5 0 0 0 0 0 0\n" +
		"  eth0: 1000 10 1 0 0 0 0 0 2000 20 2 0 0 0 0 0\n" +
		"vethab: 7 1 0 0 0 0 0 0 7 1 0 0 0 0 0 0\n",
}

var errNoFs = errors.New("no such filesystem")

func newNode(t testing.TB, pods int) *node {
	t.Helper()
	n := &node{clock: testingclock.NewFakeClock(t0), proc: t.TempDir(), rootDir: t.TempDir(), logsDir: t.TempDir(), cgroup: t.TempDir(),
		cpu: map[string]uint64{}, nanoCores: map[string]uint64{}, noCPU: map[string]bool{}, ids: map[string]string{}}
	n.rt = fake.New(fake.WithClock(n.clock), fake.WithImages("busybox"), fake.WithImageFsMountpoint("/images"))
	writeFiles(t, n.proc, procFiles)
	for i := range pods {
		name, uid := "web", "uid-web"
		if i > 0 {
			name, uid = "pod-"+strconv.Itoa(i), "uid-"+strconv.Itoa(i)
		}
		md := &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid, Attempt: 1}
		if i == 0 { // an earlier sandbox of web, not ready: not counted
			old := proto.Clone(md).(*runtimeapi.PodSandboxMetadata)
			old.Attempt = 0
			n.rt.SeedSandbox(&runtimeapi.PodSandboxConfig{Metadata: old}, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, t0.Add(-2*time.Hour))
		}
		cfg := &runtimeapi.PodSandboxConfig{Metadata: md}
		sb := n.rt.SeedSandbox(cfg, runtimeapi.PodSandboxState_SANDBOX_READY, t0.Add(-time.Hour))
		for j, c := range []struct {
			name  string
			state runtimeapi.ContainerState
		}{{"app", runtimeapi.ContainerState_CONTAINER_RUNNING}, {"init", runtimeapi.ContainerState_CONTAINER_EXITED}} {
			id, err := n.rt.SeedContainer(sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: c.name},
				Image: &runtimeapi.ImageSpec{Image: "busybox"}}, fake.Seeded{State: c.state, CreatedAt: t0.Add(-50*time.Minute + time.Duration(j)*time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			if err := n.rt.SetMemoryUsage(id, 10<<20); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				n.ids[c.name] = id
			}
		}
	}
	n.rt.InterceptAnswer(func(ctx context.Context, method string, req, resp proto.Message, err error) (proto.Message, error) {
		now := n.clock.Now().UnixNano()
		if r, ok := resp.(*runtimeapi.ImageFsInfoResponse); ok && err == nil {
			r.ImageFilesystems[0].Timestamp = now
			r.ImageFilesystems[0].UsedBytes.Value, r.ImageFilesystems[0].InodesUsed.Value = 5000, 2
			return r, nil
		}
		r, ok := resp.(*runtimeapi.ListPodSandboxStatsResponse)
		if !ok || err != nil {
			return resp, err
		}
		for _, sb := range r.Stats {
			sb.Linux.Memory.Timestamp = now
			var podCPU uint64
			for _, c := range sb.Linux.Containers {
				name := c.Attributes.Metadata.Name
				c.Memory.Timestamp, c.WritableLayer.Timestamp = now, now
				c.Memory.RssBytes = &runtimeapi.UInt64Value{Value: 4 << 20}
				c.Memory.PageFaults = &runtimeapi.UInt64Value{Value: 77}
				c.Memory.MajorPageFaults = &runtimeapi.UInt64Value{Value: 1}
				c.WritableLayer.UsedBytes.Value, c.WritableLayer.InodesUsed.Value = 8192, 3
				if n.noCPU[name] {
					c.Cpu = nil
					continue
				}
				c.Cpu = &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: n.cpu[name]}}
				if v, ok := n.nanoCores[name]; ok {
					c.Cpu.UsageNanoCores = &runtimeapi.UInt64Value{Value: v}
				}
				podCPU += n.cpu[name]
			}
			sb.Linux.Cpu = &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: podCPU}}
			sb.Linux.Process = &runtimeapi.ProcessUsage{Timestamp: now, ProcessCount: &runtimeapi.UInt64Value{Value: 3}}
			sb.Linux.Network = &runtimeapi.NetworkUsage{Timestamp: now,
				DefaultInterface: &runtimeapi.NetworkInterfaceUsage{Name: "eth0", RxBytes: &runtimeapi.UInt64Value{Value: 100}, TxBytes: &runtimeapi.UInt64Value{Value: 200}},
				Interfaces:       []*runtimeapi.NetworkInterfaceUsage{{Name: "eth0", RxBytes: &runtimeapi.UInt64Value{Value: 100}, TxBytes: &runtimeapi.UInt64Value{Value: 200}}}}
		}
		return r, nil
	})
	return n
}

func (n *node) provider(opts ...stats.Option) *stats.Provider {
	fs := map[string]stats.FsUsage{
		n.rootDir: {CapacityBytes: 100 << 30, AvailableBytes: 50 << 30, UsedBytes: 45 << 30, Inodes: 1000, InodesFree: 900},
		"/images": {CapacityBytes: 200 << 30, AvailableBytes: 100 << 30, UsedBytes: 90 << 30, Inodes: 2000, InodesFree: 1000},
	}
	base := []stats.Option{stats.WithNodeName("node-1"), stats.WithClock(n.clock), stats.WithProcDir(n.proc),
		stats.WithRootDir(n.rootDir), stats.WithPodLogsDir(n.logsDir), stats.WithCgroupDir(n.cgroup),
		stats.WithStatfs(func(path string) (stats.FsUsage, error) {
			u, ok := fs[path]
			if !ok {
				return u, errNoFs
			}
			return u, nil
		})}
	return stats.New(n.rt, n.rt, append(base, opts...)...)
}

func metaTime(t time.Time) metav1.Time { return metav1.NewTime(t) }
