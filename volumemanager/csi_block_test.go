package volumemanager

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	testingclock "k8s.io/utils/clock/testing"

	mountsfake "github.com/podstart/podstart/mounts/fake"
)

// TestCSIAdapterBlock: a block PVC pod over csi.Plugin and a CSI driver:
// kubelet's block calls (the block access type, fsType "block" gone into
// the capability, the staging and publish paths by the PV's name), the
// device mapped for the pod, then unmapped, unpublished and unstaged with
// nothing left under the root, and the calls again after an agent
// restart (reconstruction) publish at the same target.
func TestCSIAdapterBlock(t *testing.T) {
	e := newCSIEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	blk := newFakeBlock()
	restart := func() *Manager {
		m, err := New(node, e.root, e.objs, CSI(e.plugin), WithClock(testingclock.NewFakeClock(t0)), WithMounter(mountsfake.New()), WithBlockPathHandler(blk))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	e.m = restart()
	claim, pv := blockClaim("data", "pv-data", "vol-1")
	e.objs.Set(claim, pv, csiDriver(driver, false))
	pod := devicePod("db", "uid-db", "data")
	ctx := context.Background()
	if err := e.m.AddPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	staging, publish := BlockStagingPath(e.root, "pv-data"), BlockPublishPath(e.root, "uid-db", "pv-data")
	want := []string{"NodeStageVolume " + staging, "NodePublishVolume " + publish + " staged at " + staging}
	if d := cmp.Diff(want, e.calls()); d != "" {
		t.Fatalf("calls (-want +got):\n%s", d)
	}
	for _, c := range e.driver.Calls() {
		switch r := c.Request.(type) {
		case *csipb.NodeStageVolumeRequest:
			if r.GetVolumeCapability().GetBlock() == nil || r.GetVolumeCapability().GetMount() != nil {
				t.Errorf("stage capability %v: want block access", r.GetVolumeCapability())
			}
		case *csipb.NodePublishVolumeRequest:
			if r.GetVolumeCapability().GetBlock() == nil {
				t.Errorf("publish capability %v: want block access", r.GetVolumeCapability())
			}
		}
	}
	if _, err := e.m.DeviceOptions(ctx, pod, &pod.Spec.Containers[0]); err != nil {
		t.Fatal(err)
	}

	// An agent restart while mapped: published again at the same target.
	e.driver.Reset()
	e.m = restart()
	if err := e.m.AddPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	e.m.SourcesReady()
	if err := e.m.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, e.calls()); d != "" {
		t.Errorf("calls after restart (-want +got):\n%s", d)
	}
	if binds, loops, _ := blk.state(); len(binds) != 1 || len(loops) != 1 {
		t.Errorf("binds %q loops %q after restart: want one each", binds, loops)
	}

	e.driver.Reset()
	e.m.RemovePod(pod.UID)
	if err := e.m.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	want = []string{"NodeUnpublishVolume " + publish, "NodeUnstageVolume " + staging}
	if d := cmp.Diff(want, e.calls()); d != "" {
		t.Errorf("teardown calls (-want +got):\n%s", d)
	}
	left := below(t, e.root)
	// The shared parents stay, as kubelet's (it removes the volume's own).
	keep := []string{"pods", "pods/uid-db", "plugins", "plugins/kubernetes.io", "plugins/kubernetes.io/csi", "plugins/kubernetes.io/csi/volumeDevices",
		"plugins/kubernetes.io/csi/volumeDevices/publish", "plugins/kubernetes.io/csi/volumeDevices/staging"}
	left = slices.DeleteFunc(left, func(p string) bool { return slices.Contains(keep, p) })
	if len(left) != 0 {
		t.Errorf("left under the root: %q", left)
	}
}

// TestCSIBlockVolumeStats: a mapped block volume is measured as kubelet's
// block mapper measures it: NodeGetVolumeStats at the pod's bind mount in
// the global map path.
func TestCSIBlockVolumeStats(t *testing.T) {
	e := newCSIEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME, csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS)
	e.driver.SetVolumeStats(&csipb.NodeGetVolumeStatsResponse{Usage: []*csipb.VolumeUsage{{Unit: csipb.VolumeUsage_BYTES, Total: 1 << 20}}})
	m, err := New(node, e.root, e.objs, CSI(e.plugin), WithClock(testingclock.NewFakeClock(t0)), WithMounter(mountsfake.New()), WithBlockPathHandler(newFakeBlock()))
	if err != nil {
		t.Fatal(err)
	}
	claim, pv := blockClaim("data", "pv-data", "vol-1")
	e.objs.Set(claim, pv, csiDriver(driver, false))
	pod := devicePod("db", "uid-db", "data")
	ctx := context.Background()
	if err := m.AddPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := m.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	vols, ok := m.MountedVolumes(pod.UID)
	if !ok || len(vols) != 1 {
		t.Fatalf("MountedVolumes = %v, %v", vols, ok)
	}
	e.driver.Reset()
	if _, err := vols[0].Metrics(ctx); err != nil {
		t.Fatal(err)
	}
	calls := e.driver.Calls()
	want := filepath.Join(BlockGlobalMapPath(e.root, "pv-data"), "uid-db")
	if got := calls[len(calls)-1].Request.(*csipb.NodeGetVolumeStatsRequest).GetVolumePath(); got != want {
		t.Errorf("NodeGetVolumeStats at %s, want %s", got, want)
	}
}
