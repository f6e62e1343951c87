package nodestatus

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// fakeClient is an in-memory API server for one node and its lease: it
// records every call, bumps resource versions, refuses stale lease
// updates with Conflict, and fails calls as scripted.
type fakeClient struct {
	mu    sync.Mutex
	node  *corev1.Node
	lease *coordinationv1.Lease
	rv    int
	calls []string
	fail  map[string][]error // per call name, errors returned in turn
}

func newFakeClient() *fakeClient { return &fakeClient{fail: map[string][]error{}} }

var (
	nodesGR  = schema.GroupResource{Resource: "nodes"}
	leasesGR = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
)

func (f *fakeClient) enter(call string) error {
	f.calls = append(f.calls, call)
	if errs := f.fail[call]; len(errs) > 0 {
		f.fail[call] = errs[1:]
		return errs[0]
	}
	return nil
}

func (f *fakeClient) failNext(call string, errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[call] = append(f.fail[call], errs...)
}

func (f *fakeClient) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeClient) resetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

func (f *fakeClient) nextRV() string { f.rv++; return strconv.Itoa(f.rv) }

func (f *fakeClient) Node() *corev1.Node {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.node.DeepCopy()
}

func (f *fakeClient) Lease() *coordinationv1.Lease {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lease.DeepCopy()
}

func (f *fakeClient) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("GetNode"); err != nil {
		return nil, err
	}
	if f.node == nil || f.node.Name != name {
		return nil, apierrors.NewNotFound(nodesGR, name)
	}
	return f.node.DeepCopy(), nil
}

func (f *fakeClient) CreateNode(_ context.Context, node *corev1.Node) (*corev1.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("CreateNode"); err != nil {
		return nil, err
	}
	if f.node != nil {
		return nil, apierrors.NewAlreadyExists(nodesGR, node.Name)
	}
	f.node = node.DeepCopy()
	f.node.UID = types.UID("uid-" + node.Name)
	f.node.ResourceVersion = f.nextRV()
	return f.node.DeepCopy(), nil
}

func (f *fakeClient) PatchNodeStatus(_ context.Context, name string, patch []byte) (*corev1.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("PatchNodeStatus"); err != nil {
		return nil, err
	}
	if f.node == nil {
		return nil, apierrors.NewNotFound(nodesGR, name)
	}
	cur, err := json.Marshal(f.node)
	if err != nil {
		return nil, err
	}
	out, err := strategicpatch.StrategicMergePatch(cur, patch, corev1.Node{})
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	var n corev1.Node
	if err := json.Unmarshal(out, &n); err != nil {
		return nil, err
	}
	n.Spec = f.node.Spec // the status subresource leaves the spec alone
	n.ResourceVersion = f.nextRV()
	f.node = &n
	return n.DeepCopy(), nil
}

func (f *fakeClient) GetLease(_ context.Context, namespace, name string) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("GetLease"); err != nil {
		return nil, err
	}
	if f.lease == nil || f.lease.Namespace != namespace || f.lease.Name != name {
		return nil, apierrors.NewNotFound(leasesGR, name)
	}
	return f.lease.DeepCopy(), nil
}

func (f *fakeClient) CreateLease(_ context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("CreateLease"); err != nil {
		return nil, err
	}
	if f.lease != nil {
		return nil, apierrors.NewAlreadyExists(leasesGR, l.Name)
	}
	f.lease = l.DeepCopy()
	f.lease.ResourceVersion = f.nextRV()
	return f.lease.DeepCopy(), nil
}

func (f *fakeClient) UpdateLease(_ context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("UpdateLease"); err != nil {
		return nil, err
	}
	if f.lease == nil {
		return nil, apierrors.NewNotFound(leasesGR, l.Name)
	}
	if l.ResourceVersion != f.lease.ResourceVersion {
		return nil, apierrors.NewConflict(leasesGR, l.Name, nil)
	}
	f.lease = l.DeepCopy()
	f.lease.ResourceVersion = f.nextRV()
	return f.lease.DeepCopy(), nil
}
