package volumemanager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	testingclock "k8s.io/utils/clock/testing"

	csifake "github.com/podstart/podstart/csi/fake"
	mountsfake "github.com/podstart/podstart/mounts/fake"
)

// kindRecorder records events as "<kind> <type> <reason> <message>".
type kindRecorder struct {
	mu     sync.Mutex
	events []string
}

func (r *kindRecorder) Eventf(obj apiruntime.Object, eventtype, reason, format string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	kind := fmt.Sprintf("%T", obj)
	r.events = append(r.events, kind[strings.LastIndex(kind, ".")+1:]+" "+eventtype+" "+reason+" "+fmt.Sprintf(format, args...))
}

func (r *kindRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// patches records the claim status patches the manager sends.
type patches struct {
	*Objects
	mu   sync.Mutex
	sent []string
}

func (p *patches) PatchPersistentVolumeClaimStatus(ctx context.Context, namespace, name string, patch []byte) (*corev1.PersistentVolumeClaim, error) {
	p.mu.Lock()
	p.sent = append(p.sent, string(patch))
	p.mu.Unlock()
	return p.Objects.PatchPersistentVolumeClaimStatus(ctx, namespace, name, patch)
}

func (p *patches) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.sent
	p.sent = nil
	return out
}

type expandEnv struct {
	*csiEnv
	api   *patches
	rec   *kindRecorder
	clock *testingclock.FakeClock
	pod   *corev1.Pod
}

var gi = resource.MustParse("1Gi")

// newExpandEnv mounts a 1Gi claim "data" for pod web over a driver that
// stages and expands (a resizer of the recovery kind unless legacy).
func newExpandEnv(t *testing.T, caps ...csipb.NodeServiceCapability_RPC_Type) *expandEnv {
	t.Helper()
	e := &expandEnv{csiEnv: newCSIEnv(t, append([]csipb.NodeServiceCapability_RPC_Type{csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}, caps...)...),
		rec: &kindRecorder{}, clock: testingclock.NewFakeClock(t0)}
	e.api = &patches{Objects: e.objs}
	m, err := New(node, e.root, e.api, CSI(e.plugin), WithClock(e.clock), WithMounter(mountsfake.New()), WithEventRecorder(e.rec))
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	claim.ResourceVersion = "10"
	claim.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: gi}
	claim.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: gi}
	pv.Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: gi}
	e.objs.Set(claim, pv, csiDriver(driver, false))
	e.pod = newPod("web", "uid-web", claimVolume("data", "data"))
	e.sync(t)
	if err := e.m.WaitForAttachAndMount(context.Background(), e.pod); err != nil {
		t.Fatal(err)
	}
	e.driver.Reset()
	e.rec.take()
	return e
}

// sync is a pod sync (kubelet's SyncPod reprocesses the pod's volumes)
// and a reconciler pass.
func (e *expandEnv) sync(t *testing.T) error {
	t.Helper()
	if err := e.m.AddPod(context.Background(), e.pod); err != nil {
		t.Fatal(err)
	}
	return e.m.Reconcile(context.Background())
}

// resize is the resizer's work: the PV grown to size, the claim's spec
// too; with recovery, allocatedResources and NodeResizePending.
func (e *expandEnv) resize(t *testing.T, size string, recovery bool) {
	t.Helper()
	q := resource.MustParse(size)
	pv, _ := e.objs.GetPersistentVolume(context.Background(), "pv-data")
	pv.Spec.Capacity[corev1.ResourceStorage] = q
	claim, _ := e.objs.GetPersistentVolumeClaim(context.Background(), ns, "data")
	claim.Spec.Resources.Requests[corev1.ResourceStorage] = q
	if recovery {
		claim.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: q}
		claim.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimNodeResizePending}
	}
	e.objs.Set(pv, claim)
}

func (e *expandEnv) claim(t *testing.T) *corev1.PersistentVolumeClaim {
	t.Helper()
	c, err := e.objs.GetPersistentVolumeClaim(context.Background(), ns, "data")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *expandEnv) expandCalls() []*csipb.NodeExpandVolumeRequest {
	var out []*csipb.NodeExpandVolumeRequest
	for _, c := range e.driver.Calls() {
		if r, ok := c.Request.(*csipb.NodeExpandVolumeRequest); ok {
			out = append(out, r)
		}
	}
	return out
}

// TestExpandOnline: the PV grown under a mounted volume and the claim
// marked NodeResizePending by the resizer: the next sync calls
// NodeExpandVolume at the publish target with the staging path and the
// allocated size, marks the claim NodeResizeInProgress (with its
// resourceVersion) then writes its capacity and clears the status, with
// kubelet's FileSystemResizeSuccessful events on the pod and the claim;
// once, not again on later passes.
func TestExpandOnline(t *testing.T) {
	e := newExpandEnv(t, csipb.NodeServiceCapability_RPC_EXPAND_VOLUME)
	e.resize(t, "2Gi", true)
	if err := e.sync(t); err != nil {
		t.Fatal(err)
	}
	calls := e.expandCalls()
	if len(calls) != 1 {
		t.Fatalf("NodeExpandVolume calls %v, want one", calls)
	}
	want := &csipb.NodeExpandVolumeRequest{VolumeId: "vol-1", VolumePath: TargetPath(e.root, "uid-web", "pv-data"),
		StagingTargetPath: StagingPath(e.root, driver, "vol-1"), CapacityRange: &csipb.CapacityRange{RequiredBytes: 2 << 30},
		VolumeCapability: calls[0].VolumeCapability}
	if d := cmp.Diff(want.String(), calls[0].String()); d != "" {
		t.Errorf("NodeExpandVolume (-want +got):\n%s", d)
	}
	if got := calls[0].VolumeCapability.GetMount().GetFsType(); got != "ext4" {
		t.Errorf("fsType %q", got)
	}
	wantPatches := []string{
		`{"metadata":{"resourceVersion":"10"},"status":{"allocatedResourceStatuses":{"storage":"NodeResizeInProgress"}}}`,
		`{"metadata":{"resourceVersion":"11"},"status":{"allocatedResourceStatuses":null,"capacity":{"storage":"2Gi"}}}`,
	}
	if d := cmp.Diff(wantPatches, e.api.take()); d != "" {
		t.Errorf("claim status patches (-want +got):\n%s", d)
	}
	c := e.claim(t)
	if got := c.Status.Capacity[corev1.ResourceStorage]; got.Cmp(resource.MustParse("2Gi")) != 0 || c.Status.AllocatedResourceStatuses != nil {
		t.Errorf("claim status after the expansion: %+v", c.Status)
	}
	msg := `MountVolume.NodeExpandVolume succeeded for volume "pv-data" ` + node
	if d := cmp.Diff([]string{"Pod Normal FileSystemResizeSuccessful " + msg, "PersistentVolumeClaim Normal FileSystemResizeSuccessful " + msg}, e.rec.take()); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	e.driver.Reset()
	for range 3 {
		if err := e.sync(t); err != nil {
			t.Fatal(err)
		}
	}
	if calls := e.expandCalls(); len(calls) != 0 {
		t.Errorf("expanded again: %v", calls)
	}
}

// TestExpandOnlineLegacyResizer: a resizer that fills no
// allocatedResources: the node expands to the PV's size and writes the
// claim's capacity.
func TestExpandOnlineLegacyResizer(t *testing.T) {
	e := newExpandEnv(t, csipb.NodeServiceCapability_RPC_EXPAND_VOLUME)
	e.resize(t, "3Gi", false)
	if err := e.sync(t); err != nil {
		t.Fatal(err)
	}
	if calls := e.expandCalls(); len(calls) != 1 || calls[0].CapacityRange.RequiredBytes != 3<<30 {
		t.Fatalf("NodeExpandVolume calls %v, want one to 3Gi", calls)
	}
	if d := cmp.Diff([]string{`{"metadata":{"resourceVersion":"10"},"status":{"capacity":{"storage":"3Gi"}}}`}, e.api.take()); d != "" {
		t.Errorf("claim status patches (-want +got):\n%s", d)
	}
}

// TestExpandNotPending: a recovery resizer that has not asked the node
// (no NodeResizePending) gets no node call.
func TestExpandNotPending(t *testing.T) {
	e := newExpandEnv(t, csipb.NodeServiceCapability_RPC_EXPAND_VOLUME)
	e.resize(t, "2Gi", true)
	c := e.claim(t)
	c.Status.AllocatedResourceStatuses[corev1.ResourceStorage] = corev1.PersistentVolumeClaimControllerResizeInProgress
	e.objs.Set(c)
	if err := e.sync(t); err != nil {
		t.Fatal(err)
	}
	if calls := e.expandCalls(); len(calls) != 0 || len(e.api.take()) != 0 {
		t.Fatalf("node expansion while the controller resizes: %v", calls)
	}
}

// TestExpandInfeasible: the driver answers InvalidArgument: the claim is
// marked NodeResizeInfeasible with kubelet's NodeResizeError condition, a
// VolumeResizeFailed event goes to the pod, and the pass fails.
func TestExpandInfeasible(t *testing.T) {
	e := newExpandEnv(t, csipb.NodeServiceCapability_RPC_EXPAND_VOLUME)
	e.resize(t, "2Gi", true)
	e.driver.FailNext(csifake.NodeExpandVolume, status.Error(codes.OutOfRange, "too big"))
	err := e.sync(t)
	if err == nil || !strings.Contains(err.Error(), "NodeExpandVolume.NodeExpandVolume failed") {
		t.Fatalf("pass error %v", err)
	}
	c := e.claim(t)
	if c.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != corev1.PersistentVolumeClaimNodeResizeInfeasible {
		t.Errorf("resize status %v, want NodeResizeInfeasible", c.Status.AllocatedResourceStatuses)
	}
	if len(c.Status.Conditions) != 1 || c.Status.Conditions[0].Type != corev1.PersistentVolumeClaimNodeResizeError ||
		c.Status.Conditions[0].Message != "failed to expand pvc with Expander.NodeExpand failed to expand the volume rpc error: code = OutOfRange desc = too big" {
		t.Errorf("conditions %+v", c.Status.Conditions)
	}
	ev := e.rec.take()
	if len(ev) != 1 || !strings.HasPrefix(ev[0], `Pod Warning VolumeResizeFailed NodeExpandVolume.NodeExpandVolume failed for volume "pv-data" : `) {
		t.Errorf("events %q", ev)
	}
	if got := c.Status.Capacity[corev1.ResourceStorage]; got.Cmp(gi) != 0 {
		t.Errorf("capacity written after a failure: %v", got.String())
	}
}

// TestExpandInUse: FailedPrecondition: the volume is not expanded again
// while it stays mounted, and the pass does not fail.
func TestExpandInUse(t *testing.T) {
	e := newExpandEnv(t, csipb.NodeServiceCapability_RPC_EXPAND_VOLUME)
	e.resize(t, "2Gi", false)
	e.driver.FailNext(csifake.NodeExpandVolume, status.Error(codes.FailedPrecondition, "busy"))
	if err := e.sync(t); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(maxRetryDelay)
	for range 2 {
		if err := e.sync(t); err != nil {
			t.Fatal(err)
		}
	}
	if calls := e.expandCalls(); len(calls) != 1 {
		t.Errorf("NodeExpandVolume calls %d, want 1", len(calls))
	}
}

// TestExpandDuringMount: a claim whose status capacity is below its PV's
// when the volume is published (the controller grew it offline) is
// expanded on the node right after NodePublishVolume.
func TestExpandDuringMount(t *testing.T) {
	e := newExpandEnv(t, csipb.NodeServiceCapability_RPC_EXPAND_VOLUME)
	pod2 := newPod("web2", "uid-web2", claimVolume("data", "data"))
	e.resize(t, "2Gi", false)
	e.driver.Reset()
	if err := e.m.AddPod(context.Background(), pod2); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	var methods []string
	for _, m := range e.driver.Methods() {
		if m != csifake.NodeGetCapabilities {
			methods = append(methods, m)
		}
	}
	// web2 is published then expanded (kubelet's expandVolumeDuringMount,
	// which leaves the known size as it was); then web's published volume
	// is expanded in use, as kubelet's reconciler does next.
	if d := cmp.Diff([]string{csifake.NodePublishVolume, csifake.NodeExpandVolume, csifake.NodeExpandVolume}, methods); d != "" {
		t.Errorf("driver calls (-want +got):\n%s", d)
	}
	if calls := e.expandCalls(); len(calls) != 2 || calls[0].VolumePath != TargetPath(e.root, "uid-web2", "pv-data") ||
		calls[1].VolumePath != TargetPath(e.root, "uid-web", "pv-data") {
		t.Errorf("NodeExpandVolume %v", calls)
	}
	if d := cmp.Diff([]string{`{"metadata":{"resourceVersion":"10"},"status":{"capacity":{"storage":"2Gi"}}}`}, e.api.take()); d != "" {
		t.Errorf("claim status patches (-want +got):\n%s", d)
	}
	if c := e.claim(t); c.Status.Capacity.Storage().Cmp(resource.MustParse("2Gi")) != 0 {
		t.Errorf("claim capacity %v", c.Status.Capacity)
	}
}

// TestExpandWithoutPatcher: an API that cannot patch a claim's status:
// the expansion fails naming it.
func TestExpandWithoutPatcher(t *testing.T) {
	e := newExpandEnv(t, csipb.NodeServiceCapability_RPC_EXPAND_VOLUME)
	m, err := New(node, e.root, getterOnly{e.objs}, CSI(e.plugin), WithClock(e.clock), WithMounter(mountsfake.New()))
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	e.resize(t, "2Gi", true)
	err = e.sync(t)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "cannot patch a claim's status") {
		t.Fatalf("pass error %v, want ErrUnsupported naming the patch", err)
	}
}

// getterOnly hides Objects' ClaimStatusPatcher.
type getterOnly struct{ *Objects }

func (g getterOnly) PatchPersistentVolumeClaimStatus() {}
