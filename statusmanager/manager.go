package statusmanager

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/podworker"
)

// DefaultSyncPeriod is kubelet's status manager syncPeriod: how often every
// pod's status is reconciled with the API server's.
const DefaultSyncPeriod = 10 * time.Second

// Client is what the manager needs of an API server: client-go's
// CoreV1().Pods(namespace) fits it in three lines (see the package doc).
// A pod that does not exist is reported with an error for which
// k8s.io/apimachinery/pkg/api/errors.IsNotFound holds, as client-go's are.
type Client interface {
	// GetPod reads the pod from the API server (kubelet reads it live,
	// not from a cache, before each patch).
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	// PatchPodStatus applies a strategic merge patch
	// (types.StrategicMergePatchType) to the pod's status subresource and
	// returns the pod as the API server then holds it.
	PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error)
	// DeletePod deletes the pod with grace period 0 and uid as the
	// precondition, so a pod recreated under the same name is not deleted.
	DeletePod(ctx context.Context, namespace, name string, uid types.UID) error
}

// Option configures a Manager.
type Option func(*options)

type options struct {
	clock   clock.WithTicker
	period  time.Duration
	mirrors MirrorPods
}

// WithClock sets the clock of the periodic reconcile and of the transition
// times the merge stamps (tests pass a fake clock).
func WithClock(c clock.WithTicker) Option { return func(o *options) { o.clock = c } }

// WithSyncPeriod sets how often every status is reconciled with the API
// server's (DefaultSyncPeriod; zero or less: never, only new statuses are
// written).
func WithSyncPeriod(d time.Duration) Option { return func(o *options) { o.period = d } }

// MirrorPods is what the manager needs to write static pods' statuses to
// their mirror pods, kubelet's pod manager's UID translations;
// staticpods.Mirrors has both methods.
type MirrorPods interface {
	// TranslatePodUID returns the UID of the static pod a mirror pod
	// mirrors, or uid itself for any other pod.
	TranslatePodUID(uid types.UID) types.UID
	// MirrorPodUID returns the UID of a static pod's mirror pod ("" while
	// it has none); static is false for a pod that is not a static pod.
	MirrorPodUID(uid types.UID) (mirror types.UID, static bool)
}

// WithMirrorPods makes the manager write static pods' statuses to their
// mirror pods, as kubelet's does: statuses stay keyed by the static pod's
// UID (the one podworker knows); a static pod without a mirror pod is
// skipped; which versions were written is kept per mirror pod, so a mirror
// pod recreated (a new UID) gets the status again; the pod read from the
// API server by name is written when its UID translates to the static
// pod's, with the mirror's UID as the patch's precondition. A mirror pod
// is never deleted by the manager (kubelet's canBeDeleted), nor is a
// static pod's phase forced terminal when it is removed (kubelet's
// TerminatePod).
func WithMirrorPods(mp MirrorPods) Option { return func(o *options) { o.mirrors = mp } }

// entry is one pod's newest status, kubelet's versionedPodStatus.
type entry struct {
	version   uint64
	namespace string
	name      string
	status    corev1.PodStatus
	// finished: the pod worker removed the pod (kubelet's podIsFinished,
	// set by TerminatePod at the end of SyncTerminatedPod).
	finished bool
	// couldRun: containers of the pod could still be running.
	couldRun bool
	// pod is the pod as the API server last showed it to us: the caller's
	// spec from OnSync, or what a read or patch returned (kubelet's pod
	// manager); nil when unknown.
	pod *corev1.Pod
	// matched is the pod last found to match status in every field
	// kubelet owns (needsReconcile): while pod and status stay the same,
	// they still match.
	matched *corev1.Pod
}

// Manager writes the pods' statuses to the API server, as kubelet's status
// manager does. Its methods are safe for concurrent use.
type Manager struct {
	client Client
	o      options
	wake   chan struct{}

	mu       sync.Mutex
	statuses map[types.UID]*entry
	written  map[types.UID]corev1.PodStatus
	// pending are the pods a wake-up's batch looks at: a new version, a
	// write that failed; statics the static pods, whose mirror pod (and
	// so what was written) may change with no new status. The periodic
	// reconcile looks at every pod. Without them each batch scanned every
	// pod, and N pods starting cost O(N²) (issue 41).
	pending map[types.UID]struct{}
	statics map[types.UID]struct{}
	// gone are the pods the API server no longer has (a status was
	// written, then the read was refused or found nothing) that the
	// worker still held: their statuses are not written, until the
	// worker's last (Removed) or Forget. Without it, each status of a
	// force-deleted pod being killed cost a failing read.
	gone map[types.UID]struct{}

	// syncMu serialises syncs (Run's and Sync's): kubelet syncs from one
	// goroutine. apiVersions is used only under it.
	syncMu      sync.Mutex
	apiVersions map[types.UID]uint64
}

// New returns a Manager writing through client. Nothing is written until
// Run (or Sync) is called.
func New(client Client, opts ...Option) *Manager {
	o := options{clock: clock.RealClock{}, period: DefaultSyncPeriod}
	for _, opt := range opts {
		opt(&o)
	}
	return &Manager{client: client, o: o, wake: make(chan struct{}, 1),
		statuses: map[types.UID]*entry{}, written: map[types.UID]corev1.PodStatus{}, apiVersions: map[types.UID]uint64{},
		pending: map[types.UID]struct{}{}, statics: map[types.UID]struct{}{}, gone: map[types.UID]struct{}{}}
}

// OnSync takes a pod's newest state from podworker (pass it to
// podworker.WithOnSync). It never blocks on the API server: it stores the
// status under a new version when it changed (kubelet's SetPodStatus, or
// TerminatePod for a removed pod: containers that never ran end as
// ContainerStatusUnknown, a phase that is not terminal becomes Failed) and
// wakes Run.
func (m *Manager) OnSync(uid types.UID, st podworker.PodState) {
	if st.Pod == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, gone := m.gone[uid]; gone {
		if st.Removed {
			delete(m.gone, uid) // the worker's last: nothing more comes
		}
		return
	}
	status := *st.APIStatus.DeepCopy()
	cached, ok := m.statuses[uid]
	e := &entry{namespace: st.Pod.Namespace, name: st.Pod.Name, finished: st.Removed, couldRun: couldHaveRunningContainers(st), pod: st.Pod}
	if ok {
		e.version, e.finished = cached.version, cached.finished || st.Removed
		if st.Removed {
			e.pod = cached.pod // a removed pod's spec is the one it was killed with; the API's is newer
		}
		if cached.status.ObservedGeneration > status.ObservedGeneration {
			status.ObservedGeneration = cached.status.ObservedGeneration // no patch backwards
		}
	}
	if st.Removed {
		// The end of the pod's life: kubelet's TerminatePod.
		status = terminatePod(e.pod, status)
	}
	e.status = status
	// Kubelet forces a new version for a pod being deleted, so the
	// worker's statuses keep reaching the API server and the deletion.
	force := st.Pod.DeletionTimestamp != nil || st.Removed
	if ok && !force && equalByKubelet(&cached.status, &status) {
		cached.couldRun, cached.pod = e.couldRun, e.pod
		return
	}
	e.version++
	m.statuses[uid] = e
	m.pending[uid] = struct{}{}
	if m.o.mirrors != nil {
		if _, static := m.o.mirrors.MirrorPodUID(uid); static {
			m.statics[uid] = struct{}{}
		}
	}
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Status returns the newest status the manager holds for a pod (kubelet's
// GetPodStatus), written or not.
func (m *Manager) Status(uid types.UID) (corev1.PodStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.statuses[uid]
	if !ok {
		return corev1.PodStatus{}, false
	}
	return *e.status.DeepCopy(), true
}

// Written returns the status last written for a pod: the merged status the
// API server accepted, or already held; false before the first write and
// once the manager dropped the pod.
func (m *Manager) Written(uid types.UID) (corev1.PodStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.written[uid]
	return *s.DeepCopy(), ok
}

// Run writes statuses until ctx ends: new ones as they come, and every
// one each sync period (kubelet's reconcile), on the caller's goroutine.
// Failures are logged to ctx's logr logger and retried at the next sync.
// It returns ctx's error.
func (m *Manager) Run(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx).WithName("statusmanager")
	var tick <-chan time.Time
	if m.o.period > 0 {
		t := m.o.clock.NewTicker(m.o.period)
		defer t.Stop()
		tick = t.C()
	}
	for {
		var err error
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-m.wake:
			err = m.syncBatch(ctx, false)
		case <-tick:
			err = m.syncBatch(ctx, true)
		}
		if err != nil && ctx.Err() == nil {
			log.Error(err, "Pod status sync failed; retried at the next sync")
		}
	}
}

// Sync writes now, on the caller's goroutine, every status not yet
// written, as Run does when woken; with reconcile, also every status that
// differs from the API server's and every pod that may now be deleted, as
// Run does each sync period. The errors of the pods that failed are
// joined; they are retried at the next sync.
func (m *Manager) Sync(ctx context.Context, reconcile bool) error {
	return m.syncBatch(ctx, reconcile)
}

// syncBatch is kubelet's syncBatch.
func (m *Manager) syncBatch(ctx context.Context, all bool) error {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	type update struct {
		uid types.UID
		e   entry
	}
	var updates []update
	m.mu.Lock()
	// A wake-up looks at the pending pods and the static ones, the
	// reconcile at all; either takes the pending ones (a failure puts its
	// pod back).
	look := m.statuses
	if !all {
		look = make(map[types.UID]*entry, len(m.pending)+len(m.statics))
		for uid := range m.pending {
			if e := m.statuses[uid]; e != nil {
				look[uid] = e
			}
		}
		for uid := range m.statics {
			if e := m.statuses[uid]; e != nil {
				look[uid] = e
			}
		}
	}
	clear(m.pending)
	keys := make(map[types.UID]types.UID, len(look)) // status UID → the API pod's
	for uid := range look {
		if key, ok := m.apiUID(uid); ok {
			keys[uid] = key
		}
	}
	if all {
		live := map[types.UID]bool{}
		for _, key := range keys {
			live[key] = true
		}
		for key := range m.apiVersions {
			if _, ok := m.statuses[key]; !ok && !live[key] {
				delete(m.apiVersions, key)
			}
		}
	}
	for uid, e := range look {
		key, ok := keys[uid]
		switch {
		case !ok:
			continue // a static pod without its mirror pod yet
		case !all:
			if m.apiVersions[key] >= e.version {
				continue
			}
		case m.needsUpdate(key, e):
		case m.needsReconcile(e):
			delete(m.apiVersions, key) // forces the write
		default:
			continue
		}
		updates = append(updates, update{uid, *e})
	}
	m.mu.Unlock()

	var errs []error
	for _, u := range updates {
		if err := m.syncPod(ctx, u.uid, u.e); err != nil {
			errs = append(errs, err)
			m.mu.Lock()
			if m.statuses[u.uid] != nil {
				m.pending[u.uid] = struct{}{} // retried at the next wake-up too
			}
			m.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// apiUID is the UID of the API pod a status is written to: the pod's own,
// or a static pod's mirror pod's (ok false while it has none).
func (m *Manager) apiUID(uid types.UID) (types.UID, bool) {
	if m.o.mirrors == nil {
		return uid, true
	}
	mirror, static := m.o.mirrors.MirrorPodUID(uid)
	switch {
	case !static:
		return uid, true
	case mirror == "":
		return "", false
	}
	return mirror, true
}

// needsUpdate is kubelet's: a version not yet written, or a pod that may
// now be deleted.
func (m *Manager) needsUpdate(uid types.UID, e *entry) bool {
	if v, ok := m.apiVersions[uid]; !ok || v < e.version {
		return true
	}
	return canBeDeleted(e.pod, e.finished)
}

// needsReconcile is kubelet's: the API server's status (as last seen)
// differs from the manager's in a field kubelet owns.
func (m *Manager) needsReconcile(e *entry) bool {
	if e.pod == nil || e.pod == e.matched {
		return false
	}
	api := e.pod.Status.DeepCopy()
	apistatus.Normalize(e.pod, api)
	if !equalByKubelet(api, &e.status) {
		return true
	}
	e.matched = e.pod // e.status changes only in a new entry
	return false
}

// syncPod is kubelet's syncPod: read the pod, merge, patch when the patch
// changes something, delete when the pod may go.
func (m *Manager) syncPod(ctx context.Context, uid types.UID, e entry) error {
	pod, err := m.client.GetPod(ctx, e.namespace, e.name)
	if apierrors.IsNotFound(err) {
		switch {
		case e.finished:
			m.drop(uid) // gone from the API server and from the worker
		case m.wrote(uid):
			m.dropGone(uid) // gone from the API server, still killed
		}
		return nil
	}
	if apierrors.IsForbidden(err) && m.wrote(uid) {
		// The node authorizer's answer for a pod no longer bound to the
		// node (deleted): kubelet forgets such a status when the pod
		// leaves its pod manager (RemoveOrphanedStatuses). A pod the
		// worker still holds (killed after a forced deletion) sends
		// more statuses, which are not written (gone). A pod never
		// written is retried: the authorizer learns of a new pod from
		// its own watch, after the node may have rejected it at
		// admission (finished at once; dropped, its Failed status never
		// reached the API server).
		if e.finished {
			m.drop(uid)
		} else {
			m.dropGone(uid)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("statusmanager: get pod %s/%s: %w", e.namespace, e.name, err)
	}
	translated := pod.UID
	if m.o.mirrors != nil {
		translated = m.o.mirrors.TranslatePodUID(pod.UID)
	}
	if translated != uid {
		m.drop(uid) // deleted and recreated under the same name (or an outdated mirror pod): not ours
		return nil
	}
	merged := merge(pod, pod.Status, e.status, e.couldRun, m.o.clock.Now())
	patch, unchanged, err := StatusPatch(pod.UID, pod.Status, merged)
	if err != nil {
		return err
	}
	if !unchanged {
		newPod, err := m.client.PatchPodStatus(ctx, pod.Namespace, pod.Name, patch)
		if err != nil {
			return fmt.Errorf("statusmanager: patch status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		pod = newPod
	}
	m.apiVersions[pod.UID] = e.version // the mirror pod's UID for a static pod
	m.mu.Lock()
	if cur := m.statuses[uid]; cur != nil { // not forgotten meanwhile
		cur.pod = pod
		m.written[uid] = merged
	}
	m.mu.Unlock()

	if canBeDeleted(pod, e.finished) {
		err := m.client.DeletePod(ctx, pod.Namespace, pod.Name, pod.UID)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("statusmanager: delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		m.drop(uid)
		return nil
	}
	if e.finished {
		m.forget(uid, e.version) // the worker forgot it and it stays: nothing more to write
	}
	return nil
}

// wrote reports whether a status of the pod was written.
func (m *Manager) wrote(uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.written[uid]
	return ok
}

// Forget drops what the manager holds of a pod its caller no longer has
// (kubelet's RemoveOrphanedStatuses, for one pod): a pod deleted from the
// API server, whose status nothing needs to write any more. It never
// waits for a sync in flight; the version written is forgotten at the
// next reconcile.
func (m *Manager) Forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forgetLocked(uid)
	delete(m.gone, uid)
}

// dropGone forgets a pod the API server no longer has and ignores its
// statuses until the worker's last.
func (m *Manager) dropGone(uid types.UID) {
	m.drop(uid)
	m.mu.Lock()
	m.gone[uid] = struct{}{}
	m.mu.Unlock()
}

// drop forgets a pod (kubelet's deletePodStatus).
func (m *Manager) drop(uid types.UID) {
	m.mu.Lock()
	m.forgetLocked(uid)
	m.mu.Unlock()
	delete(m.apiVersions, uid)
}

// forget drops a pod's entry if no newer status arrived meanwhile.
func (m *Manager) forget(uid types.UID, version uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.statuses[uid]; e != nil && e.version == version {
		m.forgetLocked(uid)
		delete(m.apiVersions, uid)
	}
}

// forgetLocked drops what mu guards of a pod.
func (m *Manager) forgetLocked(uid types.UID) {
	delete(m.statuses, uid)
	delete(m.written, uid)
	delete(m.pending, uid)
	delete(m.statics, uid)
}
