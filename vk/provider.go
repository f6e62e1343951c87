package vk

import (
	"context"
	"errors"
	"sync"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/validation"
)

// The provider is what virtual-kubelet's pod controller drives.
var (
	_ node.PodLifecycleHandler = (*Provider)(nil)
	_ node.PodNotifier         = (*Provider)(nil)
)

// Option configures a Provider.
type Option func(*options)

type options struct {
	workerOpts []podworker.Option
	onSync     func(types.UID, podworker.PodState)
}

// WithWorkerOptions passes options to the podworker.Workers the provider
// runs (probes, pull secrets, host IPs, runtime name, pod cgroups, clock,
// relist period, ...; a podworker.WithOnSync given here is one more
// listener beside the provider's).
func WithWorkerOptions(opts ...podworker.Option) Option {
	return func(o *options) { o.workerOpts = append(o.workerOpts, opts...) }
}

// WithOnSync is called after the provider saw each sync of a pod, as
// podworker.WithOnSync (from the pod's goroutine: it must not block for
// long nor call back into the provider for that pod), for callers that
// also feed, say, apiobjects.PullSecrets.AfterSync.
func WithOnSync(f func(types.UID, podworker.PodState)) Option {
	return func(o *options) { o.onSync = f }
}

// Provider is a virtual-kubelet provider (node.PodLifecycleHandler and
// node.PodNotifier) over a podworker.Workers. See the package doc.
type Provider struct {
	workers *podworker.Workers
	onSync  func(types.UID, podworker.PodState)

	mu     sync.Mutex
	pods   map[types.UID]*entry      // every pod held, terminating ones too
	keys   map[string]types.UID      // namespace/name -> the pod VK sees under it (not terminating)
	notify func(*corev1.Pod)         // from NotifyPods; nil before
	ctx    context.Context           // NotifyPods' context: senders stop with it
	queued map[types.UID]*corev1.Pod // newest pod+status not yet handed to notify
	busy   map[types.UID]bool        // a sender goroutine runs for the pod
	sent   map[types.UID]*corev1.PodStatus
	closed bool
	wg     sync.WaitGroup
}

type entry struct {
	pod         *corev1.Pod      // as VK gave it (status: the API server's at that time)
	status      corev1.PodStatus // the newest status computed, merged (see mergeStatus)
	synced      bool             // status holds a computed status
	terminating bool
}

// New returns a Provider that runs pods with syncer (on the syncer's
// runtime), through a podworker.Workers it starts. Close stops it.
func New(syncer *podsync.Syncer, opts ...Option) *Provider {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	p := &Provider{
		onSync: o.onSync,
		pods:   map[types.UID]*entry{},
		keys:   map[string]types.UID{},
		queued: map[types.UID]*corev1.Pod{},
		busy:   map[types.UID]bool{},
		sent:   map[types.UID]*corev1.PodStatus{},
	}
	wopts := append(append([]podworker.Option(nil), o.workerOpts...), podworker.WithOnSync(p.synced))
	p.workers = podworker.New(syncer, wopts...)
	return p
}

// Workers returns the podworker.Workers the provider runs pods with (for
// Evict, CollectGarbage, Relist, ...).
func (p *Provider) Workers() *podworker.Workers { return p.workers }

// SourcesReady says every pod bound to the node has been created in the
// provider (call it once VK's pod controller is Ready): from then on
// garbage collection also removes pods the provider does not hold from the
// runtime, such as those of an earlier process that the API server no
// longer has (podworker.Workers.SourcesReady). Do not call it on a runtime
// shared with other node agents.
func (p *Provider) SourcesReady() { p.workers.SourcesReady() }

// Close stops the pod workers and the notifications, and waits for them.
// Pods keep running on the runtime, as when a kubelet stops: a new
// Provider given the same pods (VK calls CreatePod for each) carries on.
func (p *Provider) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.workers.Close()
	p.wg.Wait()
	return err
}

func key(namespace, name string) string { return namespace + "/" + name }

// CreatePod runs the pod (podworker.Workers.Upsert). A pod the API server
// would refuse is refused with an errdefs.InvalidInput error. A pod held
// under the same namespace/name with another UID (deleted and made again
// while VK did not tell the provider) is deleted first.
func (p *Provider) CreatePod(ctx context.Context, pod *corev1.Pod) error {
	return p.upsert(pod)
}

// UpdatePod gives the pod's newer spec to its worker (image changes,
// activeDeadlineSeconds, in-place resize, ...), as CreatePod.
func (p *Provider) UpdatePod(ctx context.Context, pod *corev1.Pod) error {
	return p.upsert(pod)
}

func (p *Provider) upsert(pod *corev1.Pod) error {
	if pod.DeletionTimestamp != nil {
		return p.DeletePod(context.Background(), pod)
	}
	pod = pod.DeepCopy()
	k := key(pod.Namespace, pod.Name)
	p.mu.Lock()
	var replaced *corev1.Pod
	if uid, ok := p.keys[k]; ok && uid != pod.UID {
		if e := p.pods[uid]; e != nil && !e.terminating {
			e.terminating = true
			replaced = e.pod
		}
	}
	p.mu.Unlock()
	if replaced != nil {
		if err := p.workers.Delete(replaced, nil); err != nil {
			return err
		}
	}
	// In the index before the worker can sync it: its first sync's
	// status must find it.
	p.mu.Lock()
	e, existed := p.pods[pod.UID]
	if !existed {
		e = &entry{pod: pod}
		p.pods[pod.UID] = e
	}
	p.mu.Unlock()
	if err := p.workers.Upsert(pod); err != nil {
		if !existed {
			p.mu.Lock()
			if p.pods[pod.UID] == e && !e.synced {
				delete(p.pods, pod.UID)
			}
			p.mu.Unlock()
		}
		if errors.Is(err, validation.ErrInvalidPod) {
			return errdefs.AsInvalidInput(err)
		}
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if existed {
		e.pod = pod // a running pod refused keeps the spec it had (above)
	}
	if !e.terminating {
		p.keys[k] = pod.UID
	}
	return nil
}

// DeletePod terminates the pod (podworker.Workers.Delete: killed with
// kubelet's effective grace period, the pod's DeletionGracePeriodSeconds
// when set, then every container, sandbox and directory of it removed) and
// returns without waiting. Once nothing of it is left on the runtime, the
// provider notifies its final, terminal status (phase Succeeded or Failed,
// every container terminated) through NotifyPods and forgets it. From the
// call on, GetPod, GetPodStatus and GetPods no longer show it. A pod the
// provider does not hold is errdefs.NotFound (after it is removed from the
// runtime if the runtime has it); a second call while it is ending is nil.
func (p *Provider) DeletePod(ctx context.Context, pod *corev1.Pod) error {
	k := key(pod.Namespace, pod.Name)
	p.mu.Lock()
	e := p.pods[pod.UID]
	if e == nil {
		p.mu.Unlock()
		// Never held (an earlier process's, or VK's pod from the API
		// after a restart): make sure the runtime does not run it either.
		if err := p.workers.Delete(pod, nil); err != nil && !errors.Is(err, podworker.ErrUnknownPod) {
			return err
		}
		return errdefs.NotFoundf("pod %s (UID %s) is not known to the provider", k, pod.UID)
	}
	e.terminating = true
	if p.keys[k] == pod.UID {
		delete(p.keys, k)
	}
	held := e.pod.DeepCopy()
	if pod.DeletionTimestamp != nil {
		held.DeletionTimestamp, held.DeletionGracePeriodSeconds = pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds
	}
	p.mu.Unlock()
	return p.workers.Delete(held, nil)
}

// GetPod returns the pod held under namespace/name, with its newest status;
// errdefs.NotFound when there is none (or it is being deleted).
func (p *Provider) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.lookup(namespace, name)
	if e == nil {
		return nil, errdefs.NotFoundf("pod %s/%s is not known to the provider", namespace, name)
	}
	return p.withStatus(e), nil
}

// GetPodStatus returns the newest status of the pod held under
// namespace/name; errdefs.NotFound as GetPod.
func (p *Provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods returns every pod held and not being deleted, with its newest
// status.
func (p *Provider) GetPods(ctx context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(p.keys))
	for _, uid := range p.keys {
		if e := p.pods[uid]; e != nil {
			out = append(out, p.withStatus(e))
		}
	}
	return out, nil
}

func (p *Provider) lookup(namespace, name string) *entry {
	uid, ok := p.keys[key(namespace, name)]
	if !ok {
		return nil
	}
	return p.pods[uid]
}

// withStatus: a copy of the pod with its newest status (under p.mu).
// Before the pod's first sync, the status VK gave it, Pending.
func (p *Provider) withStatus(e *entry) *corev1.Pod {
	pod := e.pod.DeepCopy()
	if e.synced {
		e.status.DeepCopyInto(&pod.Status)
	} else if pod.Status.Phase == "" {
		pod.Status.Phase = corev1.PodPending
	}
	return pod
}

// NotifyPods registers the function that receives each new status of a
// pod (the pod as given to CreatePod or UpdatePod, its status replaced).
// It returns at once; f is called from a goroutine per pod, newest status
// only, never twice at once for one pod, until ctx ends or Close.
func (p *Provider) NotifyPods(ctx context.Context, f func(*corev1.Pod)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify, p.ctx = f, ctx
	for uid := range p.queued {
		p.startSender(uid)
	}
}

// synced is the Workers' OnSync: record the pod's status and queue it for
// NotifyPods when it changed.
func (p *Provider) synced(uid types.UID, st podworker.PodState) {
	p.mu.Lock()
	e := p.pods[uid]
	if e != nil && (st.Status != nil || st.Removed) {
		e.status = mergeStatus(e.pod.Status, st.APIStatus)
		if st.Removed {
			e.status = terminal(e.status)
		}
		e.synced = true
		if last := p.sent[uid]; last == nil || !apiequality.Semantic.DeepEqual(*last, e.status) {
			pod := e.pod.DeepCopy()
			e.status.DeepCopyInto(&pod.Status)
			p.queued[uid] = pod
			p.startSender(uid)
		}
	}
	if e != nil && st.Removed {
		delete(p.pods, uid)
		if k := key(e.pod.Namespace, e.pod.Name); p.keys[k] == uid {
			delete(p.keys, k)
		}
	}
	p.mu.Unlock()
	if p.onSync != nil {
		p.onSync(uid, st)
	}
}

// startSender starts the pod's sender unless one runs (under p.mu).
func (p *Provider) startSender(uid types.UID) {
	if p.notify == nil || p.busy[uid] || p.closed {
		return
	}
	p.busy[uid] = true
	p.wg.Add(1)
	go p.send(uid)
}

func (p *Provider) send(uid types.UID) {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		pod, ok := p.queued[uid]
		if !ok || p.closed || p.ctx.Err() != nil {
			delete(p.busy, uid)
			if _, held := p.pods[uid]; !held {
				// Forgotten: its last status is out (or never will be).
				delete(p.sent, uid)
				delete(p.queued, uid)
			}
			p.mu.Unlock()
			return
		}
		delete(p.queued, uid)
		p.sent[uid] = pod.Status.DeepCopy()
		f := p.notify
		p.mu.Unlock()
		f(pod)
	}
}
