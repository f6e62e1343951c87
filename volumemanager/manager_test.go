package volumemanager

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestPVCPodStagePublishUnpublishUnstage(t *testing.T) {
	e := newEnv(t)
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	e.objs.Set(claim, pv, csiDriver(driver, false))
	pod := newPod("web", "uid-web", claimVolume("data", "data"))
	ctx := context.Background()
	if err := e.m.AddPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t)
	if err := e.m.WaitForAttachAndMount(ctx, pod); err != nil {
		t.Fatalf("WaitForAttachAndMount: %v", err)
	}
	sum := sha256.Sum256([]byte("vol-1"))
	staging := filepath.Join(e.root, "plugins/kubernetes.io/csi", driver, hex.EncodeToString(sum[:]), "globalmount")
	if got := StagingPath(e.root, driver, "vol-1"); got != staging {
		t.Errorf("StagingPath = %s, want %s", got, staging)
	}
	target := filepath.Join(e.root, "pods/uid-web/volumes/kubernetes.io~csi/pv-data/mount")
	if got, want := e.node.callsOf("Stage"), []string{"vol-1 " + staging}; !slices.Equal(got, want) {
		t.Errorf("Stage calls = %q, want %q", got, want)
	}
	if got, want := e.node.callsOf("Publish"), []string{"vol-1 " + target}; !slices.Equal(got, want) {
		t.Errorf("Publish calls = %q, want %q", got, want)
	}
	pub := e.node.publishes[0]
	if pub.Pod == nil || pub.Pod.UID != pod.UID || pub.CSIDriver == nil || pub.CSIDriver.Name != driver {
		t.Errorf("PublishRequest's pod and CSIDriver = %v, %v; want %s and %s", pub.Pod, pub.CSIDriver, pod.UID, driver)
	}
	pub.Pod, pub.CSIDriver = nil, nil
	want := PublishRequest{
		Driver: driver, VolumeHandle: "vol-1", StagingPath: staging, TargetPath: target, SpecName: "pv-data",
		Capability:    Capability{AccessMode: corev1.ReadWriteOnce, FSType: "ext4"},
		VolumeContext: map[string]string{"tier": "gold"}, Secrets: map[string]string{},
	}
	if d := cmp.Diff(want, pub); d != "" {
		t.Errorf("PublishRequest (-want +got):\n%s", d)
	}
	vols, err := e.m.Volumes(ctx, pod)
	if err != nil || vols["data"].HostPath != target {
		t.Errorf("Volumes = %v, %v; want data at %s", vols, err, target)
	}
	// vol_data.json is the NodeVolumes' (TestCSIAdapter checks csi's).
	if got := e.m.VolumesInUse(); len(got) != 0 {
		t.Errorf("VolumesInUse = %v for a driver without attach", got)
	}

	// The containers are gone: nothing is unpublished before the sources
	// are ready, then everything is.
	e.m.RemovePod(pod.UID)
	e.reconcile(t)
	if got := e.node.callsOf("Unpublish"); len(got) != 0 {
		t.Fatalf("unpublished before SourcesReady: %q", got)
	}
	e.m.SourcesReady()
	e.reconcile(t)
	if err := e.m.WaitForUnmount(ctx, pod); err != nil {
		t.Fatalf("WaitForUnmount: %v", err)
	}
	if got, want := e.node.callsOf("Unpublish"), []string{"vol-1 " + target}; !slices.Equal(got, want) {
		t.Errorf("Unpublish calls = %q, want %q", got, want)
	}
	if got, want := e.node.callsOf("Unstage"), []string{"vol-1 " + staging}; !slices.Equal(got, want) {
		t.Errorf("Unstage calls = %q, want %q", got, want)
	}
	if got := leftovers(t, e.root); len(got) != 0 {
		t.Errorf("left on disk: %q", got)
	}
}

func readJSON(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSharedVolumeStagedOnce(t *testing.T) {
	e := newEnv(t)
	claim, pv := boundClaim("shared", "pv-shared", "vol-s")
	e.objs.Set(claim, pv, csiDriver(driver, false))
	a := newPod("a", "uid-a", claimVolume("data", "shared"))
	b := newPod("b", "uid-b", claimVolume("files", "shared"))
	ctx := context.Background()
	for _, p := range []*corev1.Pod{a, b} {
		if err := e.m.AddPod(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	e.m.SourcesReady()
	e.reconcile(t)
	for _, p := range []*corev1.Pod{a, b} {
		if err := e.m.WaitForAttachAndMount(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(e.node.callsOf("Stage")); got != 1 {
		t.Errorf("staged %d times, want once", got)
	}
	if got := len(e.node.callsOf("Publish")); got != 2 {
		t.Errorf("published %d times, want once per pod", got)
	}
	if err := e.m.WaitForUnmountAfter(ctx, t, e, a); err != nil {
		t.Fatal(err)
	}
	if got := e.node.callsOf("Unstage"); len(got) != 0 {
		t.Errorf("unstaged while pod b uses the volume: %q", got)
	}
	if err := e.m.WaitForUnmountAfter(ctx, t, e, b); err != nil {
		t.Fatal(err)
	}
	if got := len(e.node.callsOf("Unstage")); got != 1 {
		t.Errorf("unstaged %d times, want once", got)
	}
	if got := leftovers(t, e.root); len(got) != 0 {
		t.Errorf("left on disk: %q", got)
	}
}

// WaitForUnmountAfter removes the pod, runs one pass and waits.
func (m *Manager) WaitForUnmountAfter(ctx context.Context, t *testing.T, e *env, pod *corev1.Pod) error {
	m.RemovePod(pod.UID)
	e.reconcile(t)
	return m.WaitForUnmount(ctx, pod)
}

func TestEphemeralVolume(t *testing.T) {
	ephemeral := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}},
	}}}
	for _, tc := range []struct {
		name    string
		owned   bool
		wantErr string
	}{
		{name: "owned by the pod", owned: true},
		{name: "not owned", wantErr: "unmounted volumes=[scratch], unattached volumes=[], failed to process volumes=[scratch]: PVC default/job-scratch was not created for pod default/job (pod is not owner)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			pod := newPod("job", "uid-job", ephemeral)
			claim, pv := boundClaim("job-scratch", "pv-scratch", "vol-e")
			if tc.owned {
				yes := true
				claim.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "job", UID: pod.UID, Controller: &yes}}
			}
			e.objs.Set(claim, pv, csiDriver(driver, false))
			ctx := context.Background()
			if err := e.m.AddPod(ctx, pod); err != nil {
				t.Fatal(err)
			}
			e.reconcile(t)
			err := e.m.WaitForAttachAndMount(ctx, pod)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := e.node.callsOf("Publish"); len(got) != 1 || !strings.HasSuffix(got[0], "/pods/uid-job/volumes/kubernetes.io~csi/pv-scratch/mount") {
					t.Errorf("Publish calls = %q", got)
				}
				return
			}
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("err = %v\nwant %s", err, tc.wantErr)
			}
			if got := e.node.callsOf("Stage"); len(got) != 0 {
				t.Errorf("staged a claim the pod does not own: %q", got)
			}
			if ev := e.rec.list(); len(ev) != 1 || ev[0] != "Warning FailedMount Unable to attach or mount volumes: "+tc.wantErr {
				t.Errorf("events = %q", ev)
			}
		})
	}
}

func TestInlineVolume(t *testing.T) {
	inline := corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
		Driver: driver, VolumeAttributes: map[string]string{"size": "1Gi"},
	}}}
	for _, tc := range []struct {
		name      string
		drv       *storagev1.CSIDriver
		wantEvent string
	}{
		{name: "driver supports Ephemeral", drv: csiDriver(driver, false, storagev1.VolumeLifecycleEphemeral)},
		{name: "driver only Persistent", drv: csiDriver(driver, false),
			wantEvent: `Warning FailedMount MountVolume.SetUp failed for volume "cache" : kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: volume mode "Ephemeral" not supported by driver csi.example.com (only supports ["Persistent"])`},
		{name: "no CSIDriver",
			wantEvent: `Warning FailedMount MountVolume.SetUp failed for volume "cache" : kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: volume mode "Ephemeral" not supported by driver csi.example.com (no CSIDriver object)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.drv != nil {
				e.objs.Set(tc.drv)
			}
			pod := newPod("p", "uid-p", inline)
			ctx := context.Background()
			if err := e.m.AddPod(ctx, pod); err != nil {
				t.Fatal(err)
			}
			e.reconcile(t)
			if tc.wantEvent != "" {
				if ev := e.rec.list(); len(ev) != 1 || ev[0] != tc.wantEvent {
					t.Errorf("events = %q\nwant %q", ev, tc.wantEvent)
				}
				if got := e.node.callsOf("Publish"); len(got) != 0 {
					t.Errorf("published: %q", got)
				}
				return
			}
			if err := e.m.WaitForAttachAndMount(ctx, pod); err != nil {
				t.Fatal(err)
			}
			if got := e.node.callsOf("Stage"); len(got) != 0 {
				t.Errorf("an inline volume was staged: %q", got)
			}
			pub := e.node.publishes[0]
			if pub.VolumeHandle != InlineVolumeHandle("uid-p", "cache") || !pub.Ephemeral || pub.StagingPath != "" ||
				pub.TargetPath != TargetPath(e.root, "uid-p", "cache") || pub.VolumeContext["size"] != "1Gi" {
				t.Errorf("PublishRequest = %+v", pub)
			}
			if got := e.m.VolumesInUse(); len(got) != 0 {
				t.Errorf("VolumesInUse = %v for an inline volume", got)
			}
			if got, want := InlineVolumeName("uid-p", "cache"), corev1.UniqueVolumeName("kubernetes.io/csi/uid-p-cache"); got != want {
				t.Errorf("InlineVolumeName = %q, want %q", got, want)
			}
		})
	}
}

func TestClaimErrors(t *testing.T) {
	now := metav1.NewTime(t0)
	for _, tc := range []struct {
		name   string
		edit   func(*corev1.PersistentVolumeClaim, *corev1.PersistentVolume)
		noPVC  bool
		noPV   bool
		reason string
	}{
		{name: "claim missing", noPVC: true, reason: `failed to fetch PVC from API server: persistentvolumeclaims "data" not found`},
		{name: "claim pending", edit: func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) {
			c.Status.Phase = corev1.ClaimPending
		}, reason: "PVC is not bound"},
		{name: "claim lost", edit: func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) { c.Status.Phase = corev1.ClaimLost }, reason: "PVC is not bound"},
		{name: "claim without volume name", edit: func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) { c.Spec.VolumeName = "" }, reason: "PVC has empty pvc.Spec.VolumeName"},
		{name: "claim being deleted", edit: func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) { c.DeletionTimestamp = &now }, reason: "PVC is being deleted"},
		{name: "PV missing", noPV: true, reason: `failed to fetch PV pv-data from API server: persistentvolumes "pv-data" not found`},
		{name: "PV not bound", edit: func(_ *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) { v.Spec.ClaimRef = nil },
			reason: "found PV object pv-data but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim"},
		{name: "PV bound to another claim", edit: func(_ *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) { v.Spec.ClaimRef.UID = "other" },
			reason: "found PV object pv-data but its pv.Spec.ClaimRef.UID other does not point to claim.UID uid-data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			claim, pv := boundClaim("data", "pv-data", "vol-1")
			if tc.edit != nil {
				tc.edit(claim, pv)
			}
			if !tc.noPVC {
				e.objs.Set(claim)
			}
			if !tc.noPV {
				e.objs.Set(pv)
			}
			pod := newPod("web", "uid-web", claimVolume("data", "data"))
			err := e.m.WaitForAttachAndMount(context.Background(), pod)
			want := "unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC default/data: " + tc.reason
			if err == nil || err.Error() != want {
				t.Fatalf("err = %v\nwant %s", err, want)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Error("a pod error is not a timeout")
			}
		})
	}
}

func TestClaimBeingDeletedWithProtectionIsUsable(t *testing.T) {
	e := newEnv(t)
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	now := metav1.NewTime(t0)
	claim.DeletionTimestamp, claim.Finalizers = &now, []string{"kubernetes.io/pvc-protection"}
	e.objs.Set(claim, pv, csiDriver(driver, false))
	pod := newPod("web", "uid-web", claimVolume("data", "data"))
	if err := e.m.AddPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t)
	if err := e.m.WaitForAttachAndMount(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

func TestUnusedVolumeIsSkipped(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "uid-web")
	pod.Spec.Volumes = []corev1.Volume{claimVolume("data", "missing")}
	if err := e.m.WaitForAttachAndMount(context.Background(), pod); err != nil {
		t.Fatalf("a volume no container uses was waited for: %v", err)
	}
}

// TestAttachWait: a driver that needs attaching (no CSIDriver) is mounted
// only after the node reports it in use and its VolumeAttachment says
// attached; the wait times out with kubelet's message.
func TestAttachWait(t *testing.T) {
	e := newEnv(t)
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	e.objs.Set(claim, pv)
	pod := newPod("db", "uid-db", claimVolume("data", "data"))
	ctx := context.Background()
	name := UniqueVolumeName(driver, "vol-1")

	done := make(chan error, 1)
	go func() { done <- e.m.WaitForAttachAndMount(ctx, pod) }()
	// Counted event: the wait has made its timer.
	for !e.clock.HasWaiters() {
		e.reconcile(t)
	}
	e.reconcile(t)
	if got := e.m.VolumesInUse(); !slices.Equal(got, []corev1.UniqueVolumeName{name}) {
		t.Errorf("VolumesInUse = %v, want [%s]", got, name)
	}
	if got := e.node.callsOf("Stage"); len(got) != 0 {
		t.Fatalf("staged before the volume was reported in use: %q", got)
	}
	e.m.MarkVolumesReportedInUse([]corev1.UniqueVolumeName{name})
	e.reconcile(t)
	if got := e.node.callsOf("Stage"); len(got) != 0 {
		t.Fatalf("staged without a VolumeAttachment: %q", got)
	}
	e.clock.Step(PodAttachAndMountTimeout)
	err := <-done
	want := "unmounted volumes=[data], unattached volumes=[data], failed to process volumes=[]: context deadline exceeded"
	if err == nil || err.Error() != want || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if ev := e.rec.list(); len(ev) != 0 {
		t.Errorf("a timeout recorded events (kubelet records none): %q", ev)
	}

	vaName := AttachmentName("vol-1", driver, node)
	if !strings.HasPrefix(vaName, "csi-") || len(vaName) != 4+64 {
		t.Errorf("AttachmentName = %q", vaName)
	}
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: vaName},
		Status: storagev1.VolumeAttachmentStatus{Attached: false}}
	e.objs.Set(va)
	e.reconcile(t)
	if got := e.node.callsOf("Stage"); len(got) != 0 {
		t.Fatalf("staged before attached: %q", got)
	}
	va.Status = storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"devicePath": "/dev/xvdb"}}
	e.objs.Set(va)
	e.reconcile(t)
	if err := e.m.WaitForAttachAndMount(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if got := e.node.stages[0].PublishContext; got["devicePath"] != "/dev/xvdb" {
		t.Errorf("stage publish context = %v", got)
	}
	if got := e.node.publishes[0].PublishContext; got["devicePath"] != "/dev/xvdb" {
		t.Errorf("publish context = %v", got)
	}
	// Still in use while attached, after the pod is gone and until unstaged.
	e.m.RemovePod(pod.UID)
	if got := e.m.VolumesInUse(); !slices.Equal(got, []corev1.UniqueVolumeName{name}) {
		t.Errorf("VolumesInUse after RemovePod = %v", got)
	}
	e.m.SourcesReady()
	e.reconcile(t)
	if got := e.m.VolumesInUse(); len(got) != 0 {
		t.Errorf("VolumesInUse after unstage = %v", got)
	}
}

// TestStageFailsThenSucceeds: the failed stage is an event with kubelet's
// words, retried only after the back-off, and then the pod runs.
func TestStageFailsThenSucceeds(t *testing.T) {
	e := newEnv(t)
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "stage-creds"}, Data: map[string][]byte{"password": []byte("hunter2")}}
	pv.Spec.CSI.NodeStageSecretRef = &corev1.SecretReference{Namespace: "kube-system", Name: "stage-creds"}
	e.objs.Set(claim, pv, sec, csiDriver(driver, false))
	e.node.failNext("Stage", errors.New("rpc error: code = Internal desc = device busy"))
	pod := newPod("web", "uid-web", claimVolume("data", "data"))
	ctx := context.Background()
	if err := e.m.AddPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t)
	want := `Warning FailedMount MountVolume.MountDevice failed for volume "pv-data" : rpc error: code = Internal desc = device busy`
	if ev := e.rec.list(); len(ev) != 1 || ev[0] != want {
		t.Fatalf("events = %q\nwant %q", ev, want)
	}
	e.reconcile(t) // within the back-off: not retried
	if got := len(e.node.callsOf("Stage")); got != 1 {
		t.Fatalf("Stage called %d times within the back-off", got)
	}
	e.clock.Step(initialRetryDelay)
	e.reconcile(t)
	if err := e.m.WaitForAttachAndMount(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if got := len(e.node.callsOf("Stage")); got != 2 {
		t.Errorf("Stage called %d times, want 2", got)
	}
	if got := e.node.stages[0].Secrets["password"]; got != "hunter2" {
		t.Errorf("stage secrets not passed")
	}
	for _, ev := range e.rec.list() {
		if strings.Contains(ev, "hunter2") {
			t.Errorf("secret in an event: %q", ev)
		}
	}
}

func TestSecretMissingNamesItWithoutContent(t *testing.T) {
	e := newEnv(t)
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	pv.Spec.CSI.NodePublishSecretRef = &corev1.SecretReference{Namespace: "kube-system", Name: "pub"}
	e.objs.Set(claim, pv, csiDriver(driver, false))
	pod := newPod("web", "uid-web", claimVolume("data", "data"))
	if err := e.m.AddPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	err := e.m.Reconcile(context.Background())
	if err == nil || !strings.Contains(err.Error(), "fetching NodePublishSecretRef kube-system/pub failed") {
		t.Fatalf("err = %v", err)
	}
	if got := e.node.callsOf("Publish"); len(got) != 0 {
		t.Errorf("published without its secret: %q", got)
	}
}

func TestPodInfoAndFSGroupDelegation(t *testing.T) {
	e := newEnv(t)
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	drv := csiDriver(driver, false)
	yes := true
	drv.Spec.PodInfoOnMount = &yes
	e.objs.Set(claim, pv, drv)
	e.node.caps[driver] = NodeCapabilities{StageUnstage: true, VolumeMountGroup: true}
	pod := newPod("web", "uid-web", claimVolume("data", "data"))
	gid := int64(2000)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: &gid}
	pod.Spec.ServiceAccountName = "builder"
	if err := e.m.AddPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t)
	if err := e.m.WaitForAttachAndMount(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	pub := e.node.publishes[0]
	want := map[string]string{
		"tier": "gold", "csi.storage.k8s.io/pod.name": "web", "csi.storage.k8s.io/pod.namespace": ns,
		"csi.storage.k8s.io/pod.uid": "uid-web", "csi.storage.k8s.io/serviceAccount.name": "builder", "csi.storage.k8s.io/ephemeral": "false",
	}
	if d := cmp.Diff(want, pub.VolumeContext); d != "" {
		t.Errorf("volume context (-want +got):\n%s", d)
	}
	if pub.FSGroup == nil || *pub.FSGroup != gid || e.node.stages[0].FSGroup == nil || *e.node.stages[0].FSGroup != gid {
		t.Errorf("fsGroup not delegated: publish %v, stage %v", pub.FSGroup, e.node.stages[0].FSGroup)
	}
}

func TestRefusedByName(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*corev1.Pod, *corev1.PersistentVolume, *storagev1.CSIDriver)
		want string
		is   error
	}{
		{name: "token requests", edit: func(_ *corev1.Pod, _ *corev1.PersistentVolume, d *storagev1.CSIDriver) {
			d.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "vault"}}
		}, want: "tokenRequests", is: ErrUnsupported},
		{name: "requires republish", edit: func(_ *corev1.Pod, _ *corev1.PersistentVolume, d *storagev1.CSIDriver) {
			yes := true
			d.Spec.RequiresRepublish = &yes
		}, want: "requiresRepublish", is: ErrUnsupported},
		{name: "node allocatable updates", edit: func(_ *corev1.Pod, _ *corev1.PersistentVolume, d *storagev1.CSIDriver) {
			period := int64(60)
			d.Spec.NodeAllocatableUpdatePeriodSeconds = &period
		}, want: "nodeAllocatableUpdatePeriodSeconds", is: ErrUnsupported},
		{name: "in-tree PV", edit: func(_ *corev1.Pod, v *corev1.PersistentVolume, _ *storagev1.CSIDriver) {
			v.Spec.CSI, v.Spec.NFS = nil, &corev1.NFSVolumeSource{Server: "nfs", Path: "/x"}
		}, want: "not a CSI volume", is: ErrUnsupported},
		{name: "hostile PV name", edit: func(_ *corev1.Pod, v *corev1.PersistentVolume, _ *storagev1.CSIDriver) { v.Name = "../../etc" },
			want: "PV name", is: ErrInvalidName},
		{name: "hostile driver name", edit: func(_ *corev1.Pod, v *corev1.PersistentVolume, _ *storagev1.CSIDriver) { v.Spec.CSI.Driver = "../x" },
			want: "CSI driver name", is: ErrInvalidName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			claim, pv := boundClaim("data", "pv-data", "vol-1")
			drv := csiDriver(driver, false)
			pod := newPod("web", "uid-web", claimVolume("data", "data"))
			tc.edit(pod, pv, drv)
			e.objs.Set(claim, drv)
			if pv.Name == "pv-data" {
				e.objs.Set(pv)
			} else {
				claim.Spec.VolumeName = pv.Name
				e.objs.Set(claim, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pv.Name}, Spec: pv.Spec})
			}
			if err := e.m.AddPod(context.Background(), pod); err != nil {
				t.Fatal(err)
			}
			e.m.mu.Lock()
			errs := slices.Clone(e.m.pods[pod.UID].errors)
			e.m.mu.Unlock()
			if len(errs) != 1 || !strings.Contains(errs[0], tc.want) {
				t.Fatalf("pod errors = %q, want one naming %q", errs, tc.want)
			}
			used, devices := usedVolumes(pod)
			_, err := e.m.resolve(context.Background(), pod, pod.Spec.Volumes[0], used, devices)
			if !errors.Is(err, tc.is) {
				t.Errorf("resolve error %v is not %v", err, tc.is)
			}
			e.reconcile(t)
			if calls := e.node.calls; len(calls) != 0 {
				t.Errorf("driver called: %q", calls)
			}
		})
	}
}

func TestInvalidPodRefusedBeforeAnyPath(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "../../escape", claimVolume("data", "data"))
	err := e.m.WaitForAttachAndMount(context.Background(), pod)
	if err == nil || !strings.Contains(err.Error(), "uid") {
		t.Fatalf("err = %v, want the invalid UID refused", err)
	}
	if _, err := e.m.Volumes(context.Background(), pod); err == nil {
		t.Error("Volumes accepted an invalid pod")
	}
}

func TestWaitForUnmountTimesOut(t *testing.T) {
	e := newEnv(t)
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	e.objs.Set(claim, pv, csiDriver(driver, false))
	pod := newPod("web", "uid-web", claimVolume("data", "data"))
	ctx := context.Background()
	if err := e.m.AddPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	e.m.SourcesReady()
	e.reconcile(t)
	e.node.failNext("Unpublish", errors.New("rpc error: code = Internal desc = busy"))
	done := make(chan error, 1)
	go func() { done <- e.m.WaitForUnmount(ctx, pod) }()
	for !e.clock.HasWaiters() {
		runtime.Gosched() // the condition is the counted event
	}
	e.reconcile(t) // the unpublish fails
	e.clock.Step(PodAttachAndMountTimeout)
	err := <-done
	want := "mounted volumes=[kubernetes.io/csi/csi.example.com^vol-1]: context deadline exceeded"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

// TestFSGroupAppliedByTheManager: a driver without VOLUME_MOUNT_GROUP gets
// no fsGroup; the manager gives the published volume the group itself
// (fsGroupPolicy File), as kubelet does.
func TestFSGroupAppliedByTheManager(t *testing.T) {
	e := newEnv(t)
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	drv := csiDriver(driver, false)
	policy := storagev1.FileFSGroupPolicy
	drv.Spec.FSGroupPolicy = &policy
	e.objs.Set(claim, pv, drv)
	pod := newPod("web", "uid-web", claimVolume("data", "data"))
	gid := int64(os.Getgid()) // a group this process may give, root or not
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: &gid}
	if err := e.m.AddPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t)
	if err := e.m.WaitForAttachAndMount(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if e.node.publishes[0].FSGroup != nil || e.node.stages[0].FSGroup != nil {
		t.Error("fsGroup sent to a driver without VOLUME_MOUNT_GROUP")
	}
	info, err := os.Stat(TargetPath(e.root, "uid-web", "pv-data"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode()&os.ModeSetgid == 0 || info.Mode().Perm()&0o660 != 0o660 {
		t.Errorf("target mode %v: fsGroup not applied", info.Mode())
	}
}

// TestDriverWithoutStaging: no Stage or Unstage call, no staging path in
// Publish; the staging directory kubelet makes anyway is removed.
func TestDriverWithoutStaging(t *testing.T) {
	e := newEnv(t)
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	e.objs.Set(claim, pv, csiDriver(driver, false))
	e.node.caps[driver] = NodeCapabilities{}
	pod := newPod("web", "uid-web", claimVolume("data", "data"))
	ctx := context.Background()
	if err := e.m.AddPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	e.m.SourcesReady()
	e.reconcile(t)
	if err := e.m.WaitForAttachAndMount(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if got := e.node.callsOf("Stage"); len(got) != 0 {
		t.Errorf("Stage called: %q", got)
	}
	if got := e.node.publishes[0].StagingPath; got != "" {
		t.Errorf("Publish got staging path %q", got)
	}
	if err := e.m.WaitForUnmountAfter(ctx, t, e, pod); err != nil {
		t.Fatal(err)
	}
	if got := e.node.callsOf("Unstage"); len(got) != 0 {
		t.Errorf("Unstage called: %q", got)
	}
	if got := leftovers(t, e.root); len(got) != 0 {
		t.Errorf("left on disk: %q", got)
	}
}

// TestFSGroupPolicyMissing: a CSIDriver without fsGroupPolicy (the API
// server always sets one) fails the publish with kubelet's message.
func TestFSGroupPolicyMissing(t *testing.T) {
	e := newEnv(t)
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	drv := csiDriver(driver, false)
	drv.Spec.FSGroupPolicy = nil
	e.objs.Set(claim, pv, drv)
	pod := newPod("web", "uid-web", claimVolume("data", "data"))
	if err := e.m.AddPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t)
	want := `Warning FailedMount MountVolume.SetUp failed for volume "pv-data" : kubernetes.io/csi: mounter.SetupAt failed to check fsGroup policy: kubernetes.io/csi: expected valid fsGroupPolicy, received nil value or empty string`
	if ev := e.rec.list(); len(ev) != 1 || ev[0] != want {
		t.Errorf("events = %q\nwant %q", ev, want)
	}
}

// TestPassDoesNotWakeRun: a pass wakes the waiters but does not nudge Run
// into another pass at once (which would spin).
func TestPassDoesNotWakeRun(t *testing.T) {
	e := newEnv(t)
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	e.objs.Set(claim, pv, csiDriver(driver, false))
	if err := e.m.AddPod(context.Background(), newPod("web", "uid-web", claimVolume("data", "data"))); err != nil {
		t.Fatal(err)
	}
	<-e.m.nudge // AddPod's
	e.reconcile(t)
	if n := len(e.m.nudge); n != 0 {
		t.Fatalf("a pass left %d nudge for Run", n)
	}
}

// TestRunServesWaits: with Run going (on the fake clock, never stepped),
// the waits are served by the passes their own changes ask for.
func TestRunServesWaits(t *testing.T) {
	e := newEnv(t)
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	e.objs.Set(claim, pv, csiDriver(driver, false))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	e.m.SourcesReady()
	pod := newPod("web", "uid-web", claimVolume("data", "data"))
	if err := e.m.WaitForAttachAndMount(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := e.m.WaitForUnmount(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if got := len(e.node.callsOf("Unstage")); got != 1 {
		t.Errorf("Unstage calls = %d", got)
	}
}

// TestConcurrentPods: pods come and go concurrently with Run going; each
// wait succeeds and nothing is left staged, published or on disk.
func TestConcurrentPods(t *testing.T) {
	e := newEnv(t)
	cs, pvs := boundClaim("shared", "pv-shared", "vol-shared")
	e.objs.Set(cs, pvs, csiDriver(driver, false))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	e.m.SourcesReady()
	errs := make(chan error, 20)
	for i := range 20 {
		claim := "own-" + string(rune('a'+i))
		c, pv := boundClaim(claim, "pv-"+claim, "vol-"+claim)
		e.objs.Set(c, pv)
		pod := newPod("p-"+claim, types.UID("uid-"+claim), claimVolume("own", claim), claimVolume("shared", "shared"))
		go func() {
			if err := e.m.WaitForAttachAndMount(ctx, pod); err != nil {
				errs <- err
				return
			}
			vols, err := e.m.Volumes(ctx, pod)
			if err == nil && len(vols) != 2 {
				err = fmt.Errorf("pod %s: volumes %v", pod.Name, vols)
			}
			if err != nil {
				errs <- err
				return
			}
			errs <- e.m.WaitForUnmount(ctx, pod)
		}()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	// The last unstage may come in the pass after the last unpublish.
	for pass := 0; ; pass++ {
		e.m.mu.Lock()
		n := len(e.m.actual)
		e.m.mu.Unlock()
		if n == 0 {
			break
		}
		if pass == 3 {
			t.Fatalf("%d volumes still in the actual state after 3 passes", n)
		}
		e.reconcile(t)
	}
	if staged, published := e.node.state(); len(staged)+len(published) != 0 {
		t.Errorf("left in the driver: staged %q, published %q", staged, published)
	}
	if got := leftovers(t, e.root); len(got) != 0 {
		t.Errorf("left on disk: %q", got)
	}
}
