package csi_test

import (
	"context"
	"errors"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/csi"
	"github.com/podstart/podstart/csi/fake"
)

// The single calls, for a caller that keeps its own paths and files (a
// volume manager's seam): kubelet's argument checks, the access-mode
// query before each, and no path that is not absolute and clean.
func TestClientSingleCalls(t *testing.T) {
	e := newEnv(t, []csipb.NodeServiceCapability_RPC_Type{stageCap, snmwCap})
	c, err := e.p.Client(driverName)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	caps, err := c.Capabilities(ctx)
	if err != nil || caps != (csi.Capabilities{StageUnstage: true, SingleNodeMultiWriter: true}) {
		t.Errorf("capabilities = %+v, %v", caps, err)
	}
	e.d.Reset()
	staging := e.root + "/staging"
	if err := c.NodeStageVolume(ctx, csi.NodeStageRequest{VolumeHandle: "v", StagingPath: staging, FSType: "block", AccessMode: corev1.ReadWriteOncePod}); err != nil {
		t.Fatal(err)
	}
	target := e.root + "/target"
	if err := c.NodePublishVolume(ctx, csi.NodePublishRequest{VolumeHandle: "v", StagingPath: staging, TargetPath: target, FSType: "xfs", AccessMode: corev1.ReadWriteOnce}); err != nil {
		t.Fatal(err)
	}
	if err := c.NodeUnpublishVolume(ctx, "v", target); err != nil {
		t.Fatal(err)
	}
	if err := c.NodeUnstageVolume(ctx, "v", staging); err != nil {
		t.Fatal(err)
	}
	want := []string{fake.NodeGetCapabilities, fake.NodeStageVolume, fake.NodeGetCapabilities, fake.NodePublishVolume, fake.NodeUnpublishVolume, fake.NodeUnstageVolume}
	if got := e.d.Methods(); !cmp.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
	calls := e.d.Calls()
	if m := calls[1].Request.(*csipb.NodeStageVolumeRequest).GetVolumeCapability(); m.GetBlock() == nil || m.GetAccessMode().GetMode() != csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER {
		t.Errorf("stage capability = %v", m)
	}
	e.d.Reset()
	for _, tt := range []struct {
		name, want string
		call       func() error
	}{
		{"no handle", "invalid request: missing volume id", func() error { return c.NodeStageVolume(ctx, csi.NodeStageRequest{}) }},
		{"no staging path", "invalid request: missing staging target path", func() error { return c.NodeStageVolume(ctx, csi.NodeStageRequest{VolumeHandle: "v"}) }},
		{"relative target", `invalid request: target path "a/b" must be absolute and clean`, func() error {
			return c.NodePublishVolume(ctx, csi.NodePublishRequest{VolumeHandle: "v", TargetPath: "a/b"})
		}},
		{"unclean target", `invalid request: target path "/a/../b" must be absolute and clean`, func() error { return c.NodeUnpublishVolume(ctx, "v", "/a/../b") }},
		{"unclean staging", `invalid request: staging target path "/s/" must be absolute and clean`, func() error { return c.NodeUnstageVolume(ctx, "v", "/s/") }},
	} {
		err := tt.call()
		if !errors.Is(err, csi.ErrInvalidRequest) || err.Error() != tt.want {
			t.Errorf("%s: err = %v, want %s", tt.name, err, tt.want)
		}
	}
	if len(e.d.Calls()) != 0 {
		t.Errorf("refused calls reached the driver: %v", e.d.Methods())
	}
}
