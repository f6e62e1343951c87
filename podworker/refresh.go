package podworker

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/podsync"
)

// Kinds of the objects References names.
const (
	KindSecret    = "Secret"
	KindConfigMap = "ConfigMap"
)

// ObjectRef names an API object a pod refers to.
type ObjectRef struct {
	Kind      string // KindSecret or KindConfigMap
	Namespace string
	Name      string
}

// References lists the Secrets and ConfigMaps the pod refers to, each
// once, sorted: in its volumes (secret and configMap volumes, projected
// secret and configMap sources), whose content a sync writes again, and
// in its containers' env and envFrom (init, app and ephemeral
// containers), with which a container waiting for a missing object
// starts. Image pull secrets are not listed.
func References(pod *corev1.Pod) []ObjectRef {
	seen := map[ObjectRef]bool{}
	add := func(kind, name string) {
		if name != "" {
			seen[ObjectRef{Kind: kind, Namespace: pod.Namespace, Name: name}] = true
		}
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.Secret != nil:
			add(KindSecret, v.Secret.SecretName)
		case v.ConfigMap != nil:
			add(KindConfigMap, v.ConfigMap.Name)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					add(KindSecret, s.Secret.Name)
				}
				if s.ConfigMap != nil {
					add(KindConfigMap, s.ConfigMap.Name)
				}
			}
		}
	}
	env := func(c *corev1.Container) {
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				add(KindSecret, e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil {
				add(KindConfigMap, e.ConfigMapRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				add(KindSecret, r.Name)
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				add(KindConfigMap, r.Name)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		env(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		env(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		c := corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		env(&c)
	}
	out := make([]ObjectRef, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b ObjectRef) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// WithPeriodicRemount resyncs every pod with a Secret, ConfigMap,
// downward API or projected volume once per resync period even when it
// is steady, as kubelet does, so that its volumes follow their objects
// within a resync period for a caller that does not report their changes
// (ResyncReferencing). Off by default: such a pod is synced when woken.
func WithPeriodicRemount() Option { return func(o *options) { o.periodicRemount = true } }

// hasRemountVolume: the pod has a volume kubelet sets up again at each
// sync (its plugin's RequiresRemount).
func hasRemountVolume(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil || v.ConfigMap != nil || v.DownwardAPI != nil || v.Projected != nil {
			return true
		}
	}
	return false
}

// Resync syncs a pod the Workers hold once more, steady or not, as
// kubelet's periodic resync would: its volumes are set up again
// (podsync.VolumeRemounter). It reports whether the Workers hold the pod.
func (w *Workers) Resync(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.pods[uid]
	if p == nil {
		return false
	}
	w.wakeLocked(p)
	return true
}

// ResyncReferencing syncs once more every pod held, and not being
// killed, that refers to ref (References): a caller that watches Secrets
// and ConfigMaps calls it when one changes, is created or is deleted, so
// that the running pods' volumes follow it (see the package doc). It
// returns how many pods it woke.
func (w *Workers) ResyncReferencing(ref ObjectRef) int {
	return w.ResyncMatching(func(pod *corev1.Pod) bool {
		return pod.Namespace == ref.Namespace && slices.Contains(References(pod), ref)
	})
}

// ResyncMatching syncs once more every pod held, and not being killed,
// for which match is true (called with w's lock held: it must not call
// the Workers), and returns how many: for objects References does not
// name, such as the ClusterTrustBundles of a projection.
func (w *Workers) ResyncMatching(match func(*corev1.Pod) bool) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, p := range w.pods {
		if p.terminating || p.pod == nil || !match(p.pod) {
			continue
		}
		w.wakeLocked(p)
		n++
	}
	return n
}

// refresher wakes the pods whose volumes change with time alone
// (podsync.Result.RefreshAt: a token's renewal) when they do, from one
// goroutine with one timer for all of them, so that a steady pod waiting
// for its renewal holds no goroutine of its own. Guarded by Workers.mu.
type refresher struct {
	at       map[types.UID]time.Time
	earliest time.Time // the earliest of at (zero: none)
	armedFor time.Time // when refreshLoop's timer fires (zero: none)
	started  bool      // refreshLoop runs
	kick     chan struct{}
}

// pendingLocked: a refresh is due, or refreshLoop has yet to arm its
// timer for the earliest (so WaitIdle waits for it: a fake clock stepped
// before the timer exists would not fire it in time).
func (rf *refresher) pendingLocked(now time.Time) bool {
	return !rf.earliest.IsZero() && (!rf.earliest.After(now) || !rf.armedFor.Equal(rf.earliest))
}

// nudgeLocked wakes refreshLoop when a refresh is due and its timer has
// not fired: the loop computes a timer's duration from the clock and then
// creates it, and a fake clock stepped between the two (a test that had
// seen the Workers idle) sets the timer one step late, past the time
// WaitIdle waits for.
func (rf *refresher) nudgeLocked(now time.Time) {
	if rf.kick != nil && !rf.earliest.IsZero() && !rf.earliest.After(now) {
		signal(rf.kick)
	}
}

// setRefresh notes when p's volumes are next refreshed after a sync that
// succeeded (r.RefreshAt; zero: never). A time already past (the renewal
// failed and the old token is still served) is retried after the resync
// period, as kubelet's next periodic sync would retry it.
func (w *Workers) setRefresh(p *worker, r podsync.Result) {
	at := r.RefreshAt
	now := w.o.clock.Now()
	if !at.IsZero() && !at.After(now) {
		at = time.Time{}
		if w.o.resync > 0 {
			at = now.Add(w.o.resync)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	rf := &w.refresh
	if at.IsZero() {
		if _, ok := rf.at[p.uid]; ok {
			delete(rf.at, p.uid)
			rf.earliest = rf.earliestLocked()
			// refreshLoop arms for the new earliest (WaitIdle waits for it).
			signal(rf.kick)
		}
		return
	}
	if w.closed {
		return
	}
	if rf.at == nil {
		rf.at, rf.kick = map[types.UID]time.Time{}, make(chan struct{}, 1)
	}
	rf.at[p.uid] = at
	rf.earliest = rf.earliestLocked()
	if !rf.started {
		rf.started = true
		w.wg.Add(1)
		go w.refreshLoop()
	}
	signal(rf.kick)
}

func (rf *refresher) earliestLocked() time.Time {
	var e time.Time
	for _, at := range rf.at {
		if e.IsZero() || at.Before(e) {
			e = at
		}
	}
	return e
}

// refreshLoop wakes each pod whose refresh time has come, and sleeps
// until the earliest one left.
func (w *Workers) refreshLoop() {
	defer w.wg.Done()
	for {
		w.mu.Lock()
		rf := &w.refresh
		now := w.o.clock.Now()
		for uid, at := range rf.at {
			p := w.pods[uid]
			if p == nil {
				delete(rf.at, uid) // removed
				continue
			}
			if !at.After(now) {
				delete(rf.at, uid)
				w.wakeLocked(p)
			}
		}
		rf.earliest = rf.earliestLocked()
		next := rf.earliest
		rf.armedFor = time.Time{}
		w.mu.Unlock()
		var t clock.Timer
		var fire <-chan time.Time
		if !next.IsZero() {
			d := next.Sub(w.o.clock.Now())
			if d <= 0 {
				continue
			}
			t = w.o.clock.NewTimer(d)
			fire = t.C()
		}
		w.mu.Lock()
		if !rf.earliest.Equal(next) {
			// Changed meanwhile (setRefresh): arm again.
			w.mu.Unlock()
			if t != nil {
				t.Stop()
			}
			continue
		}
		rf.armedFor = next
		w.idle.Broadcast()
		w.mu.Unlock()
		select {
		case <-w.ctx.Done():
			if t != nil {
				t.Stop()
			}
			return
		case <-rf.kick:
		case <-fire:
		}
		if t != nil {
			t.Stop()
		}
	}
}
