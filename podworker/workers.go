package podworker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/cgroups"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/probes"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/validation"
)

// ErrClosed: the Workers were closed.
var ErrClosed = errors.New("pod workers closed")

// Defaults, as kubelet's.
const (
	DefaultRelistPeriod = time.Second      // generic PLEG relist period
	DefaultResyncPeriod = time.Minute      // syncFrequency
	DefaultErrorRetry   = 10 * time.Second // workerBackOffPeriod
	DefaultGCPeriod     = time.Minute      // ContainerGCPeriod
	// DefaultEventedRelistPeriod is the relist period while the runtime's
	// container events stream and nothing changed for QuietAfter (see
	// WithEventedRelistPeriod).
	DefaultEventedRelistPeriod = time.Minute
	// QuietAfter is how long after the last change the node is relisted
	// every relist period even while events stream: podsync's
	// ExitSettleTime, during which a failed container's late reason
	// (OOMKilled), which comes with no event, is still looked for.
	QuietAfter = podsync.ExitSettleTime
)

// PodState is what the Workers know of one pod.
type PodState struct {
	// Pod is the newest spec given.
	Pod *corev1.Pod
	// Status is the runtime's view the last sync worked from (nil before
	// the first sync).
	Status *podsync.PodStatus
	// APIStatus is the pod's status as the API server should show it
	// (apistatus.PodStatus, with probe results), after the last sync; for
	// a removed pod, its final, terminal status.
	APIStatus corev1.PodStatus
	// Result is the last sync's (or kill's) outcome.
	Result podsync.Result
	// Err is a failure outside the sync steps: reading the status, or
	// removing a killed pod.
	Err error
	// Synced is when the last sync ended.
	Synced time.Time
	// NextSync is when a failed sync is retried (zero: none pending): at
	// the end of a back-off (Result.NextSync) or after the error retry,
	// spread as kubelet spreads it (WithJitter), so never before the
	// back-off ends.
	NextSync time.Time
	// Terminating: the pod is being killed and removed.
	Terminating bool
	// Removed: the pod was killed and everything of it removed; the
	// Workers forgot it. Seen only by WithOnSync.
	Removed bool
}

// Option configures Workers.
type Option func(*options)

type options struct {
	clock        clock.WithTicker
	relist       time.Duration
	quietRelist  time.Duration
	resync       time.Duration
	errorRetry   time.Duration
	gcPeriod     time.Duration
	gcPolicy     podsync.GCPolicy
	secrets      func(context.Context, *corev1.Pod) ([]corev1.Secret, error)
	onSync       []func(types.UID, PodState)
	logger       logr.Logger
	syncDeadline time.Duration
	probes       *probes.Manager
	noEvents     bool
	runtimeName  string
	hostIPs      []string
	jitter       func(time.Duration) time.Duration
	cgroups      PodCgroups
	admit        AdmitFunc

	periodicRemount bool       // WithPeriodicRemount (refresh.go)
	volumes         PodVolumes // WithVolumeManager (volumes.go)
}

// PodCgroups makes each pod's cgroup before its sandbox, removes it once
// the pod is killed, and sweeps the cgroups of pods the Workers no longer
// have (cgroups.Manager fits).
type PodCgroups interface {
	EnsurePod(ctx context.Context, pod *corev1.Pod) error
	RemovePod(ctx context.Context, pod *corev1.Pod) error
	RemoveOrphans(ctx context.Context, keep func(types.UID) bool, volumesExist func(types.UID) bool) ([]types.UID, error)
	// PodCgroupConfig reads back what the pod's cgroup holds.
	PodCgroupConfig(ctx context.Context, pod *corev1.Pod) (cgroups.ResourceConfig, error)
	// UpdatePod writes the pod's CPU and memory values to its cgroup when
	// they changed (an in-place resize of the pod or of its containers).
	UpdatePod(ctx context.Context, pod *corev1.Pod) error
}

// podCgroupGrower is a PodCgroups that raises a pod cgroup's limits that
// grow before the sync (cgroups.Manager's GrowPod); UpdatePod after it
// writes the exact values.
type podCgroupGrower interface {
	GrowPod(ctx context.Context, pod *corev1.Pod) error
}

// WithPodCgroups gives each pod a cgroup of its own, as kubelet with
// cgroupsPerQOS (its default) does: made before every sync that may start
// something (kubelet's EnsureExists in syncPod), removed after the kill,
// and swept by CollectGarbage once the sources are ready. In-place
// resizes follow kubelet's order when c also has a GrowPod method (as
// cgroups.Manager has): what grows is raised before the containers are
// synced, the exact values written after them. Give the Syncer
// the criconfig.Node the cgroups were made for, so sandboxes name them as
// their parent.
func WithPodCgroups(c PodCgroups) Option { return func(o *options) { o.cgroups = c } }

// WithProbes runs the pods' probes with m (give the Syncer
// podsync.WithProbes(m) too, so liveness and startup failures restart
// containers): the Workers feed it each pod's status, fold its results
// into the API status, and sync a pod when one of its results changes.
func WithProbes(m *probes.Manager) Option { return func(o *options) { o.probes = m } }

// WithContainerEvents turns the use of the runtime's container events on
// (the default, when the runtime streams them) or off (relists only).
func WithContainerEvents(on bool) Option { return func(o *options) { o.noEvents = !on } }

// WithRuntimeName sets the container ID prefix in API statuses
// ("containerd"; from the runtime's Version answer).
func WithRuntimeName(name string) Option { return func(o *options) { o.runtimeName = name } }

// WithHostIPs sets the node's IPs for API statuses (hostIP, and podIP of
// host-network pods).
func WithHostIPs(ips ...string) Option { return func(o *options) { o.hostIPs = ips } }

// WithClock sets the clock for timers and periods (tests use a fake one).
// Default: the syncer's (podsync.WithClock) when it has tickers (a
// k8s.io/utils/clock/testing FakeClock does), else the real one.
func WithClock(c clock.WithTicker) Option { return func(o *options) { o.clock = c } }

// WithRelistPeriod sets how often the node is relisted (0: never; only
// upserts, own work, back-off ends and runtime events wake pods).
func WithRelistPeriod(d time.Duration) Option { return func(o *options) { o.relist = d } }

// WithEventedRelistPeriod sets the relist period while the runtime's
// container events stream (the stream is open) and the node has not
// changed for QuietAfter: every change to a container comes with an
// event, which relists at once, so the relist every second is then only
// a safety net (kubelet's evented PLEG relists every 5 min). A relist
// that finds a change, an event, and the stream opening or ending go
// back to the relist period (WithRelistPeriod) for QuietAfter. Default
// DefaultEventedRelistPeriod; a period no longer than the relist period
// relists every relist period always, as kubelet's generic PLEG.
func WithEventedRelistPeriod(d time.Duration) Option { return func(o *options) { o.quietRelist = d } }

// WithResyncPeriod sets the period of kubelet's resync (0: none), for
// the pods whose last sync left something it could do (see the package
// doc: a steady pod is not resynced).
func WithResyncPeriod(d time.Duration) Option { return func(o *options) { o.resync = d } }

// WithErrorRetry sets the delay before a failed sync is retried.
func WithErrorRetry(d time.Duration) Option { return func(o *options) { o.errorRetry = d } }

// JitterFactor is kubelet's workerBackOffPeriodJitterFactor: a failed
// sync is retried after its delay plus up to half of it more.
const JitterFactor = 0.5

// Jitter is kubelet's wait.Jitter(d, JitterFactor): d plus a random part
// of up to JitterFactor times d.
func Jitter(d time.Duration) time.Duration {
	return d + time.Duration(rand.Float64()*JitterFactor*float64(d))
}

// WithJitter sets how the delay before a failed sync's retry is spread
// (default Jitter; func(d time.Duration) time.Duration { return d } for
// none, which retries a crash-looping container the moment its back-off
// ends, sooner than kubelet).
func WithJitter(f func(time.Duration) time.Duration) Option {
	return func(o *options) { o.jitter = f }
}

// WithGC sets the garbage collection period (0: none) and policy.
func WithGC(period time.Duration, policy podsync.GCPolicy) Option {
	return func(o *options) { o.gcPeriod, o.gcPolicy = period, policy }
}

// WithPullSecrets gives each sync its pod's pull secrets (the caller
// fetches them; podworker has no API client). An error fails the sync,
// which is retried.
func WithPullSecrets(f func(context.Context, *corev1.Pod) ([]corev1.Secret, error)) Option {
	return func(o *options) { o.secrets = f }
}

// WithOnSync adds f to the listeners called after each sync of a pod, and
// once more when a deleted pod is gone (PodState.Removed), from the pod's
// goroutine, in the order they were added (these first, then OnSync's):
// a listener must not block for long, nor call back into the Workers for
// that pod.
func WithOnSync(f func(types.UID, PodState)) Option {
	return func(o *options) { o.onSync = append(o.onSync, f) }
}

// WithLogger sets the logger (default: discard).
func WithLogger(l logr.Logger) Option { return func(o *options) { o.logger = l } }

// WithSyncTimeout bounds each sync, kill and status read (default 4 min,
// kubelet's runtime request timeout is 2 min per call; 0: none).
func WithSyncTimeout(d time.Duration) Option { return func(o *options) { o.syncDeadline = d } }

// Workers runs one loop per pod over a podsync.Syncer.
type Workers struct {
	syncer *podsync.Syncer
	rt     runtime.RuntimeService
	o      options
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu           sync.Mutex
	pods         map[types.UID]*worker
	closed       bool
	sourcesReady bool
	relistNow    chan struct{}
	gen          uint64 // orders relist starts and sync ends
	reasons      *apistatus.Reasons
	started      time.Time // kubelet's prober manager start: containers older keep their readiness

	// Idleness (WaitIdle), guarded by mu: idle is broadcast whenever
	// work ends; relistAt and gcAt are when the loops' timers are due
	// (zero: not armed), relistQueued a relist asked for by an event, and
	// relisting or collecting a pass under way.
	idle         *sync.Cond
	relistAt     time.Time
	relistQueued bool
	relisting    bool
	// streaming: the runtime's event stream is open; changed: when the
	// node last changed (a relist found a change, an event, the stream
	// opened or ended). Together they choose the relist period.
	streaming  bool
	changed    time.Time
	gcAt       time.Time
	collecting bool
	removing   int // removed pods whose listeners are being told
	busy       int // pods woken or syncing
	timed      int // pods with a retry or resync timer

	refresh refresher // volumes' refresh times (refresh.go), guarded by mu

	listenMu    sync.Mutex
	listeners   []listener // OnSync's; replaced, never changed in place
	listenerSeq uint64

	// admitMu runs admissions one at a time (WithAdmission); rejected,
	// guarded by mu, holds the pods admission rejected (admit.go).
	admitMu  sync.Mutex
	rejected map[types.UID]struct{}
}

type worker struct {
	uid  types.UID
	wake chan struct{} // capacity 1: wake-ups coalesce

	// Guarded by Workers.mu.
	pod         *corev1.Pod
	terminating bool
	grace       *int64
	relisted    *podsync.PodStatus // the latest relist's view
	relistedGen uint64             // when that relist started
	syncedGen   uint64             // when the last sync ended
	state       PodState
	// evicted writes an eviction's status into the final one (Evict).
	evicted func(*corev1.PodStatus)
	// woken: a wake-up waits in wake; syncing: the loop is handling one;
	// retryAt and resyncAt: when the loop's timers are due (zero: none).
	woken, syncing    bool
	retryAt, resyncAt time.Time
	// running: the pod's loop (goroutine) runs; it ends when the pod is
	// idle, and wakeLocked starts it again.
	running bool
	// admitted: admission took the pod (WithAdmission).
	admitted bool
}

// New starts Workers over the syncer and their background loops; the
// relist, garbage collection and container events use the syncer's
// runtime (podsync.Syncer.Runtime).
func New(syncer *podsync.Syncer, opts ...Option) *Workers {
	rt := syncer.Runtime()
	o := options{clock: clock.RealClock{}, relist: DefaultRelistPeriod, quietRelist: DefaultEventedRelistPeriod, resync: DefaultResyncPeriod,
		errorRetry: DefaultErrorRetry, gcPeriod: DefaultGCPeriod, gcPolicy: podsync.DefaultGCPolicy,
		logger: logr.Discard(), syncDeadline: 4 * time.Minute, jitter: Jitter}
	if c, ok := syncer.Clock().(clock.WithTicker); ok {
		o.clock = c // one clock for the syncer and its loops
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.jitter == nil {
		o.jitter = Jitter
	}
	if o.clock == nil {
		o.clock = clock.RealClock{}
	}
	ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), o.logger))
	w := &Workers{syncer: syncer, rt: rt, o: o, ctx: ctx, cancel: cancel,
		pods: map[types.UID]*worker{}, relistNow: make(chan struct{}, 1), reasons: apistatus.NewReasons(), started: o.clock.Now()}
	w.idle = sync.NewCond(&w.mu)
	if o.probes != nil {
		o.probes.AddListener(w.wake)
	}
	w.wg.Add(2)
	// Both loops have armed their timers when New returns: a fake clock
	// stepped at once finds them (and WaitIdle their due times).
	armed := make(chan struct{}, 2)
	go w.relistLoop(armed)
	go w.gcLoop(armed)
	<-armed
	<-armed
	if es, ok := rt.(runtime.ContainerEventStreamer); ok && !o.noEvents {
		w.wg.Add(1)
		go w.eventLoop(es)
	}
	return w
}

// Close stops every loop and waits for them. Pods keep running on the
// runtime.
func (w *Workers) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.idle.Broadcast()
	w.mu.Unlock()
	w.cancel()
	w.wg.Wait()
	return nil
}

// WaitIdle waits until the Workers have nothing to do: no pod sync, kill,
// relist or garbage collection under way or asked for, and no timer of
// theirs (relist, garbage collection, resync, retry) due on the clock
// and not yet handled. With a fake clock (WithClock), a test steps the
// clock and calls WaitIdle to let everything that step made due run to
// its end, with no sleeps. It returns ctx's error when ctx ends first,
// and ErrClosed once the Workers are closed. Work the runtime's event
// stream has not yet delivered is not known.
func (w *Workers) WaitIdle(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		w.mu.Lock()
		w.idle.Broadcast()
		w.mu.Unlock()
	})
	defer stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		switch {
		case w.closed:
			return ErrClosed
		case ctx.Err() != nil:
			return ctx.Err()
		case w.idleLocked():
			return nil
		}
		w.refresh.nudgeLocked(w.o.clock.Now())
		w.idle.Wait()
	}
}

func (w *Workers) idleLocked() bool {
	now := w.o.clock.Now()
	due := func(t time.Time) bool { return !t.IsZero() && !t.After(now) }
	if w.busy > 0 || w.relistQueued || w.relisting || due(w.relistAt) || w.collecting || due(w.gcAt) || w.removing > 0 || w.refresh.pendingLocked(now) {
		return false
	}
	if w.timed == 0 {
		return true
	}
	for _, p := range w.pods {
		if due(p.retryAt) || due(p.resyncAt) {
			return false
		}
	}
	return true
}

// setTimersLocked sets when p's retry and resync are due, counting the
// pods with a timer.
func (w *Workers) setTimersLocked(p *worker, retryAt, resyncAt time.Time) {
	was := !p.retryAt.IsZero() || !p.resyncAt.IsZero()
	p.retryAt, p.resyncAt = retryAt, resyncAt
	switch is := !retryAt.IsZero() || !resyncAt.IsZero(); {
	case was && !is:
		w.timed--
	case is && !was:
		w.timed++
	}
}

// setBusyLocked sets p's woken and syncing, counting busy pods.
func (w *Workers) setBusyLocked(p *worker, woken, syncing bool) {
	was, is := p.woken || p.syncing, woken || syncing
	p.woken, p.syncing = woken, syncing
	switch {
	case was && !is:
		w.busy--
		w.idle.Broadcast()
	case is && !was:
		w.busy++
	}
}

// wakeLocked wakes p's loop, starting it when it is not running (an
// idle pod's loop ends: see loop); w.mu is held.
func (w *Workers) wakeLocked(p *worker) {
	w.setBusyLocked(p, true, p.syncing)
	signal(p.wake)
	if !p.running && !w.closed {
		p.running = true
		w.wg.Add(1)
		go w.loop(p)
	}
}

// Upsert adds a pod or gives its loop a newer spec, and wakes it. A pod
// with a DeletionTimestamp is terminated as by Delete. A pod the API
// server would refuse (validation.Check) is refused here, with an error
// matching validation.ErrInvalidPod, before any sync: a new pod gets no
// loop, a running pod keeps the spec it had.
func (w *Workers) Upsert(pod *corev1.Pod) error {
	if pod == nil {
		return errors.New("podworker: nil pod")
	}
	if err := validation.Check(pod); err != nil {
		return err
	}
	pod = pod.DeepCopy()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	p := w.pods[pod.UID]
	if p == nil && w.wasRejectedLocked(pod.UID) {
		return nil // rejected at admission: never run (WithAdmission)
	}
	if p == nil && pod.DeletionTimestamp == nil && (pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded) {
		// A pod the API server has in a terminal phase is never run
		// again (kubelet's IsPodPhaseTerminal): an evicted pod, or a
		// finished one the Workers already removed.
		return nil
	}
	if p == nil {
		p = &worker{uid: pod.UID, wake: make(chan struct{}, 1)}
		w.pods[pod.UID] = p
	}
	if !p.terminating {
		p.pod = pod
	}
	if pod.DeletionTimestamp != nil {
		w.terminateLocked(p, nil)
	}
	p.state.Pod = p.pod
	w.wakeLocked(p)
	return nil
}

// Delete terminates a pod: killed with kubelet's effective grace period
// (the pod's DeletionGracePeriodSeconds, gracePeriod when set and
// smaller, else its terminationGracePeriodSeconds), then removed from the
// node. A pod the Workers never held is removed from the node too, if the
// runtime has it.
func (w *Workers) Delete(pod *corev1.Pod, gracePeriod *int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	p := w.pods[pod.UID]
	if p == nil && w.forgetRejectedLocked(pod.UID) {
		return nil // rejected at admission: nothing of it ever ran
	}
	if p == nil {
		p = &worker{uid: pod.UID, wake: make(chan struct{}, 1), pod: pod.DeepCopy()}
		p.state.Pod = p.pod
		w.pods[pod.UID] = p
	}
	w.terminateLocked(p, gracePeriod)
	w.wakeLocked(p)
	return nil
}

// Evict kills a pod the Workers hold, as kubelet's eviction manager has
// its pod worker kill it: with gracePeriod (which overrides the pod's),
// its final status changed by status (eviction.Eviction.Status fits:
// phase Failed, reason Evicted, the message), then removed from the node
// as Delete removes it. The API object stays: a Workers given it again in
// that terminal phase does not run it (Upsert). ErrUnknownPod when the
// Workers do not hold the pod.
func (w *Workers) Evict(pod *corev1.Pod, gracePeriod int64, status func(*corev1.PodStatus)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	p := w.pods[pod.UID]
	if p == nil {
		return fmt.Errorf("%w: %s/%s", ErrUnknownPod, pod.Namespace, pod.Name)
	}
	p.evicted = status
	if p.terminating && p.grace != nil && *p.grace < gracePeriod {
		gracePeriod = *p.grace
	}
	p.terminating, p.grace = true, &gracePeriod
	p.state.Terminating = true
	w.wakeLocked(p)
	return nil
}

// ErrUnknownPod: the Workers do not hold the pod.
var ErrUnknownPod = errors.New("podworker: unknown pod")

// terminateLocked marks p terminating; a grace period can only shrink,
// as kubelet's.
func (w *Workers) terminateLocked(p *worker, grace *int64) {
	g := podsync.EffectiveGracePeriod(p.pod, grace)
	if p.terminating && p.grace != nil && *p.grace <= g {
		return
	}
	p.terminating = true
	p.grace = &g
	p.state.Terminating = true
}

// Status returns what the Workers know of a pod.
func (w *Workers) Status(uid types.UID) (PodState, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.pods[uid]
	if p == nil {
		return PodState{}, false
	}
	return p.state, true
}

// Pods returns the UIDs of the pods held, terminating ones included.
func (w *Workers) Pods() []types.UID {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]types.UID, 0, len(w.pods))
	for uid := range w.pods {
		out = append(out, uid)
	}
	return out
}

// SourcesReady says the caller has upserted every pod it wants: from now
// on garbage collection also removes pods on the node the Workers do not
// hold (kubelet's allSourcesReady).
func (w *Workers) SourcesReady() {
	w.mu.Lock()
	w.sourcesReady = true
	w.mu.Unlock()
}

// CollectGarbage runs one garbage collection pass now.
func (w *Workers) CollectGarbage(ctx context.Context) error {
	w.mu.Lock()
	ready := w.sourcesReady
	w.mu.Unlock()
	var wanted func(types.UID) bool
	if ready {
		wanted = func(uid types.UID) bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			_, ok := w.pods[uid]
			return ok
		}
	}
	err := w.syncer.GarbageCollect(ctx, w.o.gcPolicy, wanted)
	if w.o.cgroups != nil && wanted != nil {
		// kubelet's cleanupOrphanedPodCgroups: the Workers remove a pod's
		// directories with its containers, so no volume holds one back.
		if _, cerr := w.o.cgroups.RemoveOrphans(ctx, wanted, nil); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}
	return err
}

// Relist relists the node now and wakes the pods that changed.
func (w *Workers) Relist(ctx context.Context) error {
	w.mu.Lock()
	w.gen++
	gen := w.gen
	w.mu.Unlock()
	statuses, changed, err := w.syncer.StatusCache().Relist(ctx)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(changed) > 0 {
		w.changed = w.o.clock.Now()
	}
	for uid, p := range w.pods {
		if gen > p.relistedGen {
			p.relisted, p.relistedGen = statuses[uid], gen
		}
	}
	for _, uid := range changed {
		if p := w.pods[uid]; p != nil {
			w.wakeLocked(p)
		}
	}
	return nil
}

// wake syncs a pod soon (a probe result changed).
func (w *Workers) wake(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.pods[uid]; p != nil {
		w.wakeLocked(p)
	}
}

// apiStatus builds the pod's API status from the runtime's view.
func (w *Workers) apiStatus(p *worker, pod *corev1.Pod, status *podsync.PodStatus, terminal bool) corev1.PodStatus {
	w.mu.Lock()
	var prev *corev1.PodStatus
	if !p.state.Synced.IsZero() {
		cp := p.state.APIStatus
		prev = &cp
	}
	w.mu.Unlock()
	in := apistatus.Input{Pod: pod, Status: status, Reasons: w.reasons.For(pod.UID), ResizeError: w.reasons.ResizeFor(pod.UID), Previous: prev,
		RuntimeName: w.o.runtimeName, HostIPs: w.o.hostIPs, Terminal: terminal, Now: w.o.clock.Now(), ProberStart: w.started}
	if w.o.probes != nil {
		in.Probes = w.o.probes
	}
	if w.o.cgroups != nil {
		// Kubelet reads a Running pod's pod-level resources from its
		// cgroup, and an ending pod's in its terminating sync, while the
		// cgroup still exists (apistatus decides which it uses); a cgroup
		// that cannot be read leaves them to the spec.
		ctx, cancel := w.syncContext()
		if cg, err := w.o.cgroups.PodCgroupConfig(ctx, pod); err == nil {
			in.PodCgroup = &cg
		}
		cancel()
	}
	s := apistatus.PodStatus(in)
	if w.o.probes != nil && !terminal {
		w.o.probes.Update(pod, s)
	}
	return s
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// armAt arms t (made when nil) to fire after d and returns when it is
// due.
func (w *Workers) armAt(t *clock.Timer, d time.Duration) time.Time {
	if *t == nil {
		*t = w.o.clock.NewTimer(d)
	} else {
		(*t).Reset(d)
	}
	return w.o.clock.Now().Add(d)
}

// relistLoop relists every relist period, the period counted from the end
// of the last relist (kubelet's wait.Until), and when an event asks.
func (w *Workers) relistLoop(armed chan<- struct{}) {
	defer w.wg.Done()
	var t clock.Timer
	var tick <-chan time.Time
	arm := func() { // w.mu held
		if w.o.relist <= 0 {
			return
		}
		if t != nil {
			t.Stop()
		}
		d := w.relistPeriodLocked()
		t = w.o.clock.NewTimer(d)
		tick = t.C()
		w.relistAt = w.o.clock.Now().Add(d)
	}
	w.mu.Lock()
	arm()
	w.mu.Unlock()
	armed <- struct{}{}
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-tick:
		case <-w.relistNow:
		}
		w.mu.Lock()
		w.relistQueued, w.relisting, w.relistAt = false, true, time.Time{}
		w.mu.Unlock()
		if err := w.Relist(w.ctx); err != nil && w.ctx.Err() == nil {
			w.o.logger.V(1).Info("Relist failed", "err", err)
		}
		w.mu.Lock()
		// The next relist one period from the end of this one (kubelet's
		// wait.Until): the relist period, or the evented one on a quiet
		// node.
		arm()
		w.relisting = false
		w.idle.Broadcast()
		w.mu.Unlock()
	}
}

func (w *Workers) gcLoop(armed chan<- struct{}) {
	defer w.wg.Done()
	if w.o.gcPeriod <= 0 {
		armed <- struct{}{}
		<-w.ctx.Done()
		return
	}
	var t clock.Timer
	w.mu.Lock()
	w.gcAt = w.armAt(&t, w.o.gcPeriod)
	w.mu.Unlock()
	armed <- struct{}{}
	defer t.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-t.C():
		}
		w.mu.Lock()
		w.gcAt, w.collecting = time.Time{}, true
		w.mu.Unlock()
		if err := w.CollectGarbage(w.ctx); err != nil && w.ctx.Err() == nil {
			w.o.logger.V(1).Info("Garbage collection failed", "err", err)
		}
		w.mu.Lock()
		w.gcAt = w.armAt(&t, w.o.gcPeriod)
		w.collecting = false
		w.idle.Broadcast()
		w.mu.Unlock()
	}
}

// relistPeriodLocked is the period until the next relist: the evented one
// while events stream and nothing changed for QuietAfter, else the relist
// period.
func (w *Workers) relistPeriodLocked() time.Duration {
	if w.o.quietRelist > w.o.relist && w.streaming && w.o.clock.Since(w.changed) >= QuietAfter {
		return w.o.quietRelist
	}
	return w.o.relist
}

// streamState notes the event stream opening or ending, both a change:
// what happened while no stream was open is known only from relists, and
// events before the stream took effect are lost.
func (w *Workers) streamState(open bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.streaming, w.changed = open, w.o.clock.Now()
}

// eventLoop turns the runtime's container events into immediate relists;
// when the stream ends it is opened again after the relist period.
func (w *Workers) eventLoop(es runtime.ContainerEventStreamer) {
	defer w.wg.Done()
	for w.ctx.Err() == nil {
		w.streamState(true)
		err := es.StreamContainerEvents(w.ctx, func(*runtimeapi.ContainerEventResponse) {
			w.mu.Lock()
			w.relistQueued = true
			w.changed = w.o.clock.Now()
			signal(w.relistNow)
			w.mu.Unlock()
		})
		w.streamState(false)
		if w.ctx.Err() != nil {
			return
		}
		if errors.Is(err, runtime.ErrUnimplemented) {
			w.o.logger.V(1).Info("The runtime streams no container events; relisting periodically")
			return
		}
		w.o.logger.V(1).Info("Container event stream ended; relisting periodically", "err", err)
		t := w.o.clock.NewTimer(max(w.o.relist, time.Second))
		select {
		case <-w.ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// loop is one pod's goroutine, while the pod has work or a timer: it
// ends when the pod is idle with no retry or resync armed (a steady
// pod), and wakeLocked starts it again. One loop per pod at a time: a
// loop ends only with w.mu held and no wake-up pending, and wakeLocked
// starts one only when none runs.
func (w *Workers) loop(p *worker) {
	defer w.wg.Done()
	var timer, resync clock.Timer
	var timerC, resyncC <-chan time.Time
	stopTimer := func() {
		if timer != nil {
			timer.Stop()
			timer, timerC = nil, nil
		}
		w.mu.Lock()
		w.setTimersLocked(p, time.Time{}, p.resyncAt)
		w.mu.Unlock()
	}
	// idleExit: the loop ended idle; p is then no longer this loop's to
	// touch (a new loop may run it), so the deferred clean-ups are skipped
	// (they would find nothing armed).
	idleExit := false
	defer func() {
		if !idleExit {
			stopTimer()
		}
	}()
	// setResync arms the resync one period from now, or disarms it.
	setResync := func(on bool) {
		if resync != nil {
			resync.Stop()
			resync, resyncC = nil, nil
		}
		var at time.Time
		if on {
			resync = w.o.clock.NewTimer(w.o.resync)
			resyncC = resync.C()
			at = w.o.clock.Now().Add(w.o.resync)
		}
		w.mu.Lock()
		w.setTimersLocked(p, p.retryAt, at)
		w.mu.Unlock()
	}
	defer func() {
		if !idleExit {
			setResync(false)
		}
	}()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-p.wake:
		case <-timerC:
			timer, timerC = nil, nil
		case <-resyncC:
			resync, resyncC = nil, nil
		}
		w.mu.Lock()
		w.setTimersLocked(p, time.Time{}, time.Time{})
		w.setBusyLocked(p, false, true)
		w.mu.Unlock()
		for {
			next, done := w.syncUntilQuiet(p)
			if done {
				return
			}
			stopTimer()
			if next.IsZero() {
				break
			}
			timer = w.o.clock.NewTimer(next.Sub(w.o.clock.Now()))
			timerC = timer.C()
			w.mu.Lock()
			w.setTimersLocked(p, next, p.resyncAt)
			w.mu.Unlock()
			// Checked after the timer exists: a clock that reached next
			// before that would not fire it (a fake clock's zero timer
			// waits for its next step), so such a time is synced now.
			if next.After(w.o.clock.Now()) || w.ctx.Err() != nil {
				break
			}
		}
		setResync(w.o.resync > 0 && !w.steady(p))
		w.mu.Lock()
		w.setBusyLocked(p, p.woken, false)
		if !p.woken && timer == nil && resync == nil {
			// Idle with nothing armed: the loop ends (a goroutine's stack
			// less per idle pod); the next wake-up starts it again, and
			// wakeLocked cannot run before running is false.
			w.setTimersLocked(p, time.Time{}, time.Time{})
			p.running, idleExit = false, true
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}

// steady reports whether p's last sync left nothing for a resync to do:
// it succeeded with nothing to start, kill or update, no retry is
// pending, the pod is not being killed, and nothing about the pod changes
// with time alone (an active deadline, a resize that could not be done).
// Every change that could give a resync work wakes the pod itself: a new
// spec (Upsert), the runtime (a relist or an event), a probe result, a
// back-off's end (NextSync). A steady pod is not resynced; kubelet's
// resync of it would compute the same actions (none) and status.
func (w *Workers) steady(p *worker) bool {
	w.mu.Lock()
	st, terminating := p.state, p.terminating
	w.mu.Unlock()
	if terminating || st.Err != nil || !st.NextSync.IsZero() || st.Result.Error() != nil || len(st.Result.Results) > 0 {
		return false
	}
	if st.Pod == nil || st.Pod.Spec.ActiveDeadlineSeconds != nil {
		return false
	}
	if st.Result.RemountError != nil || w.o.periodicRemount && hasRemountVolume(st.Pod) {
		return false // volumes to set up again (refresh.go)
	}
	return w.reasons.ResizeFor(p.uid) == nil
}

// syncUntilQuiet syncs p until a sync has nothing left to do, and returns
// when it should next be synced (zero: when woken), or done when the pod
// was removed.
func (w *Workers) syncUntilQuiet(p *worker) (next time.Time, done bool) {
	fresh := false // whether our own status read is newer than the relist's
	for i := 0; w.ctx.Err() == nil; i++ {
		w.mu.Lock()
		pod, terminating, grace := p.pod, p.terminating, p.grace
		var status *podsync.PodStatus
		if !fresh && p.relisted != nil && p.relistedGen > p.syncedGen {
			status = p.relisted // listed after our last sync ended
		}
		w.mu.Unlock()

		ctx, cancel := w.syncContext()
		var err error
		if status == nil {
			status, err = w.syncer.Status(ctx, pod)
		}
		if err != nil {
			cancel()
			retry := w.retryAfter(w.o.errorRetry)
			w.record(p, PodState{Status: nil, Err: err, APIStatus: p.lastAPIStatus(w), NextSync: retry})
			return retry, false
		}
		if !terminating && w.needsAdmission(p) {
			rejected, err := w.admitFirst(ctx, p, pod, status)
			if err != nil {
				cancel()
				retry := w.retryAfter(w.o.errorRetry)
				w.record(p, PodState{Status: status, Err: err, APIStatus: p.lastAPIStatus(w), NextSync: retry})
				return retry, false
			}
			if rejected {
				cancel()
				return time.Time{}, true // gone (admit.go)
			}
		}
		if terminating {
			r := w.syncer.KillPod(ctx, pod, status, grace)
			var final corev1.PodStatus
			if r.Error() == nil {
				// The final status, from what the kill left, before the
				// removal takes the instances away.
				if after, serr := w.syncer.Status(ctx, pod); serr == nil {
					status = after
				}
				final = w.apiStatus(p, pod, status, true)
				w.mu.Lock()
				evicted := p.evicted
				w.mu.Unlock()
				if evicted != nil {
					evicted(&final)
				}
				err = w.unmountVolumes(ctx, pod) // volumes.go
				if err == nil && w.o.cgroups != nil {
					err = w.o.cgroups.RemovePod(ctx, pod)
				}
				if err == nil {
					err = w.syncer.RemovePod(ctx, pod.UID)
				}
			}
			cancel()
			if r.Error() != nil || err != nil {
				retry := w.retryAfter(w.o.errorRetry)
				w.record(p, PodState{Status: status, Result: r, Err: err, APIStatus: w.apiStatus(p, pod, status, false), NextSync: retry})
				return retry, false
			}
			if w.o.probes != nil {
				w.o.probes.RemovePod(pod.UID)
			}
			w.reasons.Forget(pod.UID)
			w.remove(p, status, r, final)
			return time.Time{}, true
		}
		if w.pastActiveDeadline(p, pod) {
			cancel()
			continue // terminating: the next round kills the pod
		}
		var secrets []corev1.Secret
		if w.o.secrets != nil {
			secrets, err = w.o.secrets(ctx, pod)
			if err != nil {
				cancel()
				retry := w.retryAfter(w.o.errorRetry)
				w.record(p, PodState{Status: status, Err: err, APIStatus: w.apiStatus(p, pod, status, false), NextSync: retry})
				return retry, false
			}
		}
		if err := w.mountVolumes(ctx, pod); err != nil { // volumes.go
			cancel()
			retry := w.retryAfter(w.o.errorRetry)
			w.record(p, PodState{Status: status, Err: err, APIStatus: w.apiStatus(p, pod, status, false), NextSync: retry})
			return retry, false
		}
		if w.o.cgroups != nil {
			if err := w.o.cgroups.EnsurePod(ctx, pod); err != nil {
				cancel()
				retry := w.retryAfter(w.o.errorRetry)
				err = fmt.Errorf("failed to ensure that the pod: %v cgroups exist and are correctly applied: %w", pod.UID, err)
				w.record(p, PodState{Status: status, Err: err, APIStatus: w.apiStatus(p, pod, status, false), NextSync: retry})
				return retry, false
			}
		}
		var preResize error
		if g, ok := w.o.cgroups.(podCgroupGrower); ok {
			// Kubelet's resize order: the pod cgroup grows before the
			// containers (a container's larger CPU limit, resized or at
			// its start after the pod's resize, is refused on cgroup v1
			// above its pod cgroup's quota) and shrinks after them
			// (UpdatePod below). A failure here is the sync's, after it
			// ran.
			preResize = g.GrowPod(ctx, pod)
		}
		r := w.syncer.SyncPod(ctx, pod, status, secrets)
		if preResize != nil {
			r.SyncError = errors.Join(r.SyncError, fmt.Errorf("failed to grow the pod cgroup of %v: %w", pod.UID, preResize))
		}
		if w.o.cgroups != nil && r.Error() == nil {
			// After the containers, as kubelet shrinks a pod's cgroup after
			// them (what grows was raised before them, GrowPod).
			if err := w.o.cgroups.UpdatePod(ctx, pod); err != nil {
				r.SyncError = errors.Join(r.SyncError, fmt.Errorf("failed to update the pod cgroup of %v: %w", pod.UID, err))
			}
		}
		cancel()
		w.reasons.Update(pod.UID, r)
		st := PodState{Status: status, Result: r, APIStatus: w.apiStatus(p, pod, status, false)}
		if r.Error() != nil {
			st.NextSync = w.retryAt(r)
		}
		w.record(p, st)
		if r.Error() != nil {
			return w.activeDeadline(p, pod, &st.APIStatus, st.NextSync), false
		}
		if len(r.Results) == 0 || i >= 20 {
			w.setRefresh(p, r) // refresh.go
			return w.activeDeadline(p, pod, &st.APIStatus, time.Time{}), false
		}
		fresh = true
	}
	return time.Time{}, false
}

// retryAt is when a failed sync is retried, as kubelet's pod workers
// requeue it (completeWork): when a back-off ends (the earliest, if every
// failure is a back-off, else the earlier of that and the error retry),
// else after the error retry; the delay at most the resync period, then
// spread by the jitter (kubelet's 0 to 50% more).
func (w *Workers) retryAt(r podsync.Result) time.Time {
	d := w.o.errorRetry
	if nextSync, ok := r.NextSync(); ok {
		until := nextSync.Sub(w.o.clock.Now())
		if onlyBackOff(r) || until < d {
			d = until
		}
	}
	return w.retryAfter(d)
}

// retryAfter is now plus d, at least 0 and at most the resync period,
// spread by the jitter.
func (w *Workers) retryAfter(d time.Duration) time.Time {
	if d < 0 {
		d = 0
	}
	if w.o.resync > 0 && d > w.o.resync {
		d = w.o.resync
	}
	return w.o.clock.Now().Add(w.o.jitter(d))
}

// onlyBackOff: every failed step is a back-off, which ends on its own.
func onlyBackOff(r podsync.Result) bool {
	if r.SyncError != nil {
		return false
	}
	for _, sr := range r.Results {
		if sr.Err == nil {
			continue
		}
		if _, ok := podsync.MinBackOffExpiration(sr.Err); !ok {
			return false
		}
	}
	return true
}

func (w *Workers) syncContext() (context.Context, context.CancelFunc) {
	if w.o.syncDeadline > 0 {
		return context.WithTimeout(w.ctx, w.o.syncDeadline)
	}
	return context.WithCancel(w.ctx)
}

func (w *Workers) record(p *worker, st PodState) {
	w.mu.Lock()
	st.Pod, st.Terminating = p.pod, p.terminating
	st.Synced = w.o.clock.Now()
	w.gen++
	p.syncedGen = w.gen
	if st.Status == nil {
		st.Status = p.state.Status
	}
	p.state = st
	w.mu.Unlock()
	w.notify(p.uid, st)
}

// OnSync adds a listener as WithOnSync does, after construction: it hears
// the syncs that end after the call. remove takes it away (a sync under
// way may still call it once).
func (w *Workers) OnSync(f func(types.UID, PodState)) (remove func()) {
	w.listenMu.Lock()
	defer w.listenMu.Unlock()
	w.listenerSeq++
	id := w.listenerSeq
	w.listeners = append(w.listeners, listener{id: id, f: f})
	return func() {
		w.listenMu.Lock()
		defer w.listenMu.Unlock()
		for i, l := range w.listeners {
			if l.id == id {
				w.listeners = append(w.listeners[:i:i], w.listeners[i+1:]...)
				return
			}
		}
	}
}

type listener struct {
	id uint64
	f  func(types.UID, PodState)
}

// notify calls the listeners, outside every lock of the Workers.
func (w *Workers) notify(uid types.UID, st PodState) {
	for _, f := range w.o.onSync {
		f(uid, st)
	}
	w.listenMu.Lock()
	ls := w.listeners
	w.listenMu.Unlock()
	for _, l := range ls {
		l.f(uid, st)
	}
}

func (p *worker) lastAPIStatus(w *Workers) corev1.PodStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	return p.state.APIStatus
}

func (w *Workers) remove(p *worker, status *podsync.PodStatus, r podsync.Result, final corev1.PodStatus) {
	w.mu.Lock()
	st := PodState{Pod: p.pod, Status: status, Result: r, Synced: w.o.clock.Now(), Terminating: true, Removed: true, APIStatus: final}
	if w.pods[p.uid] == p {
		delete(w.pods, p.uid)
		w.setBusyLocked(p, false, false)
	}
	w.removing++
	w.mu.Unlock()
	w.notify(p.uid, st)
	w.mu.Lock()
	w.removing--
	w.idle.Broadcast()
	w.mu.Unlock()
}
