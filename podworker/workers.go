package podworker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/podsync"
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
	// DefaultRelistGap is the shortest time between the end of a relist
	// and the start of one asked for by an event or a pod's sync (see
	// WithRelistGap).
	DefaultRelistGap = 100 * time.Millisecond
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
	// lastRelist is the latest successful relist's pods and lastRelistGen
	// its start: a new pod the relist did not see starts from it.
	lastRelist    map[types.UID]*podsync.PodStatus
	lastRelistGen uint64
	reasons       *apistatus.Reasons
	started       time.Time // kubelet's prober manager start: containers older keep their readiness

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
	relisted    *podsync.PodStatus // the latest relist's view (nil: no instances)
	relistedGen uint64             // when that relist started (0: none yet)
	syncedGen   uint64             // when the last sync ended
	// awaiting: the loop waits for a relist newer than its last sync
	// (loop.go); chained counts such waits since the pod was last quiet.
	awaiting bool
	chained  int
	// eventSeen: a runtime event about the pod came while it synced
	// (relist.go's eventLoop); the loop relists once the sync ends.
	eventSeen bool
	state     PodState
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
	o := options{clock: clock.RealClock{}, relist: DefaultRelistPeriod, quietRelist: DefaultEventedRelistPeriod, relistGap: DefaultRelistGap, resync: DefaultResyncPeriod,
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
		if w.lastRelist != nil && w.lastRelist[pod.UID] == nil {
			// The runtime had nothing of the pod at the last relist, and
			// only its own loop creates instances of it: its first sync
			// starts from that (kubelet's first sync reads its PLEG
			// cache, not the runtime), saving two list calls per pod.
			p.relistedGen = w.lastRelistGen
		}
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
