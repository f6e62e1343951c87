package csi_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/csi"
	"github.com/podstart/podstart/csi/fake"
)

func pvVolume() csi.Volume {
	return csi.Volume{
		Driver:           driverName,
		VolumeHandle:     "vol-1",
		SpecName:         "pv-1",
		FSType:           "ext4",
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		MountOptions:     []string{"noatime"},
		VolumeAttributes: map[string]string{"tier": "gold"},
	}
}

func int64p(v int64) *int64 { return &v }

func TestStageCallsAndArgumentsAsKubelet(t *testing.T) {
	e := newEnv(t, []csipb.NodeServiceCapability_RPC_Type{stageCap, groupCap})
	res, err := e.p.Stage(context.Background(), csi.StageRequest{
		Volume:         pvVolume(),
		PublishContext: map[string]string{"devicePath": "/dev/xvdb"},
		Secrets:        csi.Secrets{"password": "hunter22"},
		FSGroup:        int64p(2000),
	})
	if err != nil {
		t.Fatal(err)
	}
	staging, _ := e.p.Layout().StagingPath(driverName, "vol-1")
	if res.StagingPath != staging || !res.Staged {
		t.Errorf("result = %+v", res)
	}
	if got, want := e.d.Methods(), []string{fake.NodeGetCapabilities, fake.NodeGetCapabilities, fake.NodeGetCapabilities, fake.NodeStageVolume}; !cmp.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
	calls := e.d.Calls()
	want := &csipb.NodeStageVolumeRequest{
		VolumeId:          "vol-1",
		PublishContext:    map[string]string{"devicePath": "/dev/xvdb"},
		StagingTargetPath: staging,
		VolumeCapability: &csipb.VolumeCapability{
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{
				FsType: "ext4", MountFlags: []string{"noatime"}, VolumeMountGroup: "2000",
			}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		},
		Secrets:       map[string]string{"password": "hunter22"},
		VolumeContext: map[string]string{"tier": "gold"},
	}
	if diff := cmp.Diff(want, calls[3].Request, protocmp.Transform()); diff != "" {
		t.Errorf("NodeStageVolume request (-want +got):\n%s", diff)
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(staging), csi.VolDataFileName))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"driverName":"fake.csi.k8s.io","volumeHandle":"vol-1"}`+"\n"; got != want {
		t.Errorf("vol_data.json = %q, want %q", got, want)
	}
	if fi, err := os.Stat(staging); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 {
		t.Errorf("staging dir: %v %v", fi, err)
	}

	// Unstage: vol_data.json read, capabilities, NodeUnstageVolume, all removed.
	e.d.Reset()
	if err := e.p.Unstage(context.Background(), csi.UnstageRequest{Driver: driverName, VolumeHandle: "vol-1"}); err != nil {
		t.Fatal(err)
	}
	if got, want := e.d.Methods(), []string{fake.NodeGetCapabilities, fake.NodeUnstageVolume}; !cmp.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
	if exists(t, filepath.Dir(staging)) {
		t.Errorf("%s left after unstage", filepath.Dir(staging))
	}
	// Unstaged twice: no vol_data.json, nothing to do (kubelet's skip).
	e.d.Reset()
	if err := e.p.Unstage(context.Background(), csi.UnstageRequest{Driver: driverName, VolumeHandle: "vol-1"}); err != nil || len(e.d.Calls()) != 0 {
		t.Errorf("second unstage: %v, calls %v", err, e.d.Methods())
	}
}

func TestStageWithoutStageCapability(t *testing.T) {
	e := newEnv(t, nil)
	res, err := e.p.Stage(context.Background(), csi.StageRequest{Volume: pvVolume(), FSGroup: int64p(1)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Staged {
		t.Error("staged by a driver without STAGE_UNSTAGE_VOLUME")
	}
	if got := e.d.Methods(); !cmp.Equal(got, []string{fake.NodeGetCapabilities}) {
		t.Errorf("calls = %v", got)
	}
	// As kubelet: the directory exists, no vol_data.json.
	if !exists(t, res.StagingPath) || exists(t, filepath.Join(filepath.Dir(res.StagingPath), csi.VolDataFileName)) {
		t.Error("staging dir or vol_data.json not as kubelet leaves them")
	}
}

func TestStageAccessModesAndNoMountGroup(t *testing.T) {
	tests := []struct {
		name string
		caps []csipb.NodeServiceCapability_RPC_Type
		mode corev1.PersistentVolumeAccessMode
		want csipb.VolumeCapability_AccessMode_Mode
	}{
		{"RWO", []csipb.NodeServiceCapability_RPC_Type{stageCap}, corev1.ReadWriteOnce, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{"RWO SNMW", []csipb.NodeServiceCapability_RPC_Type{stageCap, snmwCap}, corev1.ReadWriteOnce, csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER},
		{"RWOP", []csipb.NodeServiceCapability_RPC_Type{stageCap}, corev1.ReadWriteOncePod, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{"RWOP SNMW", []csipb.NodeServiceCapability_RPC_Type{stageCap, snmwCap}, corev1.ReadWriteOncePod, csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER},
		{"ROX", []csipb.NodeServiceCapability_RPC_Type{stageCap}, corev1.ReadOnlyMany, csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY},
		{"RWX", []csipb.NodeServiceCapability_RPC_Type{stageCap}, corev1.ReadWriteMany, csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.caps)
			v := pvVolume()
			v.AccessModes = []corev1.PersistentVolumeAccessMode{tt.mode}
			if _, err := e.p.Stage(context.Background(), csi.StageRequest{Volume: v, FSGroup: int64p(5)}); err != nil {
				t.Fatal(err)
			}
			calls := e.d.Calls()
			req := calls[len(calls)-1].Request.(*csipb.NodeStageVolumeRequest)
			if got := req.GetVolumeCapability().GetAccessMode().GetMode(); got != tt.want {
				t.Errorf("mode = %v, want %v", got, tt.want)
			}
			// Without VOLUME_MOUNT_GROUP the fsGroup is not sent.
			if g := req.GetVolumeCapability().GetMount().GetVolumeMountGroup(); g != "" {
				t.Errorf("volumeMountGroup = %q without the capability", g)
			}
		})
	}
}

func TestStageFinalErrorRemovesDirUncertainKeepsIt(t *testing.T) {
	e := newEnv(t, []csipb.NodeServiceCapability_RPC_Type{stageCap})
	staging, _ := e.p.Layout().StagingPath(driverName, "vol-1")

	e.d.FailNext(fake.NodeStageVolume, status.Error(codes.InvalidArgument, "bad fsType"))
	_, err := e.p.Stage(context.Background(), csi.StageRequest{Volume: pvVolume()})
	if err == nil || errors.Is(err, csi.ErrUncertain) || status.Code(err) != codes.InvalidArgument {
		t.Fatalf("err = %v, want a final InvalidArgument", err)
	}
	if exists(t, filepath.Dir(staging)) {
		t.Error("staging dir left after a final error")
	}

	e.d.FailNext(fake.NodeStageVolume, status.Error(codes.Aborted, "operation pending"))
	_, err = e.p.Stage(context.Background(), csi.StageRequest{Volume: pvVolume()})
	if !errors.Is(err, csi.ErrUncertain) {
		t.Fatalf("err = %v, want ErrUncertain", err)
	}
	if !exists(t, filepath.Join(filepath.Dir(staging), csi.VolDataFileName)) {
		t.Error("an uncertain stage lost its vol_data.json")
	}
	// Fails then succeeds: the retry stages.
	if res, err := e.p.Stage(context.Background(), csi.StageRequest{Volume: pvVolume()}); err != nil || !res.Staged {
		t.Fatalf("retry: %+v %v", res, err)
	}
}

func TestStageRefusesEphemeralAndUnregistered(t *testing.T) {
	e := newEnv(t, []csipb.NodeServiceCapability_RPC_Type{stageCap})
	v := pvVolume()
	v.Ephemeral = true
	if _, err := e.p.Stage(context.Background(), csi.StageRequest{Volume: v}); !errors.Is(err, csi.ErrInvalidRequest) {
		t.Errorf("ephemeral stage: %v", err)
	}
	v = pvVolume()
	v.Driver = "other.csi.io"
	_, err := e.p.Stage(context.Background(), csi.StageRequest{Volume: v})
	if !errors.Is(err, csi.ErrDriverNotRegistered) || err.Error() != "driver name other.csi.io not found in the list of registered CSI drivers" {
		t.Errorf("unregistered: %v", err)
	}
	v = pvVolume()
	v.SpecName = "../../x"
	if _, err := e.p.Stage(context.Background(), csi.StageRequest{Volume: v}); !errors.Is(err, csi.ErrInvalidName) {
		t.Errorf("hostile spec name: %v", err)
	}
	if len(e.d.Calls()) != 0 {
		t.Errorf("refused requests reached the driver: %v", e.d.Methods())
	}
}

func TestDriverHangsThenCallerGivesUp(t *testing.T) {
	e := newEnv(t, []csipb.NodeServiceCapability_RPC_Type{stageCap})
	entered := e.d.HangNext(fake.NodeStageVolume)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.p.Stage(ctx, csi.StageRequest{Volume: pvVolume()})
		done <- err
	}()
	<-entered
	cancel()
	if err := <-done; !errors.Is(err, csi.ErrUncertain) {
		t.Fatalf("err = %v, want ErrUncertain", err)
	}
}

func TestOperationTimeoutIsUncertain(t *testing.T) {
	// A driver that never answers: the plugin's own timeout ends the call.
	e := newEnv(t, []csipb.NodeServiceCapability_RPC_Type{stageCap}, csi.WithTimeout(1))
	e.d.HangNext(fake.NodeGetCapabilities)
	_, err := e.p.Stage(context.Background(), csi.StageRequest{Volume: pvVolume()})
	if !errors.Is(err, csi.ErrUncertain) || status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("err = %v, want an uncertain DeadlineExceeded", err)
	}
}

func TestDriverDiesMidPublishThenRestarts(t *testing.T) {
	e := newEnv(t, []csipb.NodeServiceCapability_RPC_Type{stageCap})
	entered := e.d.DieNext(fake.NodePublishVolume)
	req := publishReq()
	done := make(chan error, 1)
	go func() {
		_, err := e.p.Publish(context.Background(), req)
		done <- err
	}()
	<-entered
	err := <-done
	if !errors.Is(err, csi.ErrUncertain) || status.Code(err) != codes.Unavailable {
		t.Fatalf("err = %v, want an uncertain Unavailable", err)
	}
	target, _ := e.p.Layout().PublishPath("uid-1", "pv-1")
	if !exists(t, filepath.Join(filepath.Dir(target), csi.VolDataFileName)) {
		t.Error("an uncertain publish lost its vol_data.json")
	}
	// The socket is gone: the next publish fails at its first capability
	// query, unavailable (kubelet reports it as a plain error).
	e.d.Stop()
	if _, err := e.p.Publish(context.Background(), req); status.Code(err) != codes.Unavailable {
		t.Fatalf("publish with no driver: %v", err)
	}
	// The driver comes back on the same socket: the retry publishes.
	if _, err := e.d.Serve(e.socket); err != nil {
		t.Fatal(err)
	}
	res, err := e.p.Publish(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !exists(t, res.TargetPath) {
		t.Error("target not created by the driver")
	}
}

// Where kubelet turns a driver's error into a plain one, the outcome is
// not uncertain: an Unavailable answer to the capability query before
// NodeUnstageVolume, or to NodeUnpublishVolume.
func TestSettledErrorsAsKubelet(t *testing.T) {
	e := newEnv(t, []csipb.NodeServiceCapability_RPC_Type{stageCap})
	if _, err := e.p.Stage(context.Background(), csi.StageRequest{Volume: pvVolume()}); err != nil {
		t.Fatal(err)
	}
	e.d.FailNext(fake.NodeGetCapabilities, status.Error(codes.Unavailable, "restarting"))
	err := e.p.Unstage(context.Background(), csi.UnstageRequest{Driver: driverName, VolumeHandle: "vol-1"})
	if err == nil || errors.Is(err, csi.ErrUncertain) || status.Code(err) != codes.Unavailable ||
		err.Error() != "kubernetes.io/csi: attacher.UnmountDevice failed to check whether STAGE_UNSTAGE_VOLUME set: rpc error: code = Unavailable desc = restarting" {
		t.Errorf("err = %v", err)
	}
	e.d.FailNext(fake.NodeUnpublishVolume, status.Error(codes.Unavailable, "restarting"))
	err = e.p.Unpublish(context.Background(), csi.UnpublishRequest{Driver: driverName, VolumeHandle: "vol-1", PodUID: "uid-1", SpecName: "pv-1"})
	if err == nil || errors.Is(err, csi.ErrUncertain) || status.Code(err) != codes.Unavailable {
		t.Errorf("err = %v", err)
	}
	// The same answer to the query before NodeStageVolume is uncertain, as kubelet's.
	e.d.FailNext(fake.NodeGetCapabilities, status.Error(codes.Unavailable, "restarting"))
	if _, err := e.p.Stage(context.Background(), csi.StageRequest{Volume: pvVolume()}); !errors.Is(err, csi.ErrUncertain) {
		t.Errorf("stage: %v", err)
	}
}
