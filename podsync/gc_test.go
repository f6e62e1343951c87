package podsync_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/mounts"
	fakemount "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

// lossy passes calls through to the runtime, then loses the answer of the
// next call of one method: lost (the connection died) or hung (the caller
// waits until its context ends). hung is closed when a hung call waits.
type lossy struct {
	runtime.Runtime
	method string
	hang   bool
	lost   int
	hung   chan struct{}
}

func (l *lossy) lose(ctx context.Context, method string) error {
	if l.method != method || l.lost > 0 {
		return nil
	}
	l.lost++
	if l.hang {
		close(l.hung)
		<-ctx.Done()
		return ctx.Err()
	}
	return status.Error(codes.Unavailable, "connection reset by peer")
}

func (l *lossy) CreateContainer(ctx context.Context, sb string, cfg *runtimeapi.ContainerConfig, sbc *runtimeapi.PodSandboxConfig) (string, error) {
	id, err := l.Runtime.CreateContainer(ctx, sb, cfg, sbc)
	if err == nil {
		if lerr := l.lose(ctx, "CreateContainer"); lerr != nil {
			return "", lerr
		}
	}
	return id, err
}

func (l *lossy) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	id, err := l.Runtime.RunPodSandbox(ctx, cfg, handler)
	if err == nil {
		if lerr := l.lose(ctx, "RunPodSandbox"); lerr != nil {
			return "", lerr
		}
	}
	return id, err
}

func appPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways,
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1", TerminationMessagePath: "/dev/termination-log"}}},
	}
}

// instances counts the runtime's container instances and sandboxes of a pod.
func instances(t *testing.T, f *fake.Runtime, pod *corev1.Pod) (containers []*runtimeapi.Container, sandboxes []*runtimeapi.PodSandbox) {
	t.Helper()
	pods, err := podsync.ListPods(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.UID == pod.UID {
			return p.Containers, p.Sandboxes
		}
	}
	return nil, nil
}

func restartCount(t *testing.T, f *fake.Runtime, id string) string {
	resp, err := f.ContainerStatus(context.Background(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Status.Annotations[podsync.AnnotationContainerRestartCount]
}

// A lost or hung answer leaves an instance, or a sandbox, the caller never
// heard of. After the next sync and one collection pass exactly one
// instance and one sandbox remain, with true restart counts.
func TestLostAnswers(t *testing.T) {
	cases := []struct {
		name, method string
		hang, kill   bool
	}{
		{"create-lost", "CreateContainer", false, false},
		{"create-hung", "CreateContainer", true, false},
		{"sandbox-lost", "RunPodSandbox", false, false},
		{"sandbox-lost-then-runtime-died", "RunPodSandbox", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, false, nil)
			l := &lossy{Runtime: h.fake, method: c.method, hang: c.hang, hung: make(chan struct{})}
			h.rt = l
			h.syncer = podsync.NewSyncer(l, h.ims, h.opts...)
			pod := appPod("lost")
			// The hung call's caller gives up once the call hangs (a
			// counted event), not after a time: a deadline could end the
			// sync before it reaches the call, in its image pull (seen
			// beside two CPU hogs with 50 ms).
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				select {
				case <-l.hung:
					cancel()
				case <-ctx.Done():
				}
			}()
			st, _ := h.syncer.Status(ctx, pod)
			if err := h.syncer.SyncPod(ctx, pod, st, nil).Error(); err == nil {
				t.Fatal("first sync did not fail")
			}
			cancel()
			if l.lost != 1 {
				t.Fatalf("the first sync did not reach %s", c.method)
			}
			if c.kill {
				_, sbs := instances(t, h.fake, pod)
				if err := h.fake.KillSandbox(sbs[0].Id); err != nil {
					t.Fatal(err)
				}
			}
			h.converge(pod, 3)
			if err := h.syncer.GarbageCollect(context.Background(), podsync.DefaultGCPolicy, nil); err != nil {
				t.Fatal(err)
			}
			cs, sbs := instances(t, h.fake, pod)
			if len(cs) != 1 || len(sbs) != 1 {
				t.Fatalf("%d instances and %d sandboxes remain, want 1 and 1", len(cs), len(sbs))
			}
			if cs[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING || cs[0].PodSandboxId != sbs[0].Id {
				t.Fatalf("the instance left is %s in sandbox %s, want running in %s", cs[0].State, cs[0].PodSandboxId, sbs[0].Id)
			}
			if n := restartCount(t, h.fake, cs[0].Id); n != "0" {
				t.Fatalf("restart count %s, want 0: the lost instance never ran", n)
			}
		})
	}
}

// Five crashes leave six instances; a collection pass keeps the running
// one and the newest dead one, and removes the others' log files.
func TestGarbageCollectDeadInstances(t *testing.T) {
	h := newHarness(t, false, nil)
	pod := appPod("crashy")
	h.converge(pod, 3)
	for i := 0; i < 5; i++ {
		cs, _ := instances(t, h.fake, pod)
		if err := h.fake.ExitContainer(cs[0].Id, fake.Exit{Code: 1}); err != nil {
			t.Fatal(err)
		}
		h.clk.Step(10 * time.Minute)
		h.converge(pod, 3)
	}
	cs, _ := instances(t, h.fake, pod)
	if len(cs) != 6 {
		t.Fatalf("%d instances before collection, want 6", len(cs))
	}
	logs := map[string]string{}
	for _, c := range cs {
		resp, _ := h.fake.ContainerStatus(context.Background(), c.Id, false)
		logs[c.Id] = resp.Status.LogPath
		if err := os.MkdirAll(filepath.Dir(resp.Status.LogPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(resp.Status.LogPath, []byte("log\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Too young to collect under a 1 h minimum age.
	if err := h.syncer.GarbageCollect(context.Background(), podsync.GCPolicy{MinAge: time.Hour, MaxPerPodContainer: 1, MaxContainers: -1}, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := instances(t, h.fake, pod); len(got) != 6 {
		t.Fatalf("min age ignored: %d instances left", len(got))
	}
	if err := h.syncer.GarbageCollect(context.Background(), podsync.DefaultGCPolicy, nil); err != nil {
		t.Fatal(err)
	}
	left, _ := instances(t, h.fake, pod)
	if len(left) != 2 || left[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING || left[1].State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatalf("left %v, want the running instance and the newest dead one", left)
	}
	kept := map[string]bool{left[0].Id: true, left[1].Id: true}
	for id, path := range logs {
		_, err := os.Stat(path)
		if kept[id] != (err == nil) {
			t.Errorf("log of %s (kept %v): stat err %v", id, kept[id], err)
		}
	}
	// The next start counts on from the dead instance kept.
	if err := h.fake.ExitContainer(left[0].Id, fake.Exit{Code: 1}); err != nil {
		t.Fatal(err)
	}
	h.clk.Step(10 * time.Minute)
	h.converge(pod, 3)
	left, _ = instances(t, h.fake, pod)
	if n := restartCount(t, h.fake, left[0].Id); n != "6" {
		t.Fatalf("restart count %s after GC, want 6", n)
	}
}

// Pods the caller no longer wants go entirely: containers, sandboxes, pod
// and log directories, and directories of pods the runtime forgot.
func TestGarbageCollectUnwantedPods(t *testing.T) {
	h := newHarness(t, false, nil)
	keep, drop1, drop2 := appPod("keep"), appPod("drop1"), appPod("drop2")
	for _, p := range []*corev1.Pod{keep, drop1, drop2} {
		h.converge(p, 3)
	}
	stray := filepath.Join(h.root, "pods", "uid-stray", "volumes")
	strayLog := filepath.Join(h.root, "logs", "shop_stray_uid-stray")
	for _, d := range []string{stray, strayLog} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pods, err := podsync.ListPods(context.Background(), h.fake)
	if err != nil || len(pods) != 3 || pods[0].Name != "drop1" || pods[2].Name != "keep" {
		t.Fatalf("ListPods: %v %v", pods, err)
	}
	h.fake.ResetCalls()
	wanted := func(uid types.UID) bool { return uid == keep.UID }
	if err := h.syncer.GarbageCollect(context.Background(), podsync.DefaultGCPolicy, wanted); err != nil {
		t.Fatal(err)
	}
	if h.fake.CallCount("StopContainer") != 2 {
		t.Errorf("%d StopContainer calls, want the 2 unwanted running containers", h.fake.CallCount("StopContainer"))
	}
	pods, _ = podsync.ListPods(context.Background(), h.fake)
	if len(pods) != 1 || pods[0].UID != keep.UID || len(pods[0].Containers) != 1 {
		t.Fatalf("left on the runtime: %+v", pods)
	}
	for _, d := range []string{
		filepath.Join(h.root, "pods", "uid-drop1"), filepath.Join(h.root, "logs", "shop_drop1_uid-drop1"),
		filepath.Join(h.root, "pods", "uid-drop2"), filepath.Join(h.root, "pods", "uid-stray"), strayLog,
	} {
		if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s remains (%v)", d, err)
		}
	}
	for _, d := range []string{filepath.Join(h.root, "pods", "uid-keep"), filepath.Join(h.root, "logs", "shop_keep_uid-keep")} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("wanted pod's %s is gone: %v", d, err)
		}
	}
}

// A pod directory with a mount under it is kept, whatever else goes.
func TestRemovePodKeepsMountedDir(t *testing.T) {
	mounter := fakemount.New()
	h := newHarness(t, false, nil, podsync.WithMounter(mounter))
	pod := appPod("mounted")
	h.converge(pod, 3)
	dir := filepath.Join(h.root, "pods", string(pod.UID))
	data := filepath.Join(dir, "volumes", "kubernetes.io~csi", "data", "mount")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	mounter.Add(mounts.MountPoint{Path: "/", FSType: "ext4"})
	mounter.Add(mounts.MountPoint{Path: data, FSType: "ext4"})
	err := h.syncer.RemovePod(context.Background(), pod.UID)
	if !errors.Is(err, podsync.ErrPodDirInUse) {
		t.Fatalf("RemovePod: %v, want ErrPodDirInUse", err)
	}
	if _, err := os.Stat(data); err != nil {
		t.Fatalf("mounted directory removed: %v", err)
	}
	if cs, sbs := instances(t, h.fake, pod); len(cs)+len(sbs) != 0 {
		t.Fatalf("runtime still holds %d containers, %d sandboxes", len(cs), len(sbs))
	}
	if err := mounter.Unmount(data); err != nil {
		t.Fatal(err)
	}
	if err := h.syncer.RemovePod(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pod dir remains: %v", err)
	}
}

// RemovePod tears down the tmpfs of memory-backed volumes (kubelet's
// TearDown), stacked ones included, and keeps the directory for anything
// else: a tmpfs elsewhere, another file system at a volume's path, a
// tmpfs that will not unmount.
func TestRemovePodUnmountsMemoryVolumes(t *testing.T) {
	vol := func(dir, plugin, name string) string { return filepath.Join(dir, "volumes", plugin, name) }
	tests := []struct {
		name    string
		mounts  func(dir string) []mounts.MountPoint
		busy    func(dir string) string // a tmpfs whose unmount fails
		wantErr error
		left    func(dir string) []string // mounts left under dir
	}{
		{
			name: "every memory-backed plugin, one stacked twice",
			mounts: func(dir string) []mounts.MountPoint {
				return []mounts.MountPoint{
					{Path: vol(dir, "kubernetes.io~secret", "token"), FSType: "tmpfs"},
					{Path: vol(dir, "kubernetes.io~secret", "token"), FSType: "tmpfs"},
					{Path: vol(dir, "kubernetes.io~projected", "kube-api-access"), FSType: "tmpfs"},
					{Path: vol(dir, "kubernetes.io~downward-api", "info"), FSType: "tmpfs"},
					{Path: vol(dir, "kubernetes.io~empty-dir", "cache"), FSType: "tmpfs"},
				}
			},
		},
		{
			name: "a tmpfs not at a volume's path is kept",
			mounts: func(dir string) []mounts.MountPoint {
				return []mounts.MountPoint{
					{Path: vol(dir, "kubernetes.io~secret", "token"), FSType: "tmpfs"},
					{Path: filepath.Join(vol(dir, "kubernetes.io~empty-dir", "cache"), "inner"), FSType: "tmpfs"},
				}
			},
			wantErr: podsync.ErrPodDirInUse,
			left: func(dir string) []string {
				return []string{filepath.Join(vol(dir, "kubernetes.io~empty-dir", "cache"), "inner")}
			},
		},
		{
			name: "another file system at a volume's path is kept",
			mounts: func(dir string) []mounts.MountPoint {
				return []mounts.MountPoint{{Path: vol(dir, "kubernetes.io~empty-dir", "cache"), FSType: "ext4"}}
			},
			wantErr: podsync.ErrPodDirInUse,
			left:    func(dir string) []string { return []string{vol(dir, "kubernetes.io~empty-dir", "cache")} },
		},
		{
			name: "a configMap volume is no tmpfs of podstart's",
			mounts: func(dir string) []mounts.MountPoint {
				return []mounts.MountPoint{{Path: vol(dir, "kubernetes.io~configmap", "conf"), FSType: "tmpfs"}}
			},
			wantErr: podsync.ErrPodDirInUse,
			left:    func(dir string) []string { return []string{vol(dir, "kubernetes.io~configmap", "conf")} },
		},
		{
			name: "a busy tmpfs is reported and kept",
			mounts: func(dir string) []mounts.MountPoint {
				return []mounts.MountPoint{
					{Path: vol(dir, "kubernetes.io~secret", "token"), FSType: "tmpfs"},
					{Path: vol(dir, "kubernetes.io~empty-dir", "cache"), FSType: "tmpfs"},
				}
			},
			busy:    func(dir string) string { return vol(dir, "kubernetes.io~empty-dir", "cache") },
			wantErr: syscall.EBUSY,
			left:    func(dir string) []string { return []string{vol(dir, "kubernetes.io~empty-dir", "cache")} },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mounter := fakemount.New()
			h := newHarness(t, false, nil, podsync.WithMounter(mounter))
			pod := appPod("memory")
			h.converge(pod, 3)
			dir := filepath.Join(h.root, "pods", string(pod.UID))
			mounter.Add(mounts.MountPoint{Path: "/", FSType: "ext4"})
			mounter.Add(mounts.MountPoint{Path: h.root, FSType: "tmpfs"}) // above the pod: not its
			for _, mp := range tt.mounts(dir) {
				if err := os.MkdirAll(mp.Path, 0o755); err != nil {
					t.Fatal(err)
				}
				mounter.Add(mp)
			}
			if tt.busy != nil {
				mounter.FailUnmount(tt.busy(dir), fmt.Errorf("unmount: %w", syscall.EBUSY))
			}
			err := h.syncer.RemovePod(context.Background(), pod.UID)
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("RemovePod: %v, want %v", err, tt.wantErr)
			}
			table, _ := mounter.List()
			var left []string
			for _, mp := range mounts.Under(table, dir) {
				left = append(left, mp.Path)
			}
			var want []string
			if tt.left != nil {
				want = tt.left(dir)
			}
			if fmt.Sprint(left) != fmt.Sprint(want) {
				t.Fatalf("left mounted %v, want %v", left, want)
			}
			_, statErr := os.Lstat(dir)
			if gone := errors.Is(statErr, os.ErrNotExist); gone != (tt.wantErr == nil) {
				t.Fatalf("pod dir gone: %v, want %v", gone, tt.wantErr == nil)
			}
			if _, err := os.Stat(h.root); err != nil {
				t.Fatalf("root dir: %v", err)
			}
		})
	}
}

// Garbage collection of a pod no longer wanted tears down its memory
// volumes too, also when the runtime no longer knows the pod (an agent
// that crashed mid-setup).
func TestGarbageCollectUnmountsOrphanMemoryVolumes(t *testing.T) {
	mounter := fakemount.New()
	h := newHarness(t, false, nil, podsync.WithMounter(mounter))
	dir := filepath.Join(h.root, "pods", "uid-crashed")
	secret := filepath.Join(dir, "volumes", "kubernetes.io~secret", "token")
	if err := os.MkdirAll(secret, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := mounter.MountTmpfs(secret, 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := h.syncer.GarbageCollect(context.Background(), podsync.DefaultGCPolicy, func(types.UID) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if got := mounter.Tmpfs(); len(got) != 0 {
		t.Fatalf("left mounted: %v", got)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pod dir remains: %v", err)
	}
}

// A fresh pod with 2 init and 3 app containers, started by a Status and
// SyncPod loop, costs at most 1.2 times the bare sequence: the calls that
// change something, ImageStatus per container, and per sync one
// ListPodSandbox, one PodSandboxStatus and one ListContainers, plus one
// ContainerStatus per instance.
func TestCRICallsPerFreshPod(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			h := newHarness(t, tr.wire, []fake.Option{fake.WithStartFunc(exitInits(nil))})
			pod := demoPod()
			pod.Spec.InitContainers = []corev1.Container{pod.Spec.InitContainers[0], pod.Spec.InitContainers[2]}
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "third", Image: "nginx:1"})
			syncs := h.converge(pod, 10)
			total := len(h.fake.Calls())
			changes := 0
			for _, m := range []string{"RunPodSandbox", "PullImage", "ImageStatus", "CreateContainer", "StartContainer"} {
				changes += h.fake.CallCount(m)
			}
			statusRounds := h.fake.CallCount("ListPodSandbox")
			bare := changes + 1 + 3*statusRounds + 5
			t.Logf("%d syncs: %d CRI calls, bare sequence %d (%.2fx); by method: %v", syncs, total, bare, float64(total)/float64(bare), callsByMethod(h.fake))
			if float64(total) > 1.2*float64(bare) {
				t.Fatalf("%d CRI calls, more than 1.2 x the bare %d", total, bare)
			}
		})
	}
}

func callsByMethod(f *fake.Runtime) map[string]int {
	out := map[string]int{}
	for _, c := range f.Calls() {
		out[c.Method]++
	}
	return out
}

// A pod whose sandbox is no longer ready keeps the IPs it had, as
// kubelet's generic PLEG keeps them for the API status of an exited or
// killed pod; once nothing of the pod is left, they are gone.
func TestStatusKeepsIPsOfStoppedPod(t *testing.T) {
	h := newHarness(t, false, nil)
	pod := appPod("ips")
	h.converge(pod, 3)
	ctx := context.Background()
	st, err := h.syncer.Status(ctx, pod)
	if err != nil || len(st.IPs) == 0 {
		t.Fatalf("running pod's IPs %v, %v", st.IPs, err)
	}
	ips := st.IPs
	if err := h.syncer.KillPod(ctx, pod, st, nil).Error(); err != nil {
		t.Fatal(err)
	}
	if st, err = h.syncer.Status(ctx, pod); err != nil || len(st.SandboxStatuses) == 0 || fmt.Sprint(st.IPs) != fmt.Sprint(ips) {
		t.Fatalf("killed pod's IPs %v (sandboxes %d), want %v kept, %v", st.IPs, len(st.SandboxStatuses), ips, err)
	}
	if err := h.syncer.RemovePod(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if st, err = h.syncer.Status(ctx, pod); err != nil || len(st.IPs) != 0 {
		t.Fatalf("removed pod's IPs %v, %v", st.IPs, err)
	}
}
