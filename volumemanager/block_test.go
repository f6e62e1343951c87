package volumemanager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/podstart/podstart/csi"
	mountsfake "github.com/podstart/podstart/mounts/fake"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeBlock is a BlockPathHandler over the test's directory: symlinks are
// real, a "bind mount" is an empty file remembered as bound, a loop
// device a name remembered for its backing path.
type fakeBlock struct {
	mu    sync.Mutex
	calls []string
	binds map[string]string // link path → device path
	loops map[string]string // backing path → /dev/loopN
	n     int
	fail  map[string]error
}

func newFakeBlock() *fakeBlock {
	return &fakeBlock{binds: map[string]string{}, loops: map[string]string{}, fail: map[string]error{}}
}

func (f *fakeBlock) record(call string) error {
	f.calls = append(f.calls, call)
	method, _, _ := strings.Cut(call, " ")
	if err := f.fail[method]; err != nil {
		delete(f.fail, method)
		return err
	}
	return nil
}

func (f *fakeBlock) MapDevice(devicePath, mapPath, linkName string, bindMount bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(fmt.Sprintf("MapDevice %s %s %s %v", devicePath, mapPath, linkName, bindMount)); err != nil {
		return err
	}
	if err := os.MkdirAll(mapPath, 0o750); err != nil {
		return err
	}
	link := filepath.Join(mapPath, linkName)
	if !bindMount {
		_ = os.Remove(link)
		return os.Symlink(devicePath, link)
	}
	if err := os.WriteFile(link, nil, 0o640); err != nil {
		return err
	}
	f.binds[link] = devicePath
	return nil
}

func (f *fakeBlock) UnmapDevice(mapPath, linkName string, bindMount bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(fmt.Sprintf("UnmapDevice %s %s %v", mapPath, linkName, bindMount)); err != nil {
		return err
	}
	link := filepath.Join(mapPath, linkName)
	delete(f.binds, link)
	if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func (f *fakeBlock) AttachFileDevice(path string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("AttachFileDevice " + path); err != nil {
		return "", err
	}
	if d, ok := f.loops[path]; ok {
		return d, nil
	}
	if _, ok := f.binds[path]; !ok {
		return "", fmt.Errorf("%s is not a mapped device", path)
	}
	f.n++
	f.loops[path] = fmt.Sprintf("/dev/loop%d", f.n)
	return f.loops[path], nil
}

func (f *fakeBlock) DetachFileDevice(path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("DetachFileDevice " + path); err != nil {
		return err
	}
	delete(f.loops, path)
	return nil
}

func (f *fakeBlock) EvalHostSymlinks(path string) (string, error) {
	return filepath.EvalSymlinks(path)
}

func (f *fakeBlock) state() (binds, loops []string, calls []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.binds {
		binds = append(binds, k)
	}
	for k := range f.loops {
		loops = append(loops, k)
	}
	slices.Sort(binds)
	slices.Sort(loops)
	return binds, loops, slices.Clone(f.calls)
}

// blockEnv is an env whose manager maps block volumes through a fakeBlock.
func blockEnv(t *testing.T) (*env, *fakeBlock) {
	e := newEnv(t)
	blk := newFakeBlock()
	e.m = e.restartBlock(t, blk)
	return e, blk
}

func (e *env) restartBlock(t testing.TB, blk *fakeBlock) *Manager {
	m, err := New(node, e.root, e.objs, e.node, WithClock(e.clock), WithEventRecorder(e.rec), WithMounter(mountsfake.New()), WithBlockPathHandler(blk))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// blockClaim is boundClaim with volumeMode Block.
func blockClaim(claim, pv, handle string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	c, v := boundClaim(claim, pv, handle)
	mode := corev1.PersistentVolumeBlock
	v.Spec.VolumeMode = &mode
	v.Spec.CSI.FSType = ""
	return c, v
}

// devicePod is a pod whose container uses the claim as a device.
func devicePod(name string, uid types.UID, claim string) *corev1.Pod {
	p := newPod(name, uid, claimVolume("data", claim))
	p.Spec.Containers[0].VolumeMounts = nil
	p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
	return p
}

// files lists every file and symlink under root, relative.
func files(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBlockMapAndUnmap(t *testing.T) {
	e, blk := blockEnv(t)
	claim, pv := blockClaim("data", "pv-data", "vol-1")
	e.objs.Set(claim, pv, csiDriver(driver, false))
	pod := devicePod("db", "uid-db", "data")
	ctx := context.Background()
	if err := e.m.AddPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t)
	staging := BlockStagingPath(e.root, "pv-data")
	publish := BlockPublishPath(e.root, "uid-db", "pv-data")
	global := BlockGlobalMapPath(e.root, "pv-data")
	podLink := PodDeviceMapPath(e.root, "uid-db", "pv-data")
	if got, want := e.node.calls, []string{"Stage vol-1 " + staging, "Publish vol-1 " + publish}; !slices.Equal(got, want) {
		t.Fatalf("driver calls %q, want %q", got, want)
	}
	st, pub := e.node.stages[0], e.node.publishes[0]
	if !st.Block || !pub.Block || pub.StagingPath != staging || st.Capability.FSType != "" || st.FSGroup != nil || pub.FSGroup != nil {
		t.Errorf("stage %+v / publish %+v: not kubelet's block requests", st, pub)
	}
	_, _, calls := blk.state()
	want := []string{
		fmt.Sprintf("MapDevice %s %s uid-db true", publish, global),
		fmt.Sprintf("MapDevice %s %s pv-data false", publish, filepath.Dir(podLink)),
		"AttachFileDevice " + filepath.Join(global, "uid-db"),
	}
	if !slices.Equal(calls, want) {
		t.Errorf("map calls (-want +got):\n%s", cmp.Diff(want, calls))
	}
	if target, err := os.Readlink(podLink); err != nil || target != publish {
		t.Errorf("pod link %s → %q (%v), want %s", podLink, target, err, publish)
	}
	if err := e.m.WaitForAttachAndMount(ctx, pod); err != nil {
		t.Fatalf("WaitForAttachAndMount: %v", err)
	}
	opts, err := e.m.DeviceOptions(ctx, pod, &pod.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	wantDev := []*runtimeapi.Device{{ContainerPath: "/dev/xvda", HostPath: podLink, Permissions: "mrw"}}
	if d := cmp.Diff(wantDev, opts.Devices, protocmp.Transform()); d != "" {
		t.Errorf("devices (-want +got):\n%s", d)
	}
	vols, err := e.m.Volumes(ctx, pod)
	if err != nil || len(vols) != 0 {
		t.Errorf("Volumes = %v, %v; a block volume is no mount", vols, err)
	}
	if _, err := (Provider{Manager: e.m}).Volumes(ctx, pod); err != nil {
		t.Errorf("Provider.Volumes of a mapped block volume: %v", err)
	}

	// The pod goes: unmapped in kubelet's order, then unstaged.
	e.m.SourcesReady()
	e.m.RemovePod(pod.UID)
	blk.mu.Lock()
	blk.calls = nil
	blk.mu.Unlock()
	e.node.calls = nil
	e.reconcile(t)
	binds, loops, calls := blk.state()
	want = []string{
		"DetachFileDevice " + filepath.Join(global, "uid-db"),
		fmt.Sprintf("UnmapDevice %s pv-data false", filepath.Dir(podLink)),
		fmt.Sprintf("UnmapDevice %s uid-db true", global),
	}
	if !slices.Equal(calls, want) || len(binds) != 0 || len(loops) != 0 {
		t.Errorf("unmap calls %q (binds %q, loops %q), want %q", calls, binds, loops, want)
	}
	if got, want := e.node.calls, []string{"Unpublish vol-1 " + publish, "Unstage vol-1 " + staging}; !slices.Equal(got, want) {
		t.Errorf("driver calls %q, want %q", got, want)
	}
	if left := files(t, e.root); len(left) != 0 {
		t.Errorf("left under the root: %q", left)
	}
	for _, dir := range []string{staging, filepath.Dir(publish), global, filepath.Dir(global), filepath.Dir(podLink)} {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left (%v)", dir, err)
		}
	}
	if e.m.HasPossiblyMountedVolumes(pod.UID) {
		t.Error("pod still has volumes")
	}
}

func TestBlockReadOnlyClaimIsReadOnlyDevice(t *testing.T) {
	e, _ := blockEnv(t)
	claim, pv := blockClaim("data", "pv-data", "vol-1")
	e.objs.Set(claim, pv, csiDriver(driver, false))
	pod := devicePod("db", "uid-db", "data")
	pod.Spec.Volumes[0].PersistentVolumeClaim.ReadOnly = true
	if err := e.m.AddPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t)
	opts, err := e.m.DeviceOptions(context.Background(), pod, &pod.Spec.Containers[0])
	if err != nil || len(opts.Devices) != 1 || opts.Devices[0].Permissions != "r" || !e.node.publishes[0].ReadOnly {
		t.Fatalf("devices %v, %v; want one with permissions r, published read-only", opts.Devices, err)
	}
}

func TestBlockRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  func() *corev1.Pod
		pv   func(*corev1.PersistentVolume)
		want string
		is   error
	}{
		{name: "filesystem PV as a device", pod: func() *corev1.Pod { return devicePod("db", "uid-db", "data") },
			pv: func(v *corev1.PersistentVolume) {
				fs := corev1.PersistentVolumeFilesystem
				v.Spec.VolumeMode = &fs
			}, want: "volume data has volumeMode Filesystem, but is specified in volumeDevices"},
		{name: "block PV as a mount", pod: func() *corev1.Pod { return newPod("db", "uid-db", claimVolume("data", "data")) },
			want: "volume data has volumeMode Block, but is specified in volumeMounts"},
		{name: "hostile PV name", pod: func() *corev1.Pod { return devicePod("db", "uid-db", "data") },
			pv: func(v *corev1.PersistentVolume) { v.Name = "../../../../etc" }, want: "PV name", is: ErrInvalidName},
		{name: "hostile driver name", pod: func() *corev1.Pod { return devicePod("db", "uid-db", "data") },
			pv: func(v *corev1.PersistentVolume) { v.Spec.CSI.Driver = "../../dev" }, want: "CSI driver name", is: ErrInvalidName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, blk := blockEnv(t)
			claim, pv := blockClaim("data", "pv-data", "vol-1")
			if tc.pv != nil {
				tc.pv(pv)
			}
			claim.Spec.VolumeName = pv.Name
			e.objs.Set(claim, pv, csiDriver(driver, false, "Persistent", "Ephemeral"))
			pod := tc.pod()
			if err := e.m.AddPod(context.Background(), pod); err != nil {
				t.Fatal(err)
			}
			e.m.mu.Lock()
			errs := slices.Clone(e.m.pods[pod.UID].errors)
			e.m.mu.Unlock()
			if len(errs) != 1 || !strings.Contains(errs[0], tc.want) {
				t.Fatalf("pod errors = %q, want one naming %q", errs, tc.want)
			}
			if tc.is != nil {
				used, devices := usedVolumes(pod)
				if _, err := e.m.resolve(context.Background(), pod, pod.Spec.Volumes[0], used, devices); !errors.Is(err, tc.is) {
					t.Errorf("resolve error %v is not %v", err, tc.is)
				}
			}
			e.reconcile(t)
			if _, _, calls := blk.state(); len(e.node.calls) != 0 || len(calls) != 0 {
				t.Errorf("driver called %q, mapped %q", e.node.calls, calls)
			}
			if _, err := e.m.DeviceOptions(context.Background(), pod, &pod.Spec.Containers[0]); len(pod.Spec.Containers[0].VolumeDevices) > 0 && !errors.Is(err, ErrNotPublished) {
				t.Errorf("DeviceOptions of an unmapped volume: %v, want ErrNotPublished", err)
			}
		})
	}
}

func TestBlockDevicePathMustBeAbsolute(t *testing.T) {
	e, _ := blockEnv(t)
	claim, pv := blockClaim("data", "pv-data", "vol-1")
	e.objs.Set(claim, pv, csiDriver(driver, false))
	pod := devicePod("db", "uid-db", "data")
	if err := e.m.AddPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t)
	c := pod.Spec.Containers[0].DeepCopy()
	c.VolumeDevices[0].DevicePath = "dev/xvda"
	if _, err := e.m.DeviceOptions(context.Background(), pod, c); err == nil || !strings.Contains(err.Error(), "must be an absolute path") {
		t.Errorf("relative devicePath: %v", err)
	}
}

// A failed map leaves the pod volume "maybe published": it is mapped
// again on the next pass, and unmapped and unpublished if abandoned.
func TestBlockMapFailureIsRetriedAndCleanedUp(t *testing.T) {
	e, blk := blockEnv(t)
	claim, pv := blockClaim("data", "pv-data", "vol-1")
	e.objs.Set(claim, pv, csiDriver(driver, false))
	pod := devicePod("db", "uid-db", "data")
	blk.fail["AttachFileDevice"] = errors.New("no free loop device")
	if err := e.m.AddPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t)
	ev := e.rec.list()
	if len(ev) != 1 || !strings.Contains(ev[0], `FailedMount MapVolume.MapBlockVolume failed for volume "pv-data" : blkUtil.AttachFileDevice failed`) {
		t.Fatalf("events %q", ev)
	}
	if _, err := e.m.DeviceOptions(context.Background(), pod, &pod.Spec.Containers[0]); !errors.Is(err, ErrNotPublished) {
		t.Errorf("DeviceOptions after a failed map: %v", err)
	}
	e.clock.Step(initialRetryDelay)
	e.reconcile(t)
	if _, err := e.m.DeviceOptions(context.Background(), pod, &pod.Spec.Containers[0]); err != nil {
		t.Fatalf("after the retry: %v", err)
	}
	if got := e.node.callsOf("Stage"); len(got) != 1 {
		t.Errorf("staged %d times, want once", len(got))
	}
	if got := e.node.callsOf("Publish"); len(got) != 2 {
		t.Errorf("published %d times, want twice (the same target again)", len(got))
	}
	e.m.SourcesReady()
	e.m.RemovePod(pod.UID)
	e.reconcile(t)
	if binds, loops, _ := blk.state(); len(binds)+len(loops) != 0 || len(files(t, e.root)) != 0 {
		t.Errorf("left: binds %q loops %q files %q", binds, loops, files(t, e.root))
	}
}

// An agent restarted finds the mapped volume on the disk: a pod that
// still wants it gets it mapped again at the same places (one loop
// device); one that does not is unmapped and unstaged.
func TestBlockReconstruct(t *testing.T) {
	for _, wanted := range []bool{true, false} {
		t.Run(fmt.Sprintf("wanted=%v", wanted), func(t *testing.T) {
			e, blk := blockEnv(t)
			claim, pv := blockClaim("data", "pv-data", "vol-1")
			e.objs.Set(claim, pv, csiDriver(driver, false))
			pod := devicePod("db", "uid-db", "data")
			if err := e.m.AddPod(context.Background(), pod); err != nil {
				t.Fatal(err)
			}
			e.reconcile(t)
			before := files(t, e.root)

			e.m = e.restartBlock(t, blk)
			e.node.calls = nil
			if wanted {
				if err := e.m.AddPod(context.Background(), pod); err != nil {
					t.Fatal(err)
				}
			}
			e.m.SourcesReady()
			if err := e.m.Reconcile(context.Background()); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			binds, loops, _ := blk.state()
			if wanted {
				want := []string{"Stage vol-1 " + BlockStagingPath(e.root, "pv-data"), "Publish vol-1 " + BlockPublishPath(e.root, "uid-db", "pv-data")}
				if !slices.Equal(e.node.calls, want) || len(binds) != 1 || len(loops) != 1 {
					t.Errorf("calls %q binds %q loops %q; want %q, one bind, one loop", e.node.calls, binds, loops, want)
				}
				if after := files(t, e.root); !slices.Equal(before, after) {
					t.Errorf("files before %q, after %q", before, after)
				}
				if _, err := e.m.DeviceOptions(context.Background(), pod, &pod.Spec.Containers[0]); err != nil {
					t.Error(err)
				}
				return
			}
			want := []string{"Unpublish vol-1 " + BlockPublishPath(e.root, "uid-db", "pv-data"), "Unstage vol-1 " + BlockStagingPath(e.root, "pv-data")}
			if !slices.Equal(e.node.calls, want) || len(binds)+len(loops) != 0 {
				t.Errorf("calls %q binds %q loops %q; want %q and nothing mapped", e.node.calls, binds, loops, want)
			}
			if left := files(t, e.root); len(left) != 0 {
				t.Errorf("left: %q", left)
			}
		})
	}
}

// A second pod of the same block volume keeps the device staged and its
// own map; the volume is unstaged only after the last pod's unmap.
func TestBlockTwoPodsShareTheStage(t *testing.T) {
	e, blk := blockEnv(t)
	claim, pv := blockClaim("data", "pv-data", "vol-1")
	pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	e.objs.Set(claim, pv, csiDriver(driver, false))
	a, b := devicePod("a", "uid-a", "data"), devicePod("b", "uid-b", "data")
	for _, p := range []*corev1.Pod{a, b} {
		if err := e.m.AddPod(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	e.reconcile(t)
	if n := len(e.node.callsOf("Stage")); n != 1 {
		t.Fatalf("staged %d times", n)
	}
	e.m.SourcesReady()
	e.m.RemovePod(a.UID)
	e.reconcile(t)
	if n := len(e.node.callsOf("Unstage")); n != 0 {
		t.Fatalf("unstaged while pod b maps it")
	}
	if binds, loops, _ := blk.state(); len(binds) != 1 || len(loops) != 1 {
		t.Fatalf("binds %q loops %q: want pod b's only", binds, loops)
	}
	e.m.RemovePod(b.UID)
	e.reconcile(t)
	if n := len(e.node.callsOf("Unstage")); n != 1 || len(files(t, e.root)) != 0 {
		t.Fatalf("unstaged %d times, left %q", n, files(t, e.root))
	}
}

// TestBlockPathsAreTheCSIPlugins: the manager's block paths are those
// package csi's plugin uses (both kubelet's).
func TestBlockPathsAreTheCSIPlugins(t *testing.T) {
	b, err := csi.Layout{Root: "/var/lib/kubelet"}.BlockPaths("uid-p", "pv-1")
	if err != nil {
		t.Fatal(err)
	}
	got := []string{BlockStagingPath("/var/lib/kubelet", "pv-1"), BlockPublishPath("/var/lib/kubelet", "uid-p", "pv-1"),
		BlockGlobalMapPath("/var/lib/kubelet", "pv-1"), blockDataDir("/var/lib/kubelet", "pv-1"), PodDeviceMapPath("/var/lib/kubelet", "uid-p", "pv-1")}
	want := []string{b.Staging, b.Publish, b.GlobalMap, b.DataDir, filepath.Join(b.PodDeviceMapDir, b.PodDeviceMapName)}
	if !slices.Equal(got, want) {
		t.Errorf("manager's paths %q, csi's %q", got, want)
	}
}

// TestBlockReconstructRefusesHostileEntries: what the disk holds under
// the volumeDevices directory is checked before it becomes a volume: a
// vol_data.json naming another spec, a hostile driver name, a pod entry
// that is not a UID; nothing of them is unpublished or unstaged.
func TestBlockReconstructRefusesHostileEntries(t *testing.T) {
	e, blk := blockEnv(t)
	devs := blockDir(e.root)
	write := func(spec string, data map[string]string) {
		dir := filepath.Join(devs, spec, "data")
		if err := os.MkdirAll(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := writeJSON(filepath.Join(dir, volDataFileName), data); err != nil {
			t.Fatal(err)
		}
	}
	write("pv-a", map[string]string{"specVolID": "../../../etc", "driverName": driver, "volumeHandle": "h"})
	write("pv-b", map[string]string{"specVolID": "pv-b", "driverName": "../../dev", "volumeHandle": "h"})
	write("pv-c", map[string]string{"specVolID": "pv-c", "driverName": driver, "volumeHandle": ""})
	if err := os.MkdirAll(filepath.Join(devs, "publish", "pv-d", ".."), 0o750); err != nil {
		t.Fatal(err)
	}
	e.m.SourcesReady()
	err := e.m.Reconcile(context.Background())
	for _, want := range []string{"pv-a", "pv-b", "pv-c"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("reconstruct error %v does not name %s", err, want)
		}
	}
	if !errors.Is(err, ErrInvalidName) {
		t.Errorf("reconstruct error %v is not ErrInvalidName", err)
	}
	if _, _, calls := blk.state(); len(e.node.calls) != 0 || len(calls) != 0 {
		t.Errorf("driver called %q, mapped %q", e.node.calls, calls)
	}
}

// A block volume abandoned before its stage (never attached) leaves the
// actual state without a call to the driver.
func TestBlockAbandonedBeforeStage(t *testing.T) {
	e, blk := blockEnv(t)
	claim, pv := blockClaim("data", "pv-data", "vol-1")
	e.objs.Set(claim, pv, csiDriver(driver, true)) // attachable; no VolumeAttachment
	pod := devicePod("db", "uid-db", "data")
	if err := e.m.AddPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	e.m.MarkVolumesReportedInUse(e.m.VolumesInUse())
	e.reconcile(t)
	e.m.SourcesReady()
	e.m.RemovePod(pod.UID)
	if err := e.m.Reconcile(context.Background()); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	e.m.mu.Lock()
	left := len(e.m.actual)
	e.m.mu.Unlock()
	if _, _, calls := blk.state(); left != 0 || len(e.node.calls) != 0 || len(calls) != 0 {
		t.Errorf("actual volumes %d, driver calls %q, map calls %q", left, e.node.calls, calls)
	}
}
