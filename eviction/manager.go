package eviction

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	resourcehelper "k8s.io/component-helpers/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"
)

// Kubelet's intervals and grace periods.
const (
	// DefaultInterval is kubelet's housekeeping interval: how often Run
	// synchronizes.
	DefaultInterval = 10 * time.Second
	// PodCleanupTimeout bounds Run's wait for an evicted pod's cleanup.
	PodCleanupTimeout = 30 * time.Second
	// PodCleanupPollInterval is how often Run asks whether it is cleaned up.
	PodCleanupPollInterval = time.Second
	// ImmediateGracePeriodSeconds is the grace period of a pod evicted for
	// a hard threshold or a local storage limit.
	ImmediateGracePeriodSeconds = 1
)

// StatsSource gives the node's stats summary (kubelet's /stats/summary):
// node memory, the "pods" system container's memory, nodefs, the runtime's
// image and container filesystems, the PID limit, and per pod its
// containers' memory, rootfs and logs, its volumes, ephemeral storage and
// process count. Fields it cannot fill stay nil; their signals are then
// not observed.
type StatsSource interface {
	Summary(ctx context.Context) (*statsapi.Summary, error)
}

// Eviction is one pod to kill, with what kubelet writes for it.
type Eviction struct {
	Pod *corev1.Pod
	// GracePeriodSeconds overrides the pod's termination grace period.
	GracePeriodSeconds int64
	// Signal is the signal whose threshold was met; empty for a pod that
	// exceeded a local storage limit.
	Signal Signal
	// Message is the status message and the event's.
	Message string
	// Annotations are the event's (kubelet's offending_* keys).
	Annotations map[string]string
	// DisruptionTarget: the status gets the DisruptionTarget condition
	// (evictions under node pressure; not for storage limits).
	DisruptionTarget bool
}

// Status writes the eviction's status: see EvictedStatus.
func (e Eviction) Status(status *corev1.PodStatus, now metav1.Time) {
	EvictedStatus(status, e.Pod, e.Message, e.DisruptionTarget, now)
}

// Killer is the pod worker: the pods that may be evicted (kubelet's
// active pods) and a way to kill one with the eviction's grace period and
// status. Evict should return once the pod's containers are stopped.
type Killer interface {
	ActivePods() []*corev1.Pod
	Evict(ctx context.Context, e Eviction) error
}

// ImageGC deletes images no container uses (kubelet's
// DeleteUnusedImages), to reclaim disk before evicting pods.
type ImageGC interface {
	DeleteUnusedImages(ctx context.Context) error
}

// ContainerGC deletes every dead container (kubelet's
// DeleteAllUnusedContainers), to reclaim disk before evicting pods.
type ContainerGC interface {
	DeleteAllUnusedContainers(ctx context.Context) error
}

// EventRecorder has the methods used of client-go's record.EventRecorder.
type EventRecorder interface {
	Eventf(object apiruntime.Object, eventtype, reason, messageFmt string, args ...interface{})
	AnnotatedEventf(object apiruntime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...interface{})
}

type discard struct{}

func (discard) Eventf(apiruntime.Object, string, string, string, ...interface{}) {}
func (discard) AnnotatedEventf(apiruntime.Object, map[string]string, string, string, string, ...interface{}) {
}

// Option configures a Manager.
type Option func(*Manager)

// WithThresholds sets the thresholds (default DefaultThresholds). The
// containerfs ones are derived again from nodefs's or imagefs's
// (UpdateContainerFsThresholds); one given here is overridden, as kubelet
// does, and Synchronize logs it once.
func WithThresholds(t []Threshold) Option {
	return func(m *Manager) { m.config = append([]Threshold(nil), t...) }
}

// WithPressureTransitionPeriod sets how long a pressure condition stays
// after its threshold stops being met (default 5m).
func WithPressureTransitionPeriod(d time.Duration) Option {
	return func(m *Manager) { m.transition = d }
}

// WithMaxPodGracePeriodSeconds sets kubelet's evictionMaxPodGracePeriod
// (default 0), the longest grace period of a pod evicted for a soft
// threshold.
func WithMaxPodGracePeriodSeconds(s int64) Option {
	return func(m *Manager) { m.maxGrace = s }
}

// WithDiskLayout says which filesystems the node has (default: one).
func WithDiskLayout(l DiskLayout) Option { return func(m *Manager) { m.layout = l } }

// WithImageGC sets the image collector called under disk pressure.
func WithImageGC(g ImageGC) Option { return func(m *Manager) { m.imageGC = g } }

// WithContainerGC sets the dead-container collector called under disk
// pressure.
func WithContainerGC(g ContainerGC) Option { return func(m *Manager) { m.containerGC = g } }

// WithClock sets the clock (default the real one).
func WithClock(c clock.WithTicker) Option { return func(m *Manager) { m.clock = c } }

// WithRecorder sets the event recorder (default: none).
func WithRecorder(r EventRecorder) Option { return func(m *Manager) { m.recorder = r } }

// WithNodeRef sets the node the EvictionThresholdMet event is about;
// without it that event is not sent.
func WithNodeRef(ref *corev1.ObjectReference) Option { return func(m *Manager) { m.nodeRef = ref } }

// WithLocalStorageCapacityIsolation turns eviction for exceeding
// ephemeral-storage limits and emptyDir size limits on or off (default on,
// as kubelet's localStorageCapacityIsolation).
func WithLocalStorageCapacityIsolation(on bool) Option {
	return func(m *Manager) { m.localStorage = on }
}

// WithInterval sets Run's interval (default 10 s).
func WithInterval(d time.Duration) Option { return func(m *Manager) { m.interval = d } }

// WithPodCleanedUp sets how Run learns that an evicted pod's resources are
// released; Run then waits for it (up to 30 s, polling every second)
// before the next pass, as kubelet. Without it, Run waits one interval.
func WithPodCleanedUp(f func(*corev1.Pod) bool) Option {
	return func(m *Manager) { m.cleanedUp = f }
}

// Manager is kubelet's eviction manager: each Synchronize observes the
// node, updates its pressure conditions, and evicts at most one pod for a
// met threshold (or every pod over a local storage limit).
type Manager struct {
	stats        StatsSource
	killer       Killer
	config       []Threshold
	configErr    error
	transition   time.Duration
	maxGrace     int64
	layout       DiskLayout
	imageGC      ImageGC
	containerGC  ContainerGC
	clock        clock.WithTicker
	recorder     EventRecorder
	nodeRef      *corev1.ObjectReference
	localStorage bool
	interval     time.Duration
	cleanedUp    func(*corev1.Pod) bool

	syncMu sync.Mutex // one Synchronize at a time
	warned bool

	mu                   sync.RWMutex
	conditions           []corev1.NodeConditionType
	conditionsObservedAt map[corev1.NodeConditionType]time.Time
	firstObservedAt      map[Threshold]time.Time
	met                  []Threshold
	lastObservations     Observations
}

// New makes a Manager reading stats and evicting through killer.
func New(stats StatsSource, killer Killer, opts ...Option) *Manager {
	m := &Manager{
		stats:                stats,
		killer:               killer,
		config:               DefaultThresholds(),
		transition:           DefaultPressureTransitionPeriod,
		clock:                clock.RealClock{},
		recorder:             discard{},
		localStorage:         true,
		interval:             DefaultInterval,
		conditionsObservedAt: map[corev1.NodeConditionType]time.Time{},
		firstObservedAt:      map[Threshold]time.Time{},
	}
	for _, o := range opts {
		o(m)
	}
	m.config, m.configErr = UpdateContainerFsThresholds(m.config, m.layout.DedicatedImageFs, m.layout.SplitContainerFs)
	return m
}

// Thresholds is the thresholds in force, containerfs's included.
func (m *Manager) Thresholds() []Threshold { return append([]Threshold(nil), m.config...) }

// Conditions is the node's pressure conditions (MemoryPressure,
// DiskPressure, PIDPressure, in that order): those whose thresholds were
// met within the pressure transition period.
func (m *Manager) Conditions() []corev1.NodeConditionType {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return append([]corev1.NodeConditionType(nil), m.conditions...)
}

func (m *Manager) has(c corev1.NodeConditionType) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return hasCondition(m.conditions, c)
}

// IsUnderMemoryPressure is for nodestatus's MemoryPressure condition.
func (m *Manager) IsUnderMemoryPressure() bool { return m.has(corev1.NodeMemoryPressure) }

// IsUnderDiskPressure is for nodestatus's DiskPressure condition.
func (m *Manager) IsUnderDiskPressure() bool { return m.has(corev1.NodeDiskPressure) }

// IsUnderPIDPressure is for nodestatus's PIDPressure condition.
func (m *Manager) IsUnderPIDPressure() bool { return m.has(corev1.NodePIDPressure) }

// Admit refuses a pod as kubelet's eviction admit handler does under the
// current conditions (see the function Admit).
func (m *Manager) Admit(pod *corev1.Pod) error {
	return Admit(pod, m.Conditions())
}

// ErrStats is matched by Synchronize's error when the stats source fails.
var ErrStats = errors.New("eviction: stats summary unavailable")

// ErrEvict is matched by Synchronize's error when the killer failed to
// kill an evicted pod; kubelet counts the pod evicted all the same.
var ErrEvict = errors.New("eviction: killing the evicted pod failed")

var conditionOrder = []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure}

// Synchronize is one pass of kubelet's eviction manager: observe; find
// the thresholds met (and those met before whose minimum reclaim is not
// reached yet); update the pressure conditions; evict pods over their
// local storage limits; then, for the thresholds whose grace period has
// passed and whose stats are new, take the first in kubelet's priority
// (memory first), reclaim node-level resources for it (dead containers,
// unused images) and stop if that brought every threshold back with its
// minimum reclaim, else rank the active pods for its signal and evict the
// first that is not critical. It returns the pods evicted.
func (m *Manager) Synchronize(ctx context.Context) ([]*corev1.Pod, error) {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	log := logr.FromContextOrDiscard(ctx)
	if m.configErr != nil && !m.warned {
		m.warned = true
		log.Info("Eviction manager: containerfs thresholds are derived from nodefs or imagefs; the ones given were overridden", "err", m.configErr)
	}
	if len(m.config) == 0 && !m.localStorage {
		return nil, nil
	}
	pods := m.killer.ActivePods()
	summary, err := m.stats.Summary(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStats, err)
	}
	if summary == nil {
		summary = &statsapi.Summary{}
	}
	obs := Observe(summary)
	stats := PodStatsByUID(summary.Pods)

	thresholds := ThresholdsMet(m.config, obs, false)
	m.mu.RLock()
	prevMet, prevFirst, prevCond, last := m.met, m.firstObservedAt, m.conditionsObservedAt, m.lastObservations
	m.mu.RUnlock()
	if len(prevMet) > 0 {
		thresholds = mergeThresholds(thresholds, ThresholdsMet(prevMet, obs, true))
	}
	now := m.clock.Now()
	first := make(map[Threshold]time.Time, len(thresholds))
	for _, t := range thresholds {
		at, ok := prevFirst[t]
		if !ok {
			at = now
		}
		first[t] = at
	}
	condAt := map[corev1.NodeConditionType]time.Time{}
	for _, c := range NodeConditions(thresholds) {
		condAt[c] = now
	}
	for c, at := range prevCond {
		if _, ok := condAt[c]; !ok {
			condAt[c] = at
		}
	}
	conditions := []corev1.NodeConditionType{}
	for _, c := range conditionOrder {
		if at, ok := condAt[c]; ok && now.Sub(at) < m.transition {
			conditions = append(conditions, c)
		}
	}
	graced := []Threshold{}
	for _, t := range thresholds {
		if now.Sub(first[t]) >= t.GracePeriod {
			graced = append(graced, t)
		} else {
			log.V(2).Info("Eviction manager: eviction criteria not yet met", "threshold", t.String(), "duration", now.Sub(first[t]))
		}
	}
	m.mu.Lock()
	m.conditions = conditions
	m.firstObservedAt = first
	m.conditionsObservedAt = condAt
	m.met = graced
	m.lastObservations = obs
	m.mu.Unlock()

	// the thresholds whose stats are new since the last pass
	thresholds = thresholds[:0:0]
	for _, t := range graced {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		l, ok := last[t.Signal]
		if !ok || o.Time.IsZero() || o.Time.After(l.Time) {
			thresholds = append(thresholds, t)
		}
	}

	if m.localStorage {
		if evicted, err := m.localStorageEviction(ctx, pods, stats); len(evicted) > 0 {
			return evicted, err
		}
	}
	if len(thresholds) == 0 {
		return nil, nil
	}
	sort.Sort(byEvictionPriority(thresholds))
	reclaim := thresholds[0]
	res := signalResource[reclaim.Signal]
	log.Info("Eviction manager: attempting to reclaim", "resourceName", res)
	if m.nodeRef != nil {
		m.recorder.Eventf(m.nodeRef, corev1.EventTypeWarning, "EvictionThresholdMet", "Attempting to reclaim %s", res)
	}
	if m.reclaimNodeLevel(ctx, reclaim.Signal) {
		log.Info("Eviction manager: able to reduce resource pressure without evicting pods.", "resourceName", res)
		return nil, nil
	}
	rank, ok := RankFor(reclaim.Signal, m.layout)
	if !ok || len(pods) == 0 {
		return nil, nil
	}
	pods = append([]*corev1.Pod(nil), pods...)
	rank(pods, stats)
	for _, pod := range pods {
		grace := int64(ImmediateGracePeriodSeconds)
		if !reclaim.Hard() {
			grace = m.maxGrace
			if pod.Spec.TerminationGracePeriodSeconds != nil {
				grace = min(m.maxGrace, *pod.Spec.TerminationGracePeriodSeconds)
			}
		}
		msg, ann := Message(res, pod, stats, thresholds, obs)
		if ok, err := m.evict(ctx, Eviction{Pod: pod, GracePeriodSeconds: grace, Signal: reclaim.Signal, Message: msg, Annotations: ann, DisruptionTarget: true}); ok {
			return []*corev1.Pod{pod}, err
		}
	}
	log.Info("Eviction manager: unable to evict any pods from the node")
	return nil, nil
}

// evict evicts a pod unless it is critical; a failed kill still counts.
func (m *Manager) evict(ctx context.Context, e Eviction) (bool, error) {
	log := logr.FromContextOrDiscard(ctx)
	if IsCritical(e.Pod) {
		log.Info("Eviction manager: cannot evict a critical pod", "pod", e.Pod.Namespace+"/"+e.Pod.Name)
		return false, nil
	}
	m.recorder.AnnotatedEventf(e.Pod, e.Annotations, corev1.EventTypeWarning, Reason, "%s", e.Message)
	if err := m.killer.Evict(ctx, e); err != nil {
		return true, fmt.Errorf("%w: pod %s/%s: %w", ErrEvict, e.Pod.Namespace, e.Pod.Name, err)
	}
	return true, nil
}

// reclaimNodeLevel calls the collectors kubelet calls for the signal on
// this layout, and reports whether, observed again, no threshold is met
// counting minimum reclaim.
func (m *Manager) reclaimNodeLevel(ctx context.Context, signal Signal) bool {
	log := logr.FromContextOrDiscard(ctx)
	var funcs []func(context.Context) error
	containers := func() {
		if m.containerGC != nil {
			funcs = append(funcs, m.containerGC.DeleteAllUnusedContainers)
		}
	}
	images := func() {
		if m.imageGC != nil {
			funcs = append(funcs, m.imageGC.DeleteUnusedImages)
		}
	}
	image := signal == SignalImageFsAvailable || signal == SignalImageFsInodesFree
	node := signal == SignalNodeFsAvailable || signal == SignalNodeFsInodesFree
	container := signal == SignalContainerFsAvailable || signal == SignalContainerFsInodesFree
	switch {
	case m.layout.DedicatedImageFs && !m.layout.SplitContainerFs:
		if image || container {
			containers()
			images()
		}
	case m.layout.DedicatedImageFs && m.layout.SplitContainerFs:
		if image {
			images()
		}
		if node || container {
			containers()
		}
	default:
		if image || node || container {
			containers()
			images()
		}
	}
	for _, f := range funcs {
		if err := f(ctx); err != nil {
			log.Info("Eviction manager: unexpected error when attempting to reduce resource pressure", "signal", signal, "err", err)
		}
	}
	if len(funcs) == 0 {
		return false
	}
	summary, err := m.stats.Summary(ctx)
	if err != nil {
		log.Error(err, "Eviction manager: failed to get summary stats after resource reclaim")
		return false
	}
	return len(ThresholdsMet(m.config, Observe(summary), true)) == 0
}

// localStorageEviction evicts the pods over an emptyDir size limit, their
// pod-level ephemeral-storage limit or a container's.
func (m *Manager) localStorageEviction(ctx context.Context, pods []*corev1.Pod, stats PodStatsFunc) ([]*corev1.Pod, error) {
	var evicted []*corev1.Pod
	var errs []error
	for _, pod := range pods {
		s, ok := stats(pod)
		if !ok {
			continue
		}
		msg, over := StorageLimitExceeded(pod, s, m.layout)
		if !over {
			continue
		}
		ok, err := m.evict(ctx, Eviction{Pod: pod, GracePeriodSeconds: ImmediateGracePeriodSeconds, Message: msg})
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			evicted = append(evicted, pod)
		}
	}
	return evicted, errors.Join(errs...)
}

// StorageLimitExceeded is kubelet's local storage check of one pod, in
// its order: the first emptyDir volume whose use exceeds its sizeLimit
// (memory-backed ones included: InPlacePodVerticalScalingMemoryBackedVolumes
// is off in v1.37); the pod's total ephemeral storage over the sum of its
// limits; a container (app, or restartable init) whose logs — and writable
// layer unless images are on a dedicated filesystem — exceed its limit.
// It returns the eviction message.
func StorageLimitExceeded(pod *corev1.Pod, s statsapi.PodStats, layout DiskLayout) (string, bool) {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.EmptyDir == nil {
			continue
		}
		size := v.EmptyDir.SizeLimit
		var used *uint64
		for j := range s.VolumeStats {
			if s.VolumeStats[j].Name == v.Name {
				used = s.VolumeStats[j].UsedBytes
			}
		}
		if used != nil && size != nil && size.Sign() == 1 && size.CmpInt64(int64(*used)) < 0 {
			return emptyDirMessage(v.Name, *size), true
		}
	}
	if limit, ok := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})[corev1.ResourceEphemeralStorage]; ok {
		var used int64
		if s.EphemeralStorage != nil && s.EphemeralStorage.UsedBytes != nil {
			used = int64(*s.EphemeralStorage.UsedBytes)
		}
		if limit.CmpInt64(used) < 0 {
			return podEphemeralStorageMessage(limit), true
		}
	}
	limits := map[string]corev1.Container{}
	for _, c := range pod.Spec.Containers {
		if l := c.Resources.Limits.StorageEphemeral(); l != nil && l.Value() != 0 {
			limits[c.Name] = c
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			continue
		}
		if l := c.Resources.Limits.StorageEphemeral(); l != nil && l.Value() != 0 {
			limits[c.Name] = c
		}
	}
	for _, cs := range s.Containers {
		used, _ := fsUsed(cs.Logs)
		if !layout.DedicatedImageFs {
			r, _ := fsUsed(cs.Rootfs)
			used += r
		}
		if c, ok := limits[cs.Name]; ok {
			l := c.Resources.Limits.StorageEphemeral()
			if l.CmpInt64(used) < 0 {
				return containerEphemeralStorageMessage(cs.Name, *l), true
			}
		}
	}
	return "", false
}

// Run synchronizes every interval on the manager's clock until ctx ends;
// after an eviction it waits for the pod's cleanup (WithPodCleanedUp)
// and synchronizes again at once, as kubelet. Errors are logged to the
// context's logger. It returns ctx's error.
func (m *Manager) Run(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		evicted, err := m.Synchronize(ctx)
		if err != nil {
			log.Error(err, "Eviction manager: failed to synchronize")
		}
		if len(evicted) > 0 && m.cleanedUp != nil {
			m.waitForCleanup(ctx, evicted)
			continue
		}
		t := m.clock.NewTimer(m.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
	}
}

func (m *Manager) waitForCleanup(ctx context.Context, pods []*corev1.Pod) {
	timeout := m.clock.NewTimer(PodCleanupTimeout)
	defer timeout.Stop()
	tick := m.clock.NewTicker(PodCleanupPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timeout.C():
			logr.FromContextOrDiscard(ctx).Info("Eviction manager: timed out waiting for pods to be cleaned up")
			return
		case <-tick.C():
			done := true
			for _, p := range pods {
				if !m.cleanedUp(p) {
					done = false
					break
				}
			}
			if done {
				return
			}
		}
	}
}
