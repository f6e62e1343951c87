package volumemanager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/validation"
)

// Kubelet's timings.
const (
	// PodAttachAndMountTimeout is how long WaitForAttachAndMount and
	// WaitForUnmount wait (kubelet's podAttachAndMountTimeout: 2m3s, "to
	// make timeouts due to this constant recognizable").
	PodAttachAndMountTimeout = 2*time.Minute + 3*time.Second
	// ReconcilePeriod is the time between two passes of Run (kubelet's
	// reconcilerLoopSleepPeriod).
	ReconcilePeriod = 100 * time.Millisecond
	// csiTimeout bounds each call to the driver (kubelet's csiTimeout).
	csiTimeout = 2 * time.Minute
	// Kubelet's exponential back-off of a failed volume operation.
	initialRetryDelay = 500 * time.Millisecond
	maxRetryDelay     = 2*time.Minute + 2*time.Second
)

// EventFailedMount is kubelet's event reason for volume setup failures.
const EventFailedMount = "FailedMount"

// Manager is kubelet's volume manager for CSI volumes (see the package
// doc): a desired state (pods and the volumes they use), an actual state
// (what is attached, staged and published) and a reconciler that moves
// the one to the other. Its methods are safe for concurrent use.
type Manager struct {
	nodeName string
	rootDir  string
	api      API
	node     NodeVolumes
	clock    clock.Clock
	recorder EventRecorder
	mounter  mounts.Mounter
	blk      BlockPathHandler

	passMu sync.Mutex // one reconciler pass at a time

	mu            sync.Mutex
	pods          map[types.UID]*podState
	desired       map[corev1.UniqueVolumeName]*desiredVolume
	actual        map[corev1.UniqueVolumeName]*actualVolume
	sourcesReady  bool
	reconstructed bool
	synced        bool // the first pass's reconstruction is done
	backoff       map[string]retry
	// finalExpansionErrors: volumes whose node expansion failed with a
	// final error (kubelet's volumesWithFinalExpansionErrors).
	finalExpansionErrors map[corev1.UniqueVolumeName]bool
	changed              chan struct{} // closed and replaced at each change
	nudge                chan struct{}
}

type retry struct {
	next  time.Time
	delay time.Duration
}

// Option configures a Manager.
type Option func(*Manager)

// WithClock sets the clock of the timeouts, the back-off and Run (default:
// the real one).
func WithClock(c clock.Clock) Option { return func(m *Manager) { m.clock = c } }

// WithEventRecorder sets where FailedMount events go (default: nowhere).
func WithEventRecorder(r EventRecorder) Option { return func(m *Manager) { m.recorder = r } }

// WithMounter sets how the manager tells whether a target or staging
// directory is still a mount point after the NodeVolumes' Unpublish or
// Unstage (default: mounts.HostMounter).
func WithMounter(mt mounts.Mounter) Option { return func(m *Manager) { m.mounter = mt } }

// New returns a manager for node nodeName whose pods live under rootDir
// (kubelet's root dir, /var/lib/kubelet), reading API objects through api
// and driving the drivers through node. A relative or empty rootDir is
// refused.
func New(nodeName, rootDir string, api API, node NodeVolumes, opts ...Option) (*Manager, error) {
	if nodeName == "" {
		return nil, errors.New("volumemanager: empty node name")
	}
	if rootDir == "" || rootDir[0] != '/' {
		return nil, fmt.Errorf("volumemanager: root dir %q is not absolute", rootDir)
	}
	if api == nil || node == nil {
		return nil, errors.New("volumemanager: nil API or NodeVolumes")
	}
	m := &Manager{
		nodeName: nodeName, rootDir: rootDir, api: api, node: node,
		clock:   clock.RealClock{},
		pods:    map[types.UID]*podState{},
		desired: map[corev1.UniqueVolumeName]*desiredVolume{},
		actual:  map[corev1.UniqueVolumeName]*actualVolume{},
		backoff: map[string]retry{},
		changed: make(chan struct{}),
		nudge:   make(chan struct{}, 1),
	}
	for _, o := range opts {
		o(m)
	}
	if m.mounter == nil {
		m.mounter = &mounts.HostMounter{}
	}
	if m.blk == nil {
		m.blk = HostBlockPaths{}
	}
	return m, nil
}

// StatesSynced says whether the first reconciler pass has reconstructed
// the actual state from the disk (kubelet's
// ReconcilerStatesHasBeenSynced): until then VolumesInUse may miss volumes
// an earlier agent left mounted (nodestatus.VolumesInUse waits for it).
func (m *Manager) StatesSynced() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.synced
}

// AddPod puts the pod's volumes in the desired state (kubelet's
// populator, processPodVolumes): each persistentVolumeClaim, ephemeral and
// csi volume a container uses is resolved to its CSI volume; a volume
// that cannot be (an unbound claim, ...) is a pod error, returned by the
// next WaitForAttachAndMount. Calling it again resolves the volumes again
// (kubelet's ReprocessPod). An invalid pod is refused (validation.Check).
func (m *Manager) AddPod(ctx context.Context, pod *corev1.Pod) error {
	if err := validation.Check(pod); err != nil {
		return err
	}
	mountsUsed, devices := usedVolumes(pod)
	type resolved struct {
		outer string
		s     *spec
	}
	var (
		specs    []resolved
		errs     []string
		expected []string
	)
	for _, v := range pod.Spec.Volumes {
		if !Manages(v) || (!mountsUsed[v.Name] && !devices[v.Name]) {
			continue // another provider's, or unused (kubelet skips those)
		}
		expected = append(expected, v.Name)
		s, err := m.resolve(ctx, pod, v, mountsUsed, devices)
		if err != nil {
			logr.FromContextOrDiscard(ctx).Error(err, "Error processing volume", "pod", pod.Namespace+"/"+pod.Name, "volumeName", v.Name)
			errs = append(errs, err.Error())
			continue
		}
		specs = append(specs, resolved{v.Name, s})
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.pods[pod.UID]
	if ps == nil {
		ps = &podState{volumes: map[string]corev1.UniqueVolumeName{}}
		m.pods[pod.UID] = ps
	}
	ps.pod, ps.expected = pod, expected
	if len(errs) == 0 {
		ps.errors = nil
	} else {
		ps.errors = errs
	}
	for _, r := range specs {
		dv := m.desired[r.s.name]
		if dv == nil {
			dv = &desiredVolume{spec: r.s, pods: map[types.UID]*desiredPod{}}
			m.desired[r.s.name] = dv
		}
		dv.spec = r.s // the latest PV (its capacity among the rest)
		dp := dv.pods[pod.UID]
		if dp == nil {
			dp = &desiredPod{}
			dv.pods[pod.UID] = dp
		}
		dp.pod, dp.readOnly = pod, r.s.readOnly
		if r.s.pv != nil && !r.s.readOnly && !r.s.block {
			// kubelet's checkVolumeFSResize: the desired size, and the
			// claim's size for a volume rebuilt after a restart.
			dv.size = r.s.pv.Spec.Capacity.Storage().DeepCopy()
			if av := m.actual[r.s.name]; av != nil && av.claimSize.IsZero() {
				av.claimSize = r.s.claimCapacity.DeepCopy()
			}
		}
		dp.outerNames = appendUnique(dp.outerNames, r.outer)
		ps.volumes[r.outer] = r.s.name
	}
	m.changedLocked()
	return nil
}

// RemovePod takes the pod out of the desired state, once its containers
// are gone (kubelet's populator does so when the pod's runtime may be
// removed): the next passes unpublish its volumes, and unstage those no
// other pod uses.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, dv := range m.desired {
		delete(dv.pods, uid)
		if len(dv.pods) == 0 {
			delete(m.desired, name)
		}
	}
	delete(m.pods, uid)
	m.changedLocked()
}

// SourcesReady says every pod that should run has been added: from now on
// the reconciler unpublishes and unstages what no pod wants (kubelet's
// readyToUnmount). Until then, after an agent restart, nothing is taken
// away from a pod not yet added again.
func (m *Manager) SourcesReady() {
	m.mu.Lock()
	m.sourcesReady = true
	m.changedLocked()
	m.mu.Unlock()
}

// WaitForAttachAndMount adds the pod (AddPod) and waits until each of its
// volumes the manager serves is attached and published, for at most
// PodAttachAndMountTimeout (kubelet's WaitForAttachAndMount). The
// reconciler must run meanwhile (Run, or calls to Reconcile). A pod error
// (a volume that could not be resolved) ends the wait at once. The error
// is kubelet's: "unmounted volumes=[...], unattached volumes=[...],
// failed to process volumes=[...]: <cause>", where the cause is the pod
// errors joined by "; ", context.DeadlineExceeded at the timeout, or the
// context's error. Unless the wait was interrupted (timeout, cancel), a
// FailedMount event "Unable to attach or mount volumes: <error>" is
// recorded, as kubelet's syncPod does.
func (m *Manager) WaitForAttachAndMount(ctx context.Context, pod *corev1.Pod) error {
	if pod == nil {
		return nil
	}
	if err := m.AddPod(ctx, pod); err != nil {
		return err
	}
	m.mu.Lock()
	ps := m.pods[pod.UID]
	expected := slices.Clone(ps.expected)
	m.mu.Unlock()
	if len(expected) == 0 {
		return nil
	}
	m.poke()
	timer := m.clock.NewTimer(PodAttachAndMountTimeout)
	defer timer.Stop()
	var cause error
	for cause == nil {
		m.mu.Lock()
		ps := m.pods[pod.UID]
		var errs []string
		if ps != nil {
			errs, ps.errors = ps.errors, nil
		}
		done := len(m.unmountedLocked(pod.UID, expected)) == 0
		ch := m.changed
		m.mu.Unlock()
		switch {
		case len(errs) > 0:
			cause = errors.New(strings.Join(errs, "; "))
			continue
		case done:
			return nil
		}
		select {
		case <-ch:
		case <-timer.C():
			cause = context.DeadlineExceeded
		case <-ctx.Done():
			cause = ctx.Err()
		}
	}
	m.mu.Lock()
	unmounted := m.unmountedLocked(pod.UID, expected)
	unattached := m.unattachedLocked(pod.UID)
	notInDSW := m.notInDesiredLocked(pod.UID, expected)
	m.mu.Unlock()
	if len(unmounted) == 0 {
		return nil
	}
	err := fmt.Errorf("unmounted volumes=%v, unattached volumes=%v, failed to process volumes=%v: %w", unmounted, unattached, notInDSW, cause)
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		m.event(pod, "Unable to attach or mount volumes: %v", err)
		logr.FromContextOrDiscard(ctx).Error(err, "Unable to attach or mount volumes for pod; skipping pod", "pod", pod.Namespace+"/"+pod.Name)
	}
	return err
}

// WaitForUnmount takes the pod out of the desired state (RemovePod) and
// waits until none of its volumes is published, for at most
// PodAttachAndMountTimeout (kubelet's WaitForUnmount, called after the
// pod's containers are gone and before its directories are removed). The
// error is kubelet's "mounted volumes=[<unique names>]: <cause>".
func (m *Manager) WaitForUnmount(ctx context.Context, pod *corev1.Pod) error {
	if pod == nil {
		return nil
	}
	m.RemovePod(pod.UID)
	m.poke()
	timer := m.clock.NewTimer(PodAttachAndMountTimeout)
	defer timer.Stop()
	for {
		m.mu.Lock()
		mounted := m.mountedForPodLocked(pod.UID)
		ch := m.changed
		m.mu.Unlock()
		if len(mounted) == 0 {
			return nil
		}
		var cause error
		select {
		case <-ch:
			continue
		case <-timer.C():
			cause = context.DeadlineExceeded
		case <-ctx.Done():
			cause = ctx.Err()
		}
		m.mu.Lock()
		mounted = m.mountedForPodLocked(pod.UID)
		m.mu.Unlock()
		if len(mounted) == 0 {
			return nil
		}
		return fmt.Errorf("mounted volumes=%v: %w", mounted, cause)
	}
}

// Volumes returns the pod's published volumes by the pod's volume names,
// for podsync beside the in-tree providers (kubelet's
// GetMountedVolumesForPod): the host path is the publish target. A
// volume not yet published is absent.
func (m *Manager) Volumes(_ context.Context, pod *corev1.Pod) (mounts.VolumeMap, error) {
	if err := validation.Check(pod); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := mounts.VolumeMap{}
	ps := m.pods[pod.UID]
	if ps == nil {
		return out, nil
	}
	for outer, name := range ps.volumes {
		av, dv := m.actual[name], m.desired[name]
		if av == nil || dv == nil || av.block || !av.mountedFor(pod.UID) || dv.pods[pod.UID] == nil {
			continue // a block volume is a device (DeviceOptions)
		}
		out[outer] = mounts.Volume{
			HostPath:       av.pods[pod.UID].targetPath,
			ReadOnly:       dv.pods[pod.UID].readOnly,
			SELinuxRelabel: true,
		}
	}
	return out, nil
}

// HasPossiblyMountedVolumes says whether a volume is or may be published
// for the pod (kubelet's HasPossiblyMountedVolumesForPod): its
// directories must not be removed while it is.
func (m *Manager) HasPossiblyMountedVolumes(uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.mountedForPodLocked(uid)) > 0
}

// VolumesInUse is node.status.volumesInUse (kubelet's GetVolumesInUse):
// the attachable volumes desired or still attached, sorted.
func (m *Manager) VolumesInUse() []corev1.UniqueVolumeName {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []corev1.UniqueVolumeName
	for name, dv := range m.desired {
		if dv.spec.attachable {
			out = append(out, name)
		}
	}
	for name, av := range m.actual {
		if av.attachable && av.attached {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// MarkVolumesReportedInUse records which volumes the Node's status now
// lists in volumesInUse (kubelet's MarkVolumesAsReportedInUse): an
// attachable volume is not mounted before it is, so that the
// attach/detach controller never detaches a volume in use.
func (m *Manager) MarkVolumesReportedInUse(names []corev1.UniqueVolumeName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, dv := range m.desired {
		dv.reportedInUse = slices.Contains(names, name)
	}
	m.changedLocked()
}

// Run reconciles every ReconcilePeriod, and soon after a pod is added or
// removed, until ctx ends. The first pass reconstructs the actual state
// from the disk.
func (m *Manager) Run(ctx context.Context) {
	for {
		if err := m.Reconcile(ctx); err != nil {
			logr.FromContextOrDiscard(ctx).V(4).Info("Volume reconciler pass", "err", err)
		}
		t := m.clock.NewTimer(ReconcilePeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-m.nudge:
		case <-t.C():
		}
		t.Stop()
	}
}

func (m *Manager) poke() {
	select {
	case m.nudge <- struct{}{}:
	default:
	}
}

// changedLocked wakes the waiters and Run: the desired state changed.
func (m *Manager) changedLocked() {
	m.broadcastLocked()
	m.poke()
}

// broadcastLocked wakes the waiters only: the actual state may have
// changed (a pass ended; a nudge here would make Run spin).
func (m *Manager) broadcastLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *Manager) event(pod *corev1.Pod, format string, args ...interface{}) {
	if m.recorder != nil && pod != nil {
		m.recorder.Eventf(pod, corev1.EventTypeWarning, EventFailedMount, format, args...)
	}
}

// unmountedLocked is kubelet's getUnmountedVolumes.
func (m *Manager) unmountedLocked(uid types.UID, expected []string) []string {
	out := []string{}
	ps := m.pods[uid]
	for _, outer := range expected {
		var name corev1.UniqueVolumeName
		if ps != nil {
			name = ps.volumes[outer]
		}
		av := m.actual[name]
		if name == "" || m.desired[name] == nil || av == nil || !av.mountedFor(uid) {
			out = append(out, outer)
		}
	}
	sort.Strings(out)
	return out
}

// unattachedLocked is kubelet's getUnattachedVolumes, by the pod's names.
func (m *Manager) unattachedLocked(uid types.UID) []string {
	out := []string{}
	for name, dv := range m.desired {
		dp := dv.pods[uid]
		if dp == nil || !dv.spec.attachable {
			continue
		}
		if av := m.actual[name]; av == nil || !av.attached {
			out = append(out, dp.outerNames...)
		}
	}
	sort.Strings(out)
	return out
}

// notInDesiredLocked is kubelet's getVolumesNotInDSW.
func (m *Manager) notInDesiredLocked(uid types.UID, expected []string) []string {
	out := []string{}
	ps := m.pods[uid]
	for _, outer := range expected {
		if ps == nil || m.desired[ps.volumes[outer]] == nil || m.desired[ps.volumes[outer]].pods[uid] == nil {
			out = append(out, outer)
		}
	}
	sort.Strings(out)
	return out
}

// mountedForPodLocked: the volumes published (or maybe published) for the
// pod, by unique name, sorted.
func (m *Manager) mountedForPodLocked(uid types.UID) []corev1.UniqueVolumeName {
	var out []corev1.UniqueVolumeName
	for name, av := range m.actual {
		if av.pods[uid] != nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
