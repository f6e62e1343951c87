package csi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/csi"
	"github.com/podstart/podstart/csi/fake"
)

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "uid-1"},
		Spec:       corev1.PodSpec{ServiceAccountName: "web"},
	}
}

func publishReq() csi.PublishRequest {
	return csi.PublishRequest{
		Volume:         pvVolume(),
		Pod:            testPod(),
		PublishContext: map[string]string{"devicePath": "/dev/xvdb"},
		Secrets:        csi.Secrets{"token": "s3cr3t-value"},
		FSGroup:        int64p(3000),
	}
}

func boolp(b bool) *bool { return &b }

func csiDriver(mut func(*storagev1.CSIDriverSpec)) *storagev1.CSIDriver {
	policy := storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
	d := &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: driverName},
		Spec: storagev1.CSIDriverSpec{
			AttachRequired:       boolp(true),
			PodInfoOnMount:       boolp(false),
			FSGroupPolicy:        &policy,
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
		},
	}
	if mut != nil {
		mut(&d.Spec)
	}
	return d
}

func TestPublishCallsArgumentsAndVolData(t *testing.T) {
	e := newEnv(t, []csipb.NodeServiceCapability_RPC_Type{stageCap, groupCap})
	req := publishReq()
	req.CSIDriver = csiDriver(func(s *storagev1.CSIDriverSpec) { s.PodInfoOnMount = boolp(true) })
	res, err := e.p.Publish(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	staging, _ := e.p.Layout().StagingPath(driverName, "vol-1")
	target, _ := e.p.Layout().PublishPath("uid-1", "pv-1")
	if res.TargetPath != target || res.StagingPath != staging || res.ApplyFSGroup {
		t.Errorf("result = %+v", res)
	}
	if got, want := e.d.Methods(), []string{fake.NodeGetCapabilities, fake.NodeGetCapabilities, fake.NodeGetCapabilities, fake.NodePublishVolume}; !cmp.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
	want := &csipb.NodePublishVolumeRequest{
		VolumeId:          "vol-1",
		PublishContext:    map[string]string{"devicePath": "/dev/xvdb"},
		StagingTargetPath: staging,
		TargetPath:        target,
		VolumeCapability: &csipb.VolumeCapability{
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{
				FsType: "ext4", MountFlags: []string{"noatime"}, VolumeMountGroup: "3000",
			}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		},
		Secrets: map[string]string{"token": "s3cr3t-value"},
		VolumeContext: map[string]string{
			"tier":                                   "gold",
			"csi.storage.k8s.io/pod.name":            "web-0",
			"csi.storage.k8s.io/pod.namespace":       "shop",
			"csi.storage.k8s.io/pod.uid":             "uid-1",
			"csi.storage.k8s.io/serviceAccount.name": "web",
			"csi.storage.k8s.io/ephemeral":           "false",
		},
	}
	calls := e.d.Calls()
	if diff := cmp.Diff(want, calls[3].Request, protocmp.Transform()); diff != "" {
		t.Errorf("NodePublishVolume request (-want +got):\n%s", diff)
	}
	if len(req.VolumeAttributes) != 1 {
		t.Errorf("the caller's volume attributes were written to: %v", req.VolumeAttributes)
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(target), csi.VolDataFileName))
	if err != nil {
		t.Fatal(err)
	}
	wantData := fmt.Sprintf(`{"attachmentID":"%s","driverName":"fake.csi.k8s.io","nodeName":"node-a","specVolID":"pv-1","volumeHandle":"vol-1","volumeLifecycleMode":"Persistent"}`+"\n",
		csi.AttachmentName("vol-1", driverName, "node-a"))
	if string(b) != wantData {
		t.Errorf("vol_data.json = %s\nwant %s", b, wantData)
	}
	d, err := csi.ReadVolumeData(filepath.Dir(target))
	if err != nil || d.SpecVolID != "pv-1" || d.VolumeLifecycleMode != "Persistent" {
		t.Errorf("ReadVolumeData = %+v, %v", d, err)
	}

	e.d.Reset()
	if err := e.p.Unpublish(context.Background(), csi.UnpublishRequest{Driver: driverName, VolumeHandle: "vol-1", PodUID: "uid-1", SpecName: "pv-1"}); err != nil {
		t.Fatal(err)
	}
	if got := e.d.Methods(); !cmp.Equal(got, []string{fake.NodeUnpublishVolume}) {
		t.Errorf("calls = %v", got)
	}
	if exists(t, filepath.Dir(target)) {
		t.Error("volume dir left after unpublish")
	}
}

func TestPublishFSGroupLeftToCallerWithoutMountGroup(t *testing.T) {
	tests := []struct {
		name   string
		policy storagev1.FSGroupPolicy
		fsType string
		modes  []corev1.PersistentVolumeAccessMode
		ro     bool
		want   bool
	}{
		{"RWO ext4", storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, "ext4", []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, false, true},
		{"no fsType", storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, "", []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, false, false},
		{"RWX", storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, "ext4", []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, false, false},
		{"File RWX", storagev1.FileFSGroupPolicy, "", []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, false, true},
		{"None", storagev1.NoneFSGroupPolicy, "ext4", []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, false, false},
		{"read-only", storagev1.FileFSGroupPolicy, "ext4", []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			req := publishReq()
			req.FSType, req.AccessModes, req.ReadOnly = tt.fsType, tt.modes, tt.ro
			req.CSIDriver = csiDriver(func(s *storagev1.CSIDriverSpec) { s.FSGroupPolicy = &tt.policy })
			res, err := e.p.Publish(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if res.ApplyFSGroup != tt.want {
				t.Errorf("ApplyFSGroup = %v, want %v", res.ApplyFSGroup, tt.want)
			}
			if res.StagingPath != "" {
				t.Errorf("staging path %q from a driver that does not stage", res.StagingPath)
			}
		})
	}
}

func TestPublishInlineEphemeral(t *testing.T) {
	e := newEnv(t, []csipb.NodeServiceCapability_RPC_Type{stageCap})
	pod := testPod()
	vol := &corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
		Driver: driverName, VolumeAttributes: map[string]string{"size": "1Gi"},
		NodePublishSecretRef: &corev1.LocalObjectReference{Name: "creds"},
	}}}
	v, err := csi.VolumeFromInline(pod, vol)
	if err != nil {
		t.Fatal(err)
	}
	if v.NodePublishSecretRef.Namespace != "shop" {
		t.Errorf("secret ref = %+v", v.NodePublishSecretRef)
	}
	// No CSIDriver object: kubelet refuses an inline volume by name.
	_, err = e.p.Publish(context.Background(), csi.PublishRequest{Volume: v, Pod: pod})
	if !errors.Is(err, csi.ErrNotSupported) || !strings.Contains(err.Error(), `volume mode "Ephemeral" not supported by driver fake.csi.k8s.io (no CSIDriver object)`) {
		t.Fatalf("err = %v", err)
	}
	e.d.Reset()
	d := csiDriver(func(s *storagev1.CSIDriverSpec) {
		s.PodInfoOnMount = boolp(true)
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}
	})
	if _, err := e.p.Publish(context.Background(), csi.PublishRequest{Volume: v, Pod: pod, CSIDriver: d}); err != nil {
		t.Fatal(err)
	}
	// No STAGE_UNSTAGE query for an inline volume.
	if got := e.d.Methods(); !cmp.Equal(got, []string{fake.NodeGetCapabilities, fake.NodeGetCapabilities, fake.NodePublishVolume}) {
		t.Errorf("calls = %v", got)
	}
	calls := e.d.Calls()
	req := calls[2].Request.(*csipb.NodePublishVolumeRequest)
	if req.VolumeId != csi.EphemeralVolumeHandle("uid-1", "scratch") || req.StagingTargetPath != "" || req.VolumeContext[csi.KeyEphemeral] != "true" || req.VolumeContext["size"] != "1Gi" {
		t.Errorf("request = %v", req)
	}
	data, err := csi.ReadVolumeData(filepath.Dir(req.TargetPath))
	if err != nil || data.VolumeLifecycleMode != "Ephemeral" {
		t.Errorf("vol data = %+v %v", data, err)
	}
}

func TestPublishTokens(t *testing.T) {
	e := newEnv(t, nil)
	req := publishReq()
	req.CSIDriver = csiDriver(func(s *storagev1.CSIDriverSpec) {
		s.TokenRequests = []storagev1.TokenRequest{{Audience: "vault"}}
	})
	// No getter: refused by name, nothing sent.
	if _, err := e.p.Publish(context.Background(), req); !errors.Is(err, csi.ErrUnsupported) || !strings.Contains(err.Error(), "tokenRequests") {
		t.Fatalf("err = %v", err)
	}
	var asked *authenticationv1.TokenRequest
	req.Tokens = func(_ context.Context, ns, sa string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
		if ns != "shop" || sa != "web" {
			t.Errorf("token for %s/%s", ns, sa)
		}
		asked = tr
		return &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{Token: "jwt-abcdef"}}, nil
	}
	e.d.Reset()
	if _, err := e.p.Publish(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if asked.Spec.BoundObjectRef.Name != "web-0" || asked.Spec.Audiences[0] != "vault" {
		t.Errorf("token request = %+v", asked.Spec)
	}
	calls := e.d.Calls()
	got := calls[len(calls)-1].Request.(*csipb.NodePublishVolumeRequest).VolumeContext[csi.KeyTokens]
	if got != `{"vault":{"token":"jwt-abcdef","expirationTimestamp":null}}` {
		t.Errorf("tokens attribute = %s", got)
	}
	// A driver that echoes the bare token in its error: redacted.
	e.d.FailNext(fake.NodePublishVolume, status.Error(codes.Unauthenticated, "token jwt-abcdef rejected"))
	if _, err := e.p.Publish(context.Background(), req); err == nil || strings.Contains(err.Error(), "jwt-abcdef") {
		t.Errorf("error = %v", err)
	}
}

func TestSecretsNeverInErrorsOrLogs(t *testing.T) {
	e := newEnv(t, []csipb.NodeServiceCapability_RPC_Type{stageCap})
	var logs bytes.Buffer
	log := funcr.New(func(prefix, args string) { logs.WriteString(prefix + args + "\n") }, funcr.Options{Verbosity: 10})
	ctx := logrContext(log)
	// A driver that echoes its request (secrets included) in its error.
	e.d.FailNext(fake.NodeStageVolume, status.Error(codes.InvalidArgument, "bad request: password=hunter22-secret"))
	_, err := e.p.Stage(ctx, csi.StageRequest{Volume: pvVolume(), Secrets: csi.Secrets{"password": "hunter22-secret"}})
	if err == nil || strings.Contains(err.Error(), "hunter22-secret") || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("stage error = %v", err)
	}
	e.d.FailNext(fake.NodePublishVolume, status.Error(codes.Internal, "cannot use s3cr3t-value"))
	_, err = e.p.Publish(ctx, publishReq())
	if err == nil || strings.Contains(err.Error(), "s3cr3t-value") {
		t.Errorf("publish error = %v", err)
	}
	for _, s := range []string{"hunter22-secret", "s3cr3t-value"} {
		if strings.Contains(logs.String(), s) {
			t.Errorf("log holds a secret:\n%s", logs.String())
		}
	}
	if logs.Len() == 0 {
		t.Error("nothing logged: the check above proves nothing")
	}
	// Printed requests show secret keys only.
	printed := fmt.Sprintf("%v %+v %#v", publishReq(), publishReq(), publishReq().Secrets)
	if strings.Contains(printed, "s3cr3t-value") || !strings.Contains(printed, "token") {
		t.Errorf("printed request: %s", printed)
	}
}

func TestBlockStageAndPublish(t *testing.T) {
	e := newEnv(t, []csipb.NodeServiceCapability_RPC_Type{stageCap, groupCap})
	v := pvVolume()
	v.Block = true
	res, err := e.p.Stage(context.Background(), csi.StageRequest{Volume: v, FSGroup: int64p(9)})
	if err != nil {
		t.Fatal(err)
	}
	paths, _ := e.p.Layout().BlockPaths("uid-1", "pv-1")
	if res.StagingPath != paths.Staging {
		t.Errorf("staging = %s, want %s", res.StagingPath, paths.Staging)
	}
	calls := e.d.Calls()
	sreq := calls[len(calls)-1].Request.(*csipb.NodeStageVolumeRequest)
	if sreq.GetVolumeCapability().GetBlock() == nil || sreq.PublishContext == nil && len(sreq.PublishContext) != 0 {
		t.Errorf("stage request = %v", sreq)
	}
	d, err := csi.ReadVolumeData(paths.DataDir)
	if err != nil || d.SpecVolID != "pv-1" || d.AttachmentID != csi.AttachmentName("vol-1", driverName, "node-a") {
		t.Errorf("block vol data = %+v %v", d, err)
	}
	pr := publishReq()
	pr.Volume = v
	pres, err := e.p.Publish(context.Background(), pr)
	if err != nil {
		t.Fatal(err)
	}
	calls = e.d.Calls()
	preq := calls[len(calls)-1].Request.(*csipb.NodePublishVolumeRequest)
	if preq.TargetPath != paths.Publish || preq.StagingTargetPath != paths.Staging || preq.GetVolumeCapability().GetBlock() == nil || pres.TargetPath != paths.Publish {
		t.Errorf("publish request = %v", preq)
	}
	if err := e.p.Unpublish(context.Background(), csi.UnpublishRequest{Driver: driverName, VolumeHandle: "vol-1", PodUID: "uid-1", SpecName: "pv-1", Block: true}); err != nil {
		t.Fatal(err)
	}
	if err := e.p.Unstage(context.Background(), csi.UnstageRequest{Driver: driverName, VolumeHandle: "vol-1", SpecName: "pv-1", Block: true}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{paths.Staging, paths.DataDir, filepath.Dir(paths.Publish), filepath.Dir(paths.DataDir)} {
		if exists(t, p) {
			t.Errorf("%s left after unstage", p)
		}
	}
}

func TestVolumeStatsAndExpand(t *testing.T) {
	e := newEnv(t, []csipb.NodeServiceCapability_RPC_Type{stageCap})
	if _, err := e.p.VolumeStats(context.Background(), driverName, "vol-1", "/p"); !errors.Is(err, csi.ErrNotSupported) {
		t.Errorf("stats without capability: %v", err)
	}
	if _, err := e.p.Expand(context.Background(), csi.ExpandRequest{Volume: pvVolume(), VolumePath: "/p", NewSize: 1}); !errors.Is(err, csi.ErrNotSupported) {
		t.Errorf("expand without capability: %v", err)
	}
	d := fake.New(driverName, fake.WithCapabilities(statsCap, expCap), fake.WithVolumeStats(&csipb.NodeGetVolumeStatsResponse{
		Usage: []*csipb.VolumeUsage{
			{Unit: csipb.VolumeUsage_BYTES, Total: 100, Used: 40, Available: 60},
			{Unit: csipb.VolumeUsage_INODES, Total: 10, Used: 1, Available: 9},
		},
	}))
	sock, err := d.Serve(filepath.Join(shortDir(t), "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	e.p.DeRegisterPlugin(driverName, e.socket)
	if err := e.p.RegisterPlugin(context.Background(), driverName, sock, []string{"1.0.0"}, 0); err != nil {
		t.Fatal(err)
	}
	s, err := e.p.VolumeStats(context.Background(), driverName, "vol-1", "/p")
	if err != nil || s != (csi.VolumeStats{Capacity: 100, Used: 40, Available: 60, Inodes: 10, InodesUsed: 1, InodesFree: 9}) {
		t.Errorf("stats = %+v %v", s, err)
	}
	size, err := e.p.Expand(context.Background(), csi.ExpandRequest{Volume: pvVolume(), VolumePath: "/p", StagingPath: "/s", NewSize: 2 << 30, Secrets: csi.Secrets{"k": "expand-secret"}})
	if err != nil || size != 2<<30 {
		t.Errorf("expand = %d %v", size, err)
	}
	calls := d.Calls()
	xreq := calls[len(calls)-1].Request.(*csipb.NodeExpandVolumeRequest)
	if xreq.StagingTargetPath != "/s" || xreq.GetVolumeCapability().GetMount().GetFsType() != "ext4" || xreq.Secrets["k"] != "expand-secret" {
		t.Errorf("expand request = %v", xreq)
	}
	d.FailNext(fake.NodeExpandVolume, status.Error(codes.FailedPrecondition, "in use"))
	if _, err := e.p.Expand(context.Background(), csi.ExpandRequest{Volume: pvVolume(), VolumePath: "/p", NewSize: 1}); !errors.Is(err, csi.ErrVolumeInUse) {
		t.Errorf("in use: %v", err)
	}
	d.FailNext(fake.NodeExpandVolume, status.Error(codes.OutOfRange, "too big"))
	if _, err := e.p.Expand(context.Background(), csi.ExpandRequest{Volume: pvVolume(), VolumePath: "/p", NewSize: 1}); !errors.Is(err, csi.ErrInfeasible) {
		t.Errorf("infeasible: %v", err)
	}
}

func TestPublishRefusesHostileOrInconsistentRequests(t *testing.T) {
	e := newEnv(t, nil)
	req := publishReq()
	req.Pod = testPod()
	req.Pod.UID = "../../etc"
	if _, err := e.p.Publish(context.Background(), req); !errors.Is(err, csi.ErrInvalidName) || !strings.Contains(err.Error(), "pod UID") {
		t.Errorf("hostile pod UID: %v", err)
	}
	req = publishReq()
	req.Ephemeral = true // a handle that is not kubelet's for this pod and volume
	if _, err := e.p.Publish(context.Background(), req); !errors.Is(err, csi.ErrInvalidRequest) {
		t.Errorf("inline volume with a foreign handle: %v", err)
	}
	req = publishReq()
	req.Pod = nil
	if _, err := e.p.Publish(context.Background(), req); !errors.Is(err, csi.ErrInvalidRequest) {
		t.Errorf("no pod: %v", err)
	}
	if err := e.p.Unpublish(context.Background(), csi.UnpublishRequest{Driver: driverName, VolumeHandle: "v", PodUID: "u", SpecName: ".."}); !errors.Is(err, csi.ErrInvalidName) {
		t.Errorf("hostile spec name on unpublish: %v", err)
	}
	if len(e.d.Calls()) != 0 {
		t.Errorf("refused requests reached the driver: %v", e.d.Methods())
	}
	// A tampered vol_data.json cannot steer a later operation.
	dir, _ := e.p.Layout().PublishPath("uid-1", "pv-1")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(dir), csi.VolDataFileName), []byte(`{"driverName":"../x","volumeHandle":"v","specVolID":"../../y"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := csi.ReadVolumeData(filepath.Dir(dir)); !errors.Is(err, csi.ErrInvalidName) {
		t.Errorf("tampered vol_data.json: %v", err)
	}
}
