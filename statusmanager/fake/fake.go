// Package fake is an in-memory API server for statusmanager: pods by
// namespace and name, status patches applied as the API server applies
// them (strategic merge, the UID in the patch checked as a precondition),
// deletions with a UID precondition, scripted failures and a record of
// calls. Tests of node agents use it in place of a cluster.
package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// Verbs of Call.Verb.
const (
	Get    = "get"
	Patch  = "patch"
	Delete = "delete"
)

var podsResource = schema.GroupResource{Resource: "pods"}

// Call is one request the client received.
type Call struct {
	Verb      string
	Namespace string
	Name      string
	// Patch is a patch's body; UID a deletion's precondition.
	Patch []byte
	UID   types.UID
}

// Client holds pods in memory. It implements statusmanager.Client; its
// methods are safe for concurrent use.
type Client struct {
	mu    sync.Mutex
	pods  map[string]*corev1.Pod
	calls []Call
	fail  map[string][]error
	rv    int
	// counts are the calls by verb since ClearCalls; noLog: calls are
	// counted, not kept (SetCallLog).
	counts map[string]int
	noLog  bool
}

// SetCallLog sets whether calls are kept for Calls and Verbs (the
// default) or only counted (Counts): a run of many pods, or a long one,
// then holds no memory for them.
func (c *Client) SetCallLog(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.noLog = !on
}

// Counts returns the calls received by verb since the client was made or
// ClearCalls.
func (c *Client) Counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.counts))
	for v, n := range c.counts {
		out[v] = n
	}
	return out
}

// NewClient returns a Client holding copies of pods.
func NewClient(pods ...*corev1.Pod) *Client {
	c := &Client{pods: map[string]*corev1.Pod{}, fail: map[string][]error{}}
	for _, p := range pods {
		c.Put(p)
	}
	return c
}

func key(namespace, name string) string { return namespace + "/" + name }

// Put stores a copy of pod, replacing one of the same namespace and name
// (a test recreating a pod, or changing it as another client would).
func (c *Client) Put(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rv++
	p := pod.DeepCopy()
	p.ResourceVersion = strconv.Itoa(c.rv)
	c.pods[key(p.Namespace, p.Name)] = p
}

// Pod returns a copy of the stored pod.
func (c *Client) Pod(namespace, name string) (*corev1.Pod, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pods[key(namespace, name)]
	return p.DeepCopy(), ok
}

// FailNext makes the next call of verb fail with err (calls queue up).
func (c *Client) FailNext(verb string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fail[verb] = append(c.fail[verb], err)
}

// Calls returns the calls received so far, in order.
func (c *Client) Calls() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Call(nil), c.calls...)
}

// Verbs returns the verbs of the calls received so far, in order.
func (c *Client) Verbs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.calls))
	for i, call := range c.calls {
		out[i] = call.Verb
	}
	return out
}

// ClearCalls forgets the calls received so far.
func (c *Client) ClearCalls() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls, c.counts = nil, nil
}

// record notes a call and returns the failure scripted for it, if any.
func (c *Client) record(call Call) error {
	if !c.noLog {
		c.calls = append(c.calls, call)
	}
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[call.Verb]++
	if errs := c.fail[call.Verb]; len(errs) > 0 {
		c.fail[call.Verb] = errs[1:]
		return errs[0]
	}
	return nil
}

// GetPod returns a copy of the pod, or a NotFound error.
func (c *Client) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.record(Call{Verb: Get, Namespace: namespace, Name: name}); err != nil {
		return nil, err
	}
	p, ok := c.pods[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(podsResource, name)
	}
	return p.DeepCopy(), nil
}

// PatchPodStatus applies a strategic merge patch to the pod's status, as
// the pods/status subresource does: only the status changes, and a UID in
// the patch that is not the pod's is a Conflict.
func (c *Client) PatchPodStatus(_ context.Context, namespace, name string, patch []byte) (*corev1.Pod, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.record(Call{Verb: Patch, Namespace: namespace, Name: name, Patch: append([]byte(nil), patch...)}); err != nil {
		return nil, err
	}
	p, ok := c.pods[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(podsResource, name)
	}
	cur, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	out, err := strategicpatch.StrategicMergePatch(cur, patch, corev1.Pod{})
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	var patched corev1.Pod
	if err := json.Unmarshal(out, &patched); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if patched.UID != p.UID {
		return nil, apierrors.NewConflict(podsResource, name, fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", patched.UID, p.UID))
	}
	next := p.DeepCopy()
	next.Status = patched.Status
	c.rv++
	next.ResourceVersion = strconv.Itoa(c.rv)
	c.pods[key(namespace, name)] = next
	return next.DeepCopy(), nil
}

// DeletePod removes the pod if its UID is uid (else a Conflict, as the API
// server's precondition check).
func (c *Client) DeletePod(_ context.Context, namespace, name string, uid types.UID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.record(Call{Verb: Delete, Namespace: namespace, Name: name, UID: uid}); err != nil {
		return err
	}
	p, ok := c.pods[key(namespace, name)]
	if !ok {
		return apierrors.NewNotFound(podsResource, name)
	}
	if p.UID != uid {
		return apierrors.NewConflict(podsResource, name, fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", uid, p.UID))
	}
	delete(c.pods, key(namespace, name))
	return nil
}
