package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeRuntime answers CRI Status and Version; ready can be switched.
type fakeRuntime struct {
	mu    sync.Mutex
	ready bool
}

func (r *fakeRuntime) setReady(v bool) { r.mu.Lock(); r.ready = v; r.mu.Unlock() }

func (r *fakeRuntime) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: r.ready}, {Type: runtimeapi.NetworkReady, Status: true},
	}}}, nil
}

func (r *fakeRuntime) Version(context.Context, string) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "fake", RuntimeVersion: "1.0.0"}, nil
}

type rig struct {
	t      *testing.T
	client *fakeClient
	clock  *testingclock.FakeClock
	rt     *fakeRuntime
	hb     *Heartbeat
	t0     time.Time
}

// newRig builds a heartbeat on a fake clock with no jitter and a report
// delay of -50% (rand 0): the first unchanged status is reported after
// 2.5 min, later ones every 5 min.
func newRig(t *testing.T, ready bool) *rig { return newRigWith(t, ready, nil) }

// newRigWith is newRig with the setters' events sent to rec.
func newRigWith(t *testing.T, ready bool, rec EventRecorder) *rig {
	r := &rig{t: t, client: newFakeClient(), clock: testingclock.NewFakeClock(now), rt: &fakeRuntime{ready: ready}, t0: now}
	state := NewRuntimeState(r.clock)
	setters := DefaultSetters(SetterConfig{NodeName: "node-1", Address: AddressConfig{Hostname: "node-1", NodeIPs: nil,
		LookupIP:           func(string) ([]net.IP, error) { return nil, errors.New("no DNS") },
		ResolveBindAddress: func(net.IP) (net.IP, error) { return parseIP("10.0.0.5"), nil }},
		MachineInfo: func() (*Machine, error) {
			return &Machine{NumCores: 2, MemoryCapacity: 1 << 30, EphemeralStorage: 10 << 30}, nil
		},
		KernelVersion: "6.1", OSImage: "Test OS", Runtime: r.rt, KubeletVersion: "v1.37.2", State: state, Clock: r.clock, Recorder: rec})
	r.hb = New(r.client, Registration{Name: "node-1"}, setters, WithClock(r.clock), WithRuntime(r.rt, state), WithRand(func() float64 { return 0 }))
	return r
}

// run starts Run until the test ends and waits for its loop to idle.
func (r *rig) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.hb.Run(ctx) }()
	r.t.Cleanup(func() { cancel(); <-done })
	r.idle()
}

// idle waits until Run waits on the clock again: Step removes the fired
// waiter, so a waiter means the loop finished its work.
func (r *rig) idle() {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !r.clock.HasWaiters() {
		if time.Now().After(deadline) {
			r.t.Fatal("heartbeat loop never idled")
		}
		goruntime.Gosched()
	}
}

// step advances the clock by d in steps of at most 5 s, letting the loop
// run at each.
func (r *rig) step(d time.Duration) {
	for d > 0 {
		s := min(d, RuntimeCheckPeriod)
		r.clock.Step(s)
		r.idle()
		d -= s
	}
}

func (r *rig) ready() corev1.NodeCondition {
	for _, c := range r.client.Node().Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c
		}
	}
	r.t.Fatal("no Ready condition")
	return corev1.NodeCondition{}
}

func count(calls []string, name string) int {
	n := 0
	for _, c := range calls {
		if c == name {
			n++
		}
	}
	return n
}

func TestHeartbeatRegistersAndRenews(t *testing.T) {
	r := newRig(t, true)
	r.run()
	node := r.client.Node()
	wantLabels := map[string]string{corev1.LabelHostname: "node-1", corev1.LabelOSStable: goruntime.GOOS, corev1.LabelArchStable: goruntime.GOARCH,
		LabelOSBeta: goruntime.GOOS, LabelArchBeta: goruntime.GOARCH}
	if !reflect.DeepEqual(node.Labels, wantLabels) || node.Annotations[AnnotationControllerManagedAttach] != "true" {
		t.Errorf("labels %v, annotations %v", node.Labels, node.Annotations)
	}
	if c := r.ready(); c.Status != corev1.ConditionTrue || !c.LastHeartbeatTime.Time.Equal(r.t0) {
		t.Errorf("Ready %+v", c)
	}
	if v := node.Status.NodeInfo.ContainerRuntimeVersion; v != "fake://1.0.0" {
		t.Errorf("runtime version %q", v)
	}
	lease := r.client.Lease()
	wantOwner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-1", UID: node.UID}}
	if *lease.Spec.HolderIdentity != "node-1" || *lease.Spec.LeaseDurationSeconds != 40 || !lease.Spec.RenewTime.Time.Equal(r.t0) ||
		!reflect.DeepEqual(lease.OwnerReferences, wantOwner) || lease.Namespace != corev1.NamespaceNodeLease {
		t.Errorf("lease %+v", lease)
	}
	// Registration, then the status reported at once (no report yet).
	if calls := r.client.Calls(); count(calls, "CreateNode") != 1 || count(calls, "PatchNodeStatus") != 1 || count(calls, "CreateLease") != 1 {
		t.Errorf("calls %v", calls)
	}

	r.client.resetCalls()
	r.step(10 * time.Second)
	if got := r.client.Lease().Spec.RenewTime.Time; !got.Equal(r.t0.Add(10 * time.Second)) {
		t.Errorf("lease renewed at %v", got)
	}
	// The lease is updated from the one last written: no GET.
	if calls := r.client.Calls(); !reflect.DeepEqual(calls, []string{"UpdateLease"}) {
		t.Errorf("calls after 10 s: %v", calls)
	}
	// Unchanged status: not patched until the report delay (2.5 min here).
	r.step(2*time.Minute + 10*time.Second)
	if count(r.client.Calls(), "PatchNodeStatus") != 0 {
		t.Errorf("unchanged status patched: %v", r.client.Calls())
	}
	if got := count(r.client.Calls(), "UpdateLease"); got != 14 {
		t.Errorf("%d lease renewals in 140 s, want 14", got)
	}
	r.step(10 * time.Second)
	if c := r.ready(); !c.LastHeartbeatTime.Time.Equal(r.t0.Add(150*time.Second)) || !c.LastTransitionTime.Time.Equal(r.t0) {
		t.Errorf("report after 150 s: %+v", c)
	}
	// Then every 5 min.
	r.client.resetCalls()
	r.step(5*time.Minute - 10*time.Second)
	if count(r.client.Calls(), "PatchNodeStatus") != 0 {
		t.Error("reported before 5 min")
	}
	r.step(10 * time.Second)
	if count(r.client.Calls(), "PatchNodeStatus") != 1 {
		t.Errorf("not reported after 5 min: %v", r.client.Calls())
	}
}

func TestHeartbeatReadyTransition(t *testing.T) {
	r := newRig(t, false)
	r.run()
	c := r.ready()
	if c.Status != corev1.ConditionFalse || c.Reason != "KubeletNotReady" ||
		c.Message != "[container runtime status check may not have completed yet, container runtime not ready: RuntimeReady=false reason: message:]" {
		t.Errorf("NotReady %+v", c)
	}
	r.rt.setReady(true)
	r.step(RuntimeCheckPeriod) // a changed status is patched without waiting for the report period
	if c := r.ready(); c.Status != corev1.ConditionTrue || !c.LastTransitionTime.Time.Equal(r.t0.Add(RuntimeCheckPeriod)) {
		t.Errorf("Ready %+v", c)
	}
}

// nodeEvents records the node's events with the reference they are on.
type nodeEvents struct {
	mu   sync.Mutex
	refs []corev1.ObjectReference
	list []string
}

func (e *nodeEvents) Eventf(obj apiruntime.Object, eventtype, reason, messageFmt string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.refs = append(e.refs, *obj.(*corev1.ObjectReference))
	e.list = append(e.list, eventtype+" "+reason+" "+fmt.Sprintf(messageFmt, args...))
}

// TestNodeEventsCarryUID: kubelet v1.37.2's node reference for events
// (nodeRefWithUID): v1 Node by name before the Node exists, with the
// Node's UID once a status update has seen it.
func TestNodeEventsCarryUID(t *testing.T) {
	ev := &nodeEvents{}
	r := newRigWith(t, false, ev)
	r.run()
	r.rt.setReady(true)
	r.step(RuntimeCheckPeriod)
	ev.mu.Lock()
	defer ev.mu.Unlock()
	want := []string{"Normal NodeHasSufficientMemory Node node-1 status is now: NodeHasSufficientMemory",
		"Normal NodeHasNoDiskPressure Node node-1 status is now: NodeHasNoDiskPressure",
		"Normal NodeHasSufficientPID Node node-1 status is now: NodeHasSufficientPID",
		"Normal NodeReady Node node-1 status is now: NodeReady"}
	if !reflect.DeepEqual(ev.list, want) {
		t.Fatalf("events %q, want %q", ev.list, want)
	}
	byName := corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: "node-1"}
	withUID := byName
	withUID.UID = r.client.Node().UID
	if withUID.UID == "" {
		t.Fatal("the fake API gave the Node no UID")
	}
	for i, ref := range ev.refs {
		want := withUID
		if i < 3 { // the initial node's conditions, set before it was created
			want = byName
		}
		if ref != want {
			t.Errorf("event %q on %+v, want %+v", ev.list[i], ref, want)
		}
	}
}

func TestStatusRetries(t *testing.T) {
	r := newRig(t, true)
	ctx := context.Background()
	if _, err := r.hb.Register(ctx); err != nil {
		t.Fatal(err)
	}
	conflict := apierrors.NewConflict(nodesGR, "node-1", errors.New("stale"))
	r.client.failNext("PatchNodeStatus", conflict)
	r.client.resetCalls()
	if err := r.hb.SyncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	// The first try works from the node it has; a retry reads it first.
	if calls := r.client.Calls(); !reflect.DeepEqual(calls, []string{"PatchNodeStatus", "GetNode", "PatchNodeStatus"}) {
		t.Errorf("calls %v", calls)
	}
	r.client.failNext("PatchNodeStatus", conflict, conflict, conflict, conflict, conflict)
	r.client.resetCalls()
	r.clock.Step(time.Hour) // past the report period: a patch is due
	err := r.hb.SyncStatus(ctx)
	if !errors.Is(err, ErrStatusRetries) || !apierrors.IsConflict(err) {
		t.Errorf("err = %v", err)
	}
	if got := count(r.client.Calls(), "PatchNodeStatus"); got != StatusUpdateRetry {
		t.Errorf("%d patches, want %d", got, StatusUpdateRetry)
	}
}

func TestLeaseConflict(t *testing.T) {
	r := newRig(t, true)
	r.run()
	// Someone else wrote the lease: our update conflicts, the lease is read
	// again and the update retried.
	r.client.mu.Lock()
	r.client.lease.ResourceVersion = "other"
	r.client.mu.Unlock()
	r.client.resetCalls()
	r.step(10 * time.Second)
	if calls := r.client.Calls(); !reflect.DeepEqual(calls[:3], []string{"UpdateLease", "GetLease", "UpdateLease"}) {
		t.Errorf("calls %v", calls)
	}
	if got := r.client.Lease().Spec.RenewTime.Time; !got.Equal(r.t0.Add(10 * time.Second)) {
		t.Errorf("renewed at %v", got)
	}
}

func TestLeaseCreateBackoff(t *testing.T) {
	r := newRig(t, true)
	unavailable := apierrors.NewServiceUnavailable("down")
	r.client.failNext("GetLease", unavailable, unavailable)
	r.run()
	if r.client.Lease() != nil {
		t.Fatal("lease created despite the failure")
	}
	r.clock.Step(200 * time.Millisecond)
	r.idle()
	if r.client.Lease() != nil {
		t.Fatal("lease created on the second failure")
	}
	r.clock.Step(400 * time.Millisecond)
	r.idle()
	if l := r.client.Lease(); l == nil || !l.Spec.RenewTime.Time.Equal(r.t0.Add(600*time.Millisecond)) {
		t.Errorf("lease after back-off: %+v", l)
	}
}

func TestRegisterReconcilesExisting(t *testing.T) {
	r := newRig(t, true)
	r.client.node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "old", Labels: map[string]string{corev1.LabelHostname: "stale", "team": "a"}}}
	node, err := r.hb.Register(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels[corev1.LabelHostname] != "node-1" || node.Labels["team"] != "a" || node.Annotations[AnnotationControllerManagedAttach] != "true" {
		t.Errorf("reconciled %v %v", node.Labels, node.Annotations)
	}
	if node.Status.Capacity.Cpu().MilliValue() != 2000 {
		t.Errorf("capacity %v", node.Status.Capacity)
	}
	if calls := r.client.Calls(); !reflect.DeepEqual(calls, []string{"CreateNode", "GetNode", "PatchNodeStatus"}) {
		t.Errorf("calls %v", calls)
	}
}

// The volumes a volume manager has in use reach node.status.volumesInUse,
// and WithReported hands back what the node reported (kubelet's
// markVolumesFromNode): the patched node when the status changed, the
// computed one when no patch was due.
func TestVolumesInUseReported(t *testing.T) {
	r := newRig(t, true)
	inUse := []corev1.UniqueVolumeName{"kubernetes.io/csi/drv^vol-1"}
	synced := false
	var reported [][]corev1.UniqueVolumeName
	setters := append(r.hb.setters, VolumesInUse(func() bool { return synced }, func() []corev1.UniqueVolumeName { return inUse }))
	r.hb = New(r.client, Registration{Name: "node-1"}, setters, WithClock(r.clock), WithRuntime(r.rt, r.hb.state), WithRand(func() float64 { return 0 }),
		WithReported(func(n *corev1.Node) { reported = append(reported, n.Status.VolumesInUse) }))
	ctx := context.Background()
	if _, err := r.hb.Register(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.hb.SyncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if got := r.client.Node().Status.VolumesInUse; len(got) != 0 {
		t.Fatalf("volumesInUse %v before the volume manager synced, want none", got)
	}
	synced = true
	r.client.resetCalls()
	if err := r.hb.SyncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if got := r.client.Node().Status.VolumesInUse; !reflect.DeepEqual(got, inUse) {
		t.Fatalf("volumesInUse %v, want %v", got, inUse)
	}
	if count(r.client.Calls(), "PatchNodeStatus") != 1 || !reflect.DeepEqual(reported[len(reported)-1], inUse) {
		t.Fatalf("calls %v, reported %v", r.client.Calls(), reported)
	}
	r.client.resetCalls()
	n := len(reported)
	if err := r.hb.SyncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if count(r.client.Calls(), "PatchNodeStatus") != 0 || len(reported) != n+1 || !reflect.DeepEqual(reported[n], inUse) {
		t.Fatalf("unchanged status: calls %v, reported %v; want no patch and the computed node reported", r.client.Calls(), reported)
	}
}
