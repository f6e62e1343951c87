package volumemanager

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/csi"
	csifake "github.com/podstart/podstart/csi/fake"
	mountsfake "github.com/podstart/podstart/mounts/fake"
)

// csiEnv is a manager over kubelet's CSI plugin (package csi) and a fake
// CSI driver registered with it, as an agent wires them.
type csiEnv struct {
	root   string
	objs   *Objects
	driver *csifake.Driver
	plugin *csi.Plugin
	m      *Manager
}

func newCSIEnv(t *testing.T, caps ...csipb.NodeServiceCapability_RPC_Type) *csiEnv {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "vm") // a socket path fits in 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	d := csifake.New(driver, csifake.WithCapabilities(caps...), csifake.WithNodeInfo(node, 0, nil))
	sock, err := d.Serve(filepath.Join(sockDir, "csi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	e := &csiEnv{root: t.TempDir(), objs: &Objects{}, driver: d}
	if e.plugin, err = csi.New(e.root, node); err != nil {
		t.Fatal(err)
	}
	if err := e.plugin.RegisterPlugin(context.Background(), driver, sock, []string{"1.0.0"}, 0); err != nil {
		t.Fatal(err)
	}
	d.Reset()
	e.m = e.restart(t)
	return e
}

// restart is an agent restarted: a new manager over the same disk, plugin
// and driver.
func (e *csiEnv) restart(t *testing.T) *Manager {
	m, err := New(node, e.root, e.objs, CSI(e.plugin), WithClock(testingclock.NewFakeClock(t0)), WithMounter(mountsfake.New()))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// calls returns the driver's stage, publish, unpublish and unstage calls
// as "<method> <path>".
func (e *csiEnv) calls() []string {
	var out []string
	for _, c := range e.driver.Calls() {
		switch r := c.Request.(type) {
		case *csipb.NodeStageVolumeRequest:
			out = append(out, c.Method+" "+r.StagingTargetPath)
		case *csipb.NodeUnstageVolumeRequest:
			out = append(out, c.Method+" "+r.StagingTargetPath)
		case *csipb.NodePublishVolumeRequest:
			out = append(out, c.Method+" "+r.TargetPath+" staged at "+r.StagingTargetPath)
		case *csipb.NodeUnpublishVolumeRequest:
			out = append(out, c.Method+" "+r.TargetPath)
		}
	}
	return out
}

// below lists every file and directory left under dir.
func below(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return out
}

// TestCSIAdapter: a PVC pod through the manager over csi.Plugin and a CSI
// driver: staged and published at kubelet's paths with kubelet's
// vol_data.json (written by csi alone), then unpublished and unstaged
// after the pod's removal, with nothing left of the pod's volume or its
// staging on disk.
func TestCSIAdapter(t *testing.T) {
	e := newCSIEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	e.objs.Set(claim, pv, csiDriver(driver, false))
	pod := newPod("web", "uid-web", claimVolume("data", "data"))
	ctx := context.Background()
	if err := e.m.AddPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if err := e.m.WaitForAttachAndMount(ctx, pod); err != nil {
		t.Fatalf("WaitForAttachAndMount: %v", err)
	}
	staging := StagingPath(e.root, driver, "vol-1")
	target := TargetPath(e.root, "uid-web", "pv-data")
	want := []string{
		csifake.NodeStageVolume + " " + staging,
		csifake.NodePublishVolume + " " + target + " staged at " + staging,
	}
	if d := cmp.Diff(want, e.calls()); d != "" {
		t.Errorf("driver calls (-want +got):\n%s", d)
	}
	// kubelet v1.37.2's sequence (test/csi's kubelet report): the manager
	// adds no call to the plugin's.
	ngc := csifake.NodeGetCapabilities
	wantMethods := []string{ngc, ngc, ngc, csifake.NodeStageVolume, ngc, ngc, ngc, csifake.NodePublishVolume}
	if d := cmp.Diff(wantMethods, e.driver.Methods()); d != "" {
		t.Errorf("driver methods (-want +got):\n%s", d)
	}
	vols, err := e.m.Volumes(ctx, pod)
	if err != nil || vols["data"].HostPath != target {
		t.Errorf("Volumes = %v, %v; want data at %s", vols, err, target)
	}
	wantData := map[string]string{
		"specVolID": "pv-data", "volumeHandle": "vol-1", "driverName": driver, "nodeName": node,
		"volumeLifecycleMode": "Persistent", "attachmentID": AttachmentName("vol-1", driver, node),
	}
	if d := cmp.Diff(wantData, readJSON(t, filepath.Join(filepath.Dir(target), volDataFileName))); d != "" {
		t.Errorf("pod vol_data.json (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{"volumeHandle": "vol-1", "driverName": driver}, readJSON(t, filepath.Join(filepath.Dir(staging), volDataFileName))); d != "" {
		t.Errorf("staging vol_data.json (-want +got):\n%s", d)
	}

	e.driver.Reset()
	e.m.SourcesReady()
	e.m.RemovePod(pod.UID)
	if err := e.m.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if err := e.m.WaitForUnmount(ctx, pod); err != nil {
		t.Fatalf("WaitForUnmount: %v", err)
	}
	want = []string{csifake.NodeUnpublishVolume + " " + target, csifake.NodeUnstageVolume + " " + staging}
	if d := cmp.Diff(want, e.calls()); d != "" {
		t.Errorf("driver calls (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{csifake.NodeUnpublishVolume, ngc, csifake.NodeUnstageVolume}, e.driver.Methods()); d != "" {
		t.Errorf("driver methods (-want +got):\n%s", d)
	}
	if got := below(t, filepath.Join(e.root, "pods", "uid-web", "volumes", "kubernetes.io~csi")); len(got) != 0 {
		t.Errorf("left of the pod's volumes: %q", got)
	}
	if got := below(t, filepath.Join(e.root, "plugins", PluginName, driver)); len(got) != 0 {
		t.Errorf("left of the staging: %q", got)
	}
}

// TestCSIAdapterReconstruction: an agent restarted over what csi wrote
// reads it back (kubelet's files): the wanted volume is published again at
// the same target, never at a second place; once the pod is gone and the
// sources are ready, it is unpublished and unstaged.
func TestCSIAdapterReconstruction(t *testing.T) {
	e := newCSIEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	e.objs.Set(claim, pv, csiDriver(driver, false))
	pod := newPod("web", "uid-web", claimVolume("data", "data"))
	ctx := context.Background()
	if err := e.m.AddPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}

	e.m = e.restart(t)
	e.driver.Reset()
	if err := e.m.AddPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if e.m.StatesSynced() {
		t.Error("StatesSynced before the first pass")
	}
	if err := e.m.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile after restart: %v", err)
	}
	if !e.m.StatesSynced() {
		t.Error("not StatesSynced after the first pass")
	}
	if err := e.m.WaitForAttachAndMount(ctx, pod); err != nil {
		t.Fatalf("WaitForAttachAndMount after restart: %v", err)
	}
	staging := StagingPath(e.root, driver, "vol-1")
	target := TargetPath(e.root, "uid-web", "pv-data")
	want := []string{
		csifake.NodeStageVolume + " " + staging,
		csifake.NodePublishVolume + " " + target + " staged at " + staging,
	}
	if d := cmp.Diff(want, e.calls()); d != "" {
		t.Errorf("driver calls after restart (-want +got):\n%s", d)
	}

	// Restarted again, the pod gone.
	e.m = e.restart(t)
	e.driver.Reset()
	e.m.SourcesReady()
	if err := e.m.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	want = []string{csifake.NodeUnpublishVolume + " " + target, csifake.NodeUnstageVolume + " " + staging}
	if d := cmp.Diff(want, e.calls()); d != "" {
		t.Errorf("driver calls (-want +got):\n%s", d)
	}
	if got := leftovers(t, e.root); len(got) != 0 {
		t.Errorf("left on disk: %q", got)
	}
	if e.m.HasPossiblyMountedVolumes("uid-web") {
		t.Error("the pod still has possibly mounted volumes")
	}
}

// TestCSIAdapterRootMismatch: a plugin with another root directory than
// the manager's is refused before the driver is called.
func TestCSIAdapterRootMismatch(t *testing.T) {
	e := newCSIEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	e.objs.Set(claim, pv, csiDriver(driver, false))
	m, err := New(node, t.TempDir(), e.objs, CSI(e.plugin), WithClock(testingclock.NewFakeClock(t0)), WithMounter(mountsfake.New()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := m.AddPod(ctx, newPod("web", "uid-web", claimVolume("data", "data"))); err != nil {
		t.Fatal(err)
	}
	if err := m.Reconcile(ctx); !errors.Is(err, csi.ErrInvalidRequest) {
		t.Errorf("Reconcile = %v, want csi.ErrInvalidRequest", err)
	}
	if got := e.driver.Methods(); slices.ContainsFunc(got, func(m string) bool { return m != csifake.NodeGetCapabilities }) {
		t.Errorf("driver called: %q", got)
	}
}

// TestCSIAdapterFSGroup: a driver without VOLUME_MOUNT_GROUP and a
// CSIDriver with fsGroupPolicy File: the published volume is given to the
// pod's fsGroup after NodePublishVolume (kubelet's SetUpAt), and the
// driver never sees the group.
func TestCSIAdapterFSGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a directory to another group needs root")
	}
	e := newCSIEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	drv := csiDriver(driver, false)
	policy := storagev1.FileFSGroupPolicy
	drv.Spec.FSGroupPolicy = &policy
	e.objs.Set(claim, pv, drv)
	pod := newPod("web", "uid-web", claimVolume("data", "data"))
	group := int64(4321)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: &group}
	ctx := context.Background()
	if err := e.m.AddPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	info, err := os.Stat(TargetPath(e.root, "uid-web", "pv-data"))
	if err != nil {
		t.Fatal(err)
	}
	if st := info.Sys().(*syscall.Stat_t); int64(st.Gid) != group || info.Mode()&os.ModeSetgid == 0 {
		t.Errorf("target gid %d mode %v, want group %d and setgid", st.Gid, info.Mode(), group)
	}
	for _, c := range e.driver.Calls() {
		if r, ok := c.Request.(*csipb.NodePublishVolumeRequest); ok && r.GetVolumeCapability().GetMount().GetVolumeMountGroup() != "" {
			t.Errorf("volumeMountGroup %q sent to a driver without VOLUME_MOUNT_GROUP", r.GetVolumeCapability().GetMount().GetVolumeMountGroup())
		}
	}
}
