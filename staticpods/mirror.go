package staticpods

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// MirrorClient is what mirror pods need of an API server; client-go's
// clientset fits it in a few lines (see examples/nodeagent). Errors are the
// API server's (apierrors.IsNotFound and IsConflict must hold on them as
// on client-go's).
type MirrorClient interface {
	// GetNode returns the node (its UID is the owner reference's; kubelet
	// creates no mirror pod for a node being deleted).
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
	// CreatePod creates the pod and returns it as the API server holds it.
	CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	// DeletePod deletes the pod with grace period 0, with uid as the
	// precondition when it is not empty.
	DeletePod(ctx context.Context, namespace, name string, uid types.UID) error
}

// ErrNoNode matches a mirror pod not created because the node is not
// registered, or is being deleted.
var ErrNoNode = errors.New("staticpods: no node to own mirror pods")

// MirrorPod is the mirror pod kubelet's CreateMirrorPod makes of a static
// pod: the static pod with the config.mirror annotation set to its
// config.hash and, as the only owner reference, the node (controller).
// The API server assigns the mirror its own UID.
func MirrorPod(static *corev1.Pod, node *corev1.Node) *corev1.Pod {
	m := static.DeepCopy()
	m.Annotations = maps.Clone(static.Annotations)
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[ConfigMirrorAnnotation] = static.Annotations[ConfigHashAnnotation]
	controller := true
	m.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: &controller,
	}}
	return m
}

// IsMirrorPodOf is kubelet's IsMirrorPodOf: same name and namespace, and
// the mirror's config.mirror equals the static pod's config.hash.
func IsMirrorPodOf(mirror, static *corev1.Pod) bool {
	if mirror.Name != static.Name || mirror.Namespace != static.Namespace {
		return false
	}
	h, ok := mirror.Annotations[ConfigMirrorAnnotation]
	return ok && h == static.Annotations[ConfigHashAnnotation]
}

// Mirrors keeps one mirror pod in the API server per static pod, as
// kubelet's tryReconcileMirrorPods (each sync of a static pod) and
// deleteOrphanedMirrorPods (housekeeping) do. The caller tells it the
// static pods (from the sources) and the mirror pods the API server shows
// (from its pod watch: pods with the config.mirror annotation bound to the
// node), then calls Sync. Its methods are safe for concurrent use.
type Mirrors struct {
	client MirrorClient
	node   string
	// terminating reports a static pod (by full name) whose containers may
	// still run: its orphaned mirror is kept until it stops.
	terminating func(fullName string) bool

	mu      sync.Mutex
	statics map[string]*corev1.Pod // by full name
	mirrors map[string]*corev1.Pod // by full name
}

// MirrorOption configures Mirrors.
type MirrorOption func(*Mirrors)

// WithTerminating sets how Mirrors learns that a removed static pod is
// still being killed (kubelet's IsPodForMirrorPodTerminatingByFullName);
// its mirror is deleted only once it is not. Default: never.
func WithTerminating(f func(fullName string) bool) MirrorOption {
	return func(m *Mirrors) { m.terminating = f }
}

// NewMirrors returns Mirrors writing through client for node nodeName.
func NewMirrors(client MirrorClient, nodeName string, opts ...MirrorOption) *Mirrors {
	m := &Mirrors{client: client, node: nodeName, terminating: func(string) bool { return false },
		statics: map[string]*corev1.Pod{}, mirrors: map[string]*corev1.Pod{}}
	for _, o := range opts {
		o(m)
	}
	return m
}

// SetStatic records a static pod (an Add or Update of a source).
func (m *Mirrors) SetStatic(pod *corev1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.statics[FullName(pod)] = pod.DeepCopy()
}

// RemoveStatic forgets a static pod (a Remove of a source): its mirror is
// deleted by the next Sync.
func (m *Mirrors) RemoveStatic(pod *corev1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.statics[FullName(pod)]; ok && cur.UID == pod.UID {
		delete(m.statics, FullName(pod))
	}
}

// SetMirror records a mirror pod the API server shows (added or updated).
// Pods without the config.mirror annotation are ignored.
func (m *Mirrors) SetMirror(pod *corev1.Pod) {
	if !IsMirrorPod(pod) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mirrors[FullName(pod)] = pod.DeepCopy()
}

// RemoveMirror forgets a mirror pod the API server deleted: the next Sync
// recreates it if its static pod is still there (the static pod itself is
// not touched).
func (m *Mirrors) RemoveMirror(pod *corev1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.mirrors[FullName(pod)]; ok && cur.UID == pod.UID {
		delete(m.mirrors, FullName(pod))
	}
}

// MirrorOf returns the mirror pod of a static pod, if the API server has
// one that matches it (IsMirrorPodOf).
func (m *Mirrors) MirrorOf(static *corev1.Pod) (*corev1.Pod, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mp, ok := m.mirrors[FullName(static)]
	if !ok || !IsMirrorPodOf(mp, static) {
		return nil, false
	}
	return mp.DeepCopy(), true
}

// TranslatePodUID is kubelet's podManager.TranslatePodUID: the UID of the
// static pod a mirror pod mirrors, or uid itself for any other pod. Give it
// Mirrors to statusmanager.WithMirrorPods so statuses keyed by the static
// pod's UID are written to its mirror.
func (m *Mirrors) TranslatePodUID(uid types.UID) types.UID {
	m.mu.Lock()
	defer m.mu.Unlock()
	for full, mp := range m.mirrors {
		if mp.UID != uid {
			continue
		}
		if st, ok := m.statics[full]; ok && IsMirrorPodOf(mp, st) {
			return st.UID
		}
	}
	return uid
}

// MirrorPodUID is the other half of kubelet's UID translations: the UID of
// a static pod's mirror pod ("" while none matches it); static is false
// when uid is not a static pod Mirrors knows. With TranslatePodUID it is
// statusmanager.MirrorPods.
func (m *Mirrors) MirrorPodUID(uid types.UID) (mirror types.UID, static bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for full, st := range m.statics {
		if st.UID != uid {
			continue
		}
		if mp, ok := m.mirrors[full]; ok && IsMirrorPodOf(mp, st) {
			return mp.UID, true
		}
		return "", true
	}
	return "", false
}

// Sync brings the API server's mirror pods in line with the static pods:
// for each static pod, a mirror that does not match it (another hash) or
// is being deleted is deleted (UID precondition) and a missing one
// created; mirrors with no static pod of their name are deleted (no
// precondition, as kubelet's orphan cleanup) unless the static pod is
// still terminating. It goes on after an error and returns them all
// joined.
func (m *Mirrors) Sync(ctx context.Context) error {
	m.mu.Lock()
	var statics, orphans []*corev1.Pod
	mirrors := map[string]*corev1.Pod{}
	for full, st := range m.statics {
		statics = append(statics, st)
		if mp, ok := m.mirrors[full]; ok {
			mirrors[full] = mp
		}
	}
	for full, mp := range m.mirrors {
		if _, ok := m.statics[full]; !ok {
			orphans = append(orphans, mp)
		}
	}
	m.mu.Unlock()
	sortPods(statics)
	sortPods(orphans)

	var errs []error
	for _, st := range statics {
		if err := m.reconcile(ctx, st, mirrors[FullName(st)]); err != nil {
			errs = append(errs, err)
		}
	}
	for _, mp := range orphans {
		if m.terminating(FullName(mp)) {
			continue
		}
		if _, err := m.delete(ctx, mp, ""); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// reconcile is kubelet's tryReconcileMirrorPods for one static pod.
func (m *Mirrors) reconcile(ctx context.Context, static, mirror *corev1.Pod) error {
	deleted := false
	if mirror != nil && (mirror.DeletionTimestamp != nil || !IsMirrorPodOf(mirror, static)) {
		ok, err := m.delete(ctx, mirror, mirror.UID)
		if err != nil {
			return err
		}
		deleted = ok
	}
	if mirror != nil && !deleted {
		return nil
	}
	node, err := m.client.GetNode(ctx, m.node)
	if err != nil {
		return fmt.Errorf("%w: mirror pod %s not created: %w", ErrNoNode, FullName(static), err)
	}
	if node.DeletionTimestamp != nil {
		return fmt.Errorf("%w: mirror pod %s not created: node %s is being deleted", ErrNoNode, FullName(static), m.node)
	}
	if node.UID == "" {
		return fmt.Errorf("%w: UID unset for node %s", ErrNoNode, m.node)
	}
	created, err := m.client.CreatePod(ctx, MirrorPod(static, node))
	if err != nil {
		return fmt.Errorf("staticpods: create mirror pod %s: %w", FullName(static), err)
	}
	if created != nil {
		m.SetMirror(created)
	}
	return nil
}

// delete is kubelet's DeleteMirrorPod: ok when the API server deleted it;
// not found and conflicts (another pod under the name now) are not errors
// but not deletions either, so that, as in kubelet, the mirror is created
// again only by a later Sync, once the pod watch has caught up.
func (m *Mirrors) delete(ctx context.Context, mirror *corev1.Pod, uid types.UID) (ok bool, err error) {
	err = m.client.DeletePod(ctx, mirror.Namespace, mirror.Name, uid)
	if err != nil {
		if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return false, fmt.Errorf("staticpods: delete mirror pod %s: %w", FullName(mirror), err)
		}
		if apierrors.IsNotFound(err) {
			m.forgetMirror(mirror)
		}
		return false, nil
	}
	m.forgetMirror(mirror)
	return true, nil
}

func (m *Mirrors) forgetMirror(mirror *corev1.Pod) {
	m.mu.Lock()
	if cur, ok := m.mirrors[FullName(mirror)]; ok && cur.UID == mirror.UID {
		delete(m.mirrors, FullName(mirror))
	}
	m.mu.Unlock()
}

// Statics returns the static pods Mirrors knows, by full name.
func (m *Mirrors) Statics() []*corev1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(m.statics))
	for _, p := range m.statics {
		out = append(out, p.DeepCopy())
	}
	sort.Slice(out, func(i, j int) bool { return FullName(out[i]) < FullName(out[j]) })
	return out
}
