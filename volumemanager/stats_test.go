package volumemanager

import (
	"context"
	"errors"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	csifake "github.com/podstart/podstart/csi/fake"
	"github.com/podstart/podstart/stats"
)

// TestCSIVolumeStats: the manager lists a pod's published volumes by the
// pod's names for them, measured with NodeGetVolumeStats at the publish
// target (kubelet's metricsCsi), and not supported (so left out, as
// kubelet) when the driver lacks GET_VOLUME_STATS.
func TestCSIVolumeStats(t *testing.T) {
	e := newCSIEnv(t, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME, csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS)
	e.driver.SetVolumeStats(&csipb.NodeGetVolumeStatsResponse{Usage: []*csipb.VolumeUsage{
		{Unit: csipb.VolumeUsage_BYTES, Available: 700, Total: 1000, Used: 300},
		{Unit: csipb.VolumeUsage_INODES, Available: 40, Total: 50, Used: 10},
	}})
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	e.objs.Set(claim, pv, csiDriver(driver, false))
	pod := newPod("web", "uid-web", claimVolume("db", "data"))
	ctx := context.Background()
	if vols, ok := e.m.MountedVolumes(pod.UID); ok || len(vols) != 0 {
		t.Fatalf("volumes of an unknown pod: %v", vols)
	}
	if err := e.m.AddPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if pods := e.m.VolumePods(); len(pods) != 1 || pods[0].UID != pod.UID {
		t.Fatalf("VolumePods = %v", pods)
	}
	if vols, ok := e.m.MountedVolumes(pod.UID); ok || len(vols) != 0 {
		t.Fatalf("volumes listed before they are published: %v", vols)
	}
	if err := e.m.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	vols, ok := e.m.MountedVolumes(pod.UID)
	if !ok || len(vols) != 1 || vols[0].Name != "db" {
		t.Fatalf("MountedVolumes = %v, %v; want db", vols, ok)
	}
	e.driver.Reset()
	got, err := vols[0].Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := stats.VolumeMetrics{AvailableBytes: 700, CapacityBytes: 1000, UsedBytes: 300, Inodes: 50, InodesFree: 40, InodesUsed: 10}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("metrics (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{csifake.NodeGetCapabilities, csifake.NodeGetVolumeStats}, e.driver.Methods()); d != "" {
		t.Errorf("driver methods (-want +got):\n%s", d)
	}
	calls := e.driver.Calls()
	wantReq := &csipb.NodeGetVolumeStatsRequest{VolumeId: "vol-1", VolumePath: TargetPath(e.root, "uid-web", "pv-data")}
	if req := calls[len(calls)-1].Request; !proto.Equal(req, wantReq) {
		t.Errorf("NodeGetVolumeStats request %v, want %v", req, wantReq)
	}

	e.driver.SetCapabilities(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	e.driver.Reset()
	if _, err := vols[0].Metrics(ctx); !errors.Is(err, stats.ErrVolumeMetricsNotSupported) {
		t.Errorf("metrics without GET_VOLUME_STATS: %v, want ErrVolumeMetricsNotSupported", err)
	}
	if d := cmp.Diff([]string{csifake.NodeGetCapabilities}, e.driver.Methods()); d != "" {
		t.Errorf("driver methods without GET_VOLUME_STATS (-want +got):\n%s", d)
	}

	e.m.SourcesReady()
	e.m.RemovePod(pod.UID)
	if err := e.m.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if vols, ok := e.m.MountedVolumes(pod.UID); ok || len(vols) != 0 {
		t.Fatalf("volumes of a removed pod: %v", vols)
	}
}
