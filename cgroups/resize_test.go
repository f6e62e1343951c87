package cgroups

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/criconfig"
)

func TestCPUSharesFromWeight(t *testing.T) {
	t.Parallel()
	// kubelet's TestCpuWeightToCPUShares.
	for weight, shares := range map[uint64]uint64{1: 2, 2: 28, 3: 54, 4: 80, 245: 6398, 10000: 262144} {
		if got := CPUSharesFromWeight(weight); got != shares {
			t.Errorf("CPUSharesFromWeight(%d) = %d, want %d", weight, got, shares)
		}
	}
}

func TestResizeSteps(t *testing.T) {
	t.Parallel()
	for _, l := range layouts {
		t.Run(l.String(), func(t *testing.T) {
			t.Parallel()
			m, mfs := newTestManager(t, l, criconfig.Node{})
			ctx := context.Background()
			if err := m.EnsureQoS(ctx); err != nil {
				t.Fatal(err)
			}
			pod := podWith("rs", rr(req("250m", "64Mi"), req("1", "128Mi")))
			if err := m.EnsurePod(ctx, pod); err != nil {
				t.Fatal(err)
			}
			read := func() ResourceConfig {
				t.Helper()
				rc, err := m.CgroupConfig(ctx, mustPodName(t, m, pod))
				if err != nil {
					t.Fatal(err)
				}
				return rc
			}
			shares := uint64(256)
			if l.v2 {
				shares = CPUSharesFromWeight(CPUWeight(256))
			}
			want := ResourceConfig{CPUShares: u64(shares), CPUQuota: i64(100000), CPUPeriod: u64(100000), Memory: i64(128 * mi)}
			if diff := cmp.Diff(want, read()); diff != "" {
				t.Fatalf("CgroupConfig after EnsurePod (-want +got):\n%s", diff)
			}

			resized := pod.DeepCopy()
			resized.Spec.Containers[0].Resources = rr(req("500m", "96Mi"), req("2", "256Mi"))
			// Limit first: quota changes, shares do not.
			if err := m.UpdatePodResource(ctx, resized, corev1.ResourceCPU, true); err != nil {
				t.Fatal(err)
			}
			want.CPUQuota = i64(200000)
			if diff := cmp.Diff(want, read()); diff != "" {
				t.Errorf("after the CPU limit step (-want +got):\n%s", diff)
			}
			if err := m.UpdatePodResource(ctx, resized, corev1.ResourceCPU, false); err != nil {
				t.Fatal(err)
			}
			want.CPUShares = u64(512)
			if l.v2 {
				want.CPUShares = u64(CPUSharesFromWeight(CPUWeight(512)))
			}
			if diff := cmp.Diff(want, read()); diff != "" {
				t.Errorf("after the CPU request step (-want +got):\n%s", diff)
			}
			// The memory request writes nothing; the limit does.
			if err := m.UpdatePodResource(ctx, resized, corev1.ResourceMemory, false); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, read()); diff != "" {
				t.Errorf("after the memory request step (-want +got):\n%s", diff)
			}
			if err := m.UpdatePodResource(ctx, resized, corev1.ResourceMemory, true); err != nil {
				t.Fatal(err)
			}
			want.Memory = i64(256 * mi)
			if diff := cmp.Diff(want, read()); diff != "" {
				t.Errorf("after the memory limit step (-want +got):\n%s", diff)
			}
			if err := m.UpdatePodResource(ctx, resized, corev1.ResourceEphemeralStorage, true); err == nil {
				t.Error("resize of ephemeral-storage accepted")
			}

			usage := "memory.usage_in_bytes"
			if l.v2 {
				usage = "memory.current"
			}
			if err := mfs.WriteFile(l.dir("memory", "/kubepods/burstable/podrs/"+usage), "4096"); err != nil {
				t.Fatal(err)
			}
			if u, err := m.MemoryUsage(ctx, mustPodName(t, m, pod)); err != nil || u != 4096 {
				t.Errorf("MemoryUsage = %d, %v; want 4096", u, err)
			}
		})
	}
}

// TestCgroupConfigUnlimited: kubelet reads v2's "max" as -1.
func TestCgroupConfigUnlimited(t *testing.T) {
	t.Parallel()
	m, _ := newTestManager(t, layout{v2: true}, criconfig.Node{})
	ctx := context.Background()
	if err := m.EnsureQoS(ctx); err != nil {
		t.Fatal(err)
	}
	pod := podWith("be", rr(nil, nil))
	if err := m.EnsurePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	rc, err := m.CgroupConfig(ctx, mustPodName(t, m, pod))
	if err != nil {
		t.Fatal(err)
	}
	want := ResourceConfig{CPUShares: u64(2), CPUQuota: i64(-1), CPUPeriod: u64(100000), Memory: i64(-1)}
	if diff := cmp.Diff(want, rc); diff != "" {
		t.Errorf("CgroupConfig of a BestEffort pod (-want +got):\n%s", diff)
	}
}

// GrowPod raises what grows (the CPU quota here) and leaves what shrinks
// (the memory limit) for UpdatePod.
func TestGrowPod(t *testing.T) {
	t.Parallel()
	for _, l := range layouts {
		t.Run(l.String(), func(t *testing.T) {
			t.Parallel()
			m, _ := newTestManager(t, l, criconfig.Node{})
			ctx := context.Background()
			if err := m.EnsureQoS(ctx); err != nil {
				t.Fatal(err)
			}
			pod := podWith("grow", rr(req("250m", "64Mi"), req("1", "128Mi")))
			if err := m.EnsurePod(ctx, pod); err != nil {
				t.Fatal(err)
			}
			read := func() ResourceConfig {
				t.Helper()
				rc, err := m.CgroupConfig(ctx, mustPodName(t, m, pod))
				if err != nil {
					t.Fatal(err)
				}
				return rc
			}
			before := read()
			resized := pod.DeepCopy()
			resized.Spec.Containers[0].Resources = rr(req("250m", "64Mi"), req("2", "96Mi"))
			if err := m.GrowPod(ctx, resized); err != nil {
				t.Fatal(err)
			}
			want := before
			want.CPUQuota = i64(200000)
			if diff := cmp.Diff(want, read()); diff != "" {
				t.Fatalf("after GrowPod (-want +got):\n%s", diff)
			}
			if err := m.UpdatePod(ctx, resized); err != nil {
				t.Fatal(err)
			}
			want.Memory = i64(96 * mi)
			if diff := cmp.Diff(want, read()); diff != "" {
				t.Fatalf("after UpdatePod (-want +got):\n%s", diff)
			}
			// Nothing grows: nothing changes.
			if err := m.GrowPod(ctx, resized); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, read()); diff != "" {
				t.Fatalf("after a second GrowPod (-want +got):\n%s", diff)
			}
		})
	}
}

// countingFS counts the cgroup files read and written below a prefix.
type countingFS struct {
	FS
	prefix        string
	reads, writes atomic.Int64
}

func (c *countingFS) ReadFile(file string) (string, error) {
	if strings.Contains(file, c.prefix) {
		c.reads.Add(1)
	}
	return c.FS.ReadFile(file)
}

func (c *countingFS) WriteFile(file, value string) error {
	if strings.Contains(file, c.prefix) {
		c.writes.Add(1)
	}
	return c.FS.WriteFile(file, value)
}

// UpdatePod and GrowPod run at every sync of every pod: a pod cgroup whose
// values are known to be the wanted ones (made or last written so) is
// neither read nor written again; a resize reads and writes it once, and
// a step of UpdatePodResource or a removal forgets what was known.
func TestPodCgroupReadOnlyOnResize(t *testing.T) {
	t.Parallel()
	for _, l := range layouts {
		t.Run(l.String(), func(t *testing.T) {
			t.Parallel()
			mfs := NewMemFS(l.v2, twoMi)
			tree := mfs.Tree()
			pod := podWith("steady", rr(req("250m", "64Mi"), req("1", "128Mi")))
			cfs := &countingFS{FS: tree.FS, prefix: string(pod.UID)}
			tree.FS = cfs
			m, err := NewManager(tree, criconfig.Node{HugePageSizes: []int64{twoMi}}, WithKill(mfs.Kill), WithNodeAllocatable(testAllocatable()))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := m.EnsureQoS(ctx); err != nil {
				t.Fatal(err)
			}
			if err := m.EnsurePod(ctx, pod); err != nil {
				t.Fatal(err)
			}
			sync := func(p *corev1.Pod) (reads, writes int64) {
				t.Helper()
				r0, w0 := cfs.reads.Load(), cfs.writes.Load()
				if err := m.GrowPod(ctx, p); err != nil {
					t.Fatal(err)
				}
				if err := m.UpdatePod(ctx, p); err != nil {
					t.Fatal(err)
				}
				return cfs.reads.Load() - r0, cfs.writes.Load() - w0
			}
			for i := range 3 {
				if r, w := sync(pod); r != 0 || w != 0 {
					t.Fatalf("sync %d of an unchanged pod: %d reads, %d writes of its cgroup, want none", i, r, w)
				}
			}
			resized := pod.DeepCopy()
			resized.Spec.Containers[0].Resources = rr(req("250m", "64Mi"), req("2", "96Mi"))
			if r, w := sync(resized); r == 0 || w == 0 {
				t.Fatalf("a resize: %d reads, %d writes, want both", r, w)
			}
			rc, err := m.CgroupConfig(ctx, mustPodName(t, m, resized))
			if err != nil {
				t.Fatal(err)
			}
			if rc.CPUQuota == nil || *rc.CPUQuota != 200000 || rc.Memory == nil || *rc.Memory != 96*mi {
				t.Fatalf("after the resize: quota %v, memory %v", rc.CPUQuota, rc.Memory)
			}
			if r, w := sync(resized); r != 0 || w != 0 {
				t.Fatalf("the resized pod's next sync: %d reads, %d writes", r, w)
			}
			// A step forgets: the next UpdatePod reads back (and writes
			// what the step left out).
			if err := m.UpdatePodResource(ctx, pod, corev1.ResourceCPU, true); err != nil {
				t.Fatal(err)
			}
			if r, _ := sync(resized); r == 0 {
				t.Fatal("after a step: UpdatePod read nothing")
			}
			// A new manager (an agent restart) knows nothing: it reads
			// back once (on cgroup v2 it writes too: cpu.weight does not
			// convert back to the same shares).
			m2, err := NewManager(tree, criconfig.Node{HugePageSizes: []int64{twoMi}}, WithKill(mfs.Kill), WithNodeAllocatable(testAllocatable()))
			if err != nil {
				t.Fatal(err)
			}
			m = m2
			if r, w := sync(resized); r == 0 || (w != 0 && !l.v2) {
				t.Fatalf("a restarted manager's first sync: %d reads, %d writes", r, w)
			}
			if r, w := sync(resized); r != 0 || w != 0 {
				t.Fatalf("its second: %d reads, %d writes", r, w)
			}
		})
	}
}
