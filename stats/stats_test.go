package stats_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podstart/podstart/stats"
)

func p[T any](v T) *T { return &v }

// du is what du says of a file, as kubelet's volume.NewMetricsDu.
func du(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return uint64(fi.Sys().(*syscall.Stat_t).Blocks) * 512
}

// The whole Summary of a one-pod node, field by field.
func TestGet(t *testing.T) {
	t.Parallel()
	n := newNode(t, 1)
	writeFiles(t, n.logsDir, map[string]string{"default_web_uid-web/app/0.log": string(make([]byte, 5000))})
	writeFiles(t, n.rootDir, map[string]string{"pods/uid-web/etc-hosts": "127.0.0.1 localhost\n"})
	logDU := du(t, filepath.Join(n.logsDir, "default_web_uid-web/app/0.log"))
	hostsDU := du(t, filepath.Join(n.rootDir, "pods/uid-web/etc-hosts"))
	n.cpu["app"] = 2e9
	sum, err := n.provider().Get(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(t0)
	nodefs := func(used, inodesUsed *uint64, at metav1.Time) *statsapi.FsStats {
		return &statsapi.FsStats{Time: at, CapacityBytes: p[uint64](100 << 30), AvailableBytes: p[uint64](50 << 30),
			Inodes: p[uint64](1000), InodesFree: p[uint64](900), UsedBytes: used, InodesUsed: inodesUsed}
	}
	imagefs := &statsapi.FsStats{Time: now, CapacityBytes: p[uint64](200 << 30), AvailableBytes: p[uint64](100 << 30),
		Inodes: p[uint64](2000), InodesFree: p[uint64](1000), UsedBytes: p[uint64](5000), InodesUsed: p[uint64](2)}
	eth0 := statsapi.InterfaceStats{Name: "eth0", RxBytes: p[uint64](100), TxBytes: p[uint64](200)}
	want := &statsapi.Summary{
		Node: statsapi.NodeStats{
			NodeName:  "node-1",
			StartTime: metav1.NewTime(time.Unix(1767000000, 0)),
			CPU:       &statsapi.CPUStats{Time: now, UsageCoreNanoSeconds: p[uint64](1333 * 1e7)}, // user+nice+system+irq+softirq ticks
			Memory: &statsapi.MemoryStats{Time: now, UsageBytes: p[uint64](1021313024), WorkingSetBytes: p[uint64](916455424),
				AvailableBytes: p[uint64](157286400)},
			Swap: &statsapi.SwapStats{Time: now, SwapUsageBytes: p[uint64](1 << 20), SwapAvailableBytes: p[uint64](1 << 20)},
			Network: &statsapi.NetworkStats{Time: now,
				InterfaceStats: statsapi.InterfaceStats{Name: "eth0", RxBytes: p[uint64](1000), RxErrors: p[uint64](1), TxBytes: p[uint64](2000), TxErrors: p[uint64](2)},
				Interfaces:     []statsapi.InterfaceStats{{Name: "eth0", RxBytes: p[uint64](1000), RxErrors: p[uint64](1), TxBytes: p[uint64](2000), TxErrors: p[uint64](2)}}},
			Fs:      nodefs(p[uint64](45<<30), p[uint64](100), now),
			Runtime: &statsapi.RuntimeStats{ImageFs: imagefs, ContainerFs: imagefs},
			Rlimit:  &statsapi.RlimitStats{Time: now, MaxPID: p[int64](127000), NumOfRunningProcesses: p[int64](3518)},
		},
		Pods: []statsapi.PodStats{{
			PodRef:    statsapi.PodReference{Name: "web", Namespace: "default", UID: "uid-web"},
			StartTime: metav1.NewTime(t0.Add(-time.Hour)),
			Containers: []statsapi.ContainerStats{{
				Name:      "app",
				StartTime: metav1.NewTime(t0.Add(-50 * time.Minute)),
				CPU:       &statsapi.CPUStats{Time: now, UsageCoreNanoSeconds: p[uint64](2e9)}, // one sample: no rate yet
				Memory: &statsapi.MemoryStats{Time: now, UsageBytes: p[uint64](10 << 20), WorkingSetBytes: p[uint64](10 << 20),
					RSSBytes: p[uint64](4 << 20), PageFaults: p[uint64](77), MajorPageFaults: p[uint64](1)},
				Swap: &statsapi.SwapStats{Time: now, SwapUsageBytes: p[uint64](0), SwapAvailableBytes: p[uint64](0)}, // none in CRI: kubelet's zeros
				IO:   &statsapi.IOStats{Time: now},                                                                   // kubelet's makeContainerStats: always, PSI only where known
				Rootfs: &statsapi.FsStats{Time: now, CapacityBytes: p[uint64](200 << 30), AvailableBytes: p[uint64](100 << 30),
					Inodes: p[uint64](2000), InodesFree: p[uint64](1000), UsedBytes: p[uint64](8192), InodesUsed: p[uint64](3)},
				Logs: nodefs(p(logDU), p[uint64](1), now),
			}},
			CPU:              &statsapi.CPUStats{Time: now, UsageCoreNanoSeconds: p[uint64](2e9)},
			Memory:           &statsapi.MemoryStats{Time: now, UsageBytes: p[uint64](20 << 20), WorkingSetBytes: p[uint64](20 << 20)},
			Network:          &statsapi.NetworkStats{Time: now, InterfaceStats: eth0, Interfaces: []statsapi.InterfaceStats{eth0}},
			ProcessStats:     &statsapi.ProcessStats{ProcessCount: p[uint64](3)},
			EphemeralStorage: nodefs(p(8192+logDU+hostsDU), p[uint64](3+1+1), now),
		}},
	}
	if diff := cmp.Diff(want, sum); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
}

// usageNanoCores as kubelet's CRI stats provider: from two kept samples,
// the runtime's own when it gives one, zeros when CRI has no CPU.
func TestContainerCPU(t *testing.T) {
	t.Parallel()
	type step struct {
		after     time.Duration
		usage     uint64 // app's cumulative CPU
		nanoCores *uint64
		noCPU     bool
		update    bool
		want      *statsapi.CPUStats // app's; Time filled from the clock
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{name: "two samples give the rate", steps: []step{
			{usage: 2e9, update: true, want: &statsapi.CPUStats{UsageCoreNanoSeconds: p[uint64](2e9)}},
			{after: 10 * time.Second, usage: 7e9, update: true, want: &statsapi.CPUStats{UsageCoreNanoSeconds: p[uint64](7e9), UsageNanoCores: p[uint64](5e8)}},
		}},
		{name: "without update the last rate, no new sample", steps: []step{
			{usage: 0, update: true, want: &statsapi.CPUStats{UsageCoreNanoSeconds: p[uint64](0)}},
			{after: 4 * time.Second, usage: 1e9, update: false, want: &statsapi.CPUStats{UsageCoreNanoSeconds: p[uint64](1e9)}},
			{after: 4 * time.Second, usage: 2e9, update: true, want: &statsapi.CPUStats{UsageCoreNanoSeconds: p[uint64](2e9), UsageNanoCores: p[uint64](25e7)}},
			{after: 1 * time.Second, usage: 9e9, update: false, want: &statsapi.CPUStats{UsageCoreNanoSeconds: p[uint64](9e9), UsageNanoCores: p[uint64](25e7)}},
		}},
		{name: "a counter that went back starts over", steps: []step{
			{usage: 5e9, update: true, want: &statsapi.CPUStats{UsageCoreNanoSeconds: p[uint64](5e9)}},
			{after: time.Second, usage: 1e9, update: true, want: &statsapi.CPUStats{UsageCoreNanoSeconds: p[uint64](1e9)}},
		}},
		{name: "the runtime's rate wins", steps: []step{
			{usage: 5e9, nanoCores: p[uint64](123), update: true, want: &statsapi.CPUStats{UsageCoreNanoSeconds: p[uint64](5e9), UsageNanoCores: p[uint64](123)}},
		}},
		{name: "no CPU in CRI reads 0 now", steps: []step{
			{noCPU: true, update: true, want: &statsapi.CPUStats{UsageCoreNanoSeconds: p[uint64](0), UsageNanoCores: p[uint64](0)}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := newNode(t, 1)
			prov := n.provider()
			for i, s := range tc.steps {
				n.clock.Step(s.after)
				n.cpu["app"], n.noCPU["app"] = s.usage, s.noCPU
				delete(n.nanoCores, "app")
				if s.nanoCores != nil {
					n.nanoCores["app"] = *s.nanoCores
				}
				sum, err := prov.Get(context.Background(), s.update)
				if err != nil {
					t.Fatal(err)
				}
				want := *s.want
				want.Time = metav1.NewTime(n.clock.Now())
				if diff := cmp.Diff(&want, sum.Pods[0].Containers[0].CPU); diff != "" {
					t.Errorf("step %d: app's CPU (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

// The node's rate comes from /proc/stat samples in the same way.
func TestNodeCPURate(t *testing.T) {
	t.Parallel()
	n := newNode(t, 0)
	prov := n.provider()
	if sum, err := prov.Get(context.Background(), true); err != nil || sum.Node.CPU.UsageNanoCores != nil {
		t.Fatalf("first sample: %v, %v", sum.Node.CPU, err)
	}
	// 200 more ticks of user time (2 s of CPU) in 4 s: half a core
	writeFiles(t, n.proc, map[string]string{"stat": "cpu  1200 20 300 9000 50 6 7 80 0 0\nbtime 1767000000\n"})
	n.clock.Step(4 * time.Second)
	sum, err := prov.Get(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if got := sum.Node.CPU; *got.UsageCoreNanoSeconds != 1533*1e7 || got.UsageNanoCores == nil || *got.UsageNanoCores != 5e8 {
		t.Errorf("node CPU %d ns, %v nanocores; want 15.33 s and 5e8", *got.UsageCoreNanoSeconds, got.UsageNanoCores)
	}
}

// What cannot be read is nil, not 0; CRI errors fail the Summary.
func TestUnknownIsNil(t *testing.T) {
	t.Parallel()
	n := newNode(t, 1)
	prov := stats.New(n.rt, nil, stats.WithProcDir(t.TempDir()), stats.WithCgroupDir(t.TempDir()), stats.WithRootDir(t.TempDir()), stats.WithPodLogsDir(t.TempDir()),
		stats.WithStatfs(func(string) (stats.FsUsage, error) { return stats.FsUsage{}, errNoFs }))
	sum, err := prov.Get(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	nd := sum.Node
	if nd.CPU != nil || nd.Memory != nil || nd.Swap != nil || nd.Network != nil || nd.Fs != nil || nd.Runtime != nil || nd.Rlimit != nil || !nd.StartTime.IsZero() {
		t.Errorf("node parts from nothing: %+v", nd)
	}
	c := sum.Pods[0].Containers[0]
	if c.Logs != nil || c.Rootfs.CapacityBytes != nil || c.Memory.AvailableBytes != nil {
		t.Errorf("container parts from nothing: logs %v rootfs %+v", c.Logs, c.Rootfs)
	}
	if e := sum.Pods[0].EphemeralStorage; e.CapacityBytes != nil || *e.UsedBytes != 8192 || sum.Pods[0].VolumeStats != nil {
		t.Errorf("ephemeral storage %+v, volumes %v", e, sum.Pods[0].VolumeStats)
	}
	n.rt.FailNext("ListPodSandboxStats", 1, errNoFs)
	if _, err := prov.Get(context.Background(), false); err == nil {
		t.Error("a failed ListPodSandboxStats gave no error")
	}
}
