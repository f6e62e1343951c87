// Package podstep syncs one pod one step at a time and answers each step
// with the corev1.PodStatus kubelet v1.37.2 would report: podsync's
// Status, SyncPod and KillPod with apistatus's translation, the start
// failures (apistatus.Reasons) and the previous status carried from one
// step to the next. It is for unit tests of pod logic and for tools that
// drive a pod by hand; a node agent runs pods with podworker, which does
// the same per sync in its loops.
//
//	p, err := podstep.New(syncer, pod)
//	for {
//		status, err := p.Sync(ctx) // err: this sync's failure; status holds its reason
//		if apistatus.Settled(p.Pod(), status) { break }
//	}
//
// The predicates that end such loops are apistatus.Running, Ready,
// Settled and Terminal.
package podstep

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/defaults"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/validation"
)

// ErrRemoved: the pod was removed (Remove); make a new Pod to start it
// again.
var ErrRemoved = errors.New("podstep: pod removed")

// Option configures a Pod.
type Option func(*options)

type options struct {
	secrets     []corev1.Secret
	hostIPs     []string
	runtimeName string
	probes      apistatus.Probes
}

// WithPullSecrets gives the pod's image pull secrets, as kubelet would
// fetch them for its imagePullSecrets.
func WithPullSecrets(secrets ...corev1.Secret) Option {
	return func(o *options) { o.secrets = secrets }
}

// WithHostIPs gives the node's IPs for status.hostIP(s), primary first.
func WithHostIPs(ips ...string) Option { return func(o *options) { o.hostIPs = ips } }

// WithRuntimeName sets the prefix of container IDs ("containerd://…";
// default "containerd").
func WithRuntimeName(name string) Option { return func(o *options) { o.runtimeName = name } }

// WithProbes gives readiness and startup results (a probes.Manager, or a
// test's own); default: no probe has run.
func WithProbes(p apistatus.Probes) Option { return func(o *options) { o.probes = p } }

// Pod is one pod driven step by step over a podsync.Syncer. Its methods
// are safe for concurrent use; they run one at a time.
type Pod struct {
	syncer  *podsync.Syncer
	o       options
	reasons *apistatus.Reasons

	mu      sync.Mutex
	pod     *corev1.Pod
	prev    *corev1.PodStatus
	removed bool
}

// New returns a Pod for a copy of pod, defaulted as the API server does
// (defaults.Pod; an API server's pod is unchanged by it) and checked as it
// checks pods (validation.Check: errors match validation.ErrInvalidPod).
// Nothing runs until Sync.
func New(syncer *podsync.Syncer, pod *corev1.Pod, opts ...Option) (*Pod, error) {
	pod = pod.DeepCopy()
	defaults.Pod(pod)
	if err := validation.Check(pod); err != nil {
		return nil, err
	}
	p := &Pod{syncer: syncer, pod: pod, reasons: apistatus.NewReasons()}
	for _, opt := range opts {
		opt(&p.o)
	}
	return p, nil
}

// Pod returns the pod as synced: defaulted, with the status of the last
// step. The caller must not change it.
func (p *Pod) Pod() *corev1.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pod
}

// Update replaces the pod's spec and metadata for the next step (an
// in-place resize, a new annotation); the UID must stay.
func (p *Pod) Update(pod *corev1.Pod) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pod.UID != p.pod.UID {
		return fmt.Errorf("podstep: update of pod %s with UID %q: %w", p.pod.UID, pod.UID, validation.ErrInvalidPod)
	}
	pod = pod.DeepCopy()
	defaults.Pod(pod)
	if err := validation.Check(pod); err != nil {
		return err
	}
	pod.Status = p.pod.Status
	p.pod = pod
	return nil
}

// Sync reads the pod's state from the runtime, does what kubelet's
// SyncPod would do next (podsync.Syncer.SyncPod), reads the state again
// and returns the pod's API status. err is the sync's failure (errors.Is
// images.ErrImagePullBackOff, podsync.ErrCrashLoopBackOff, ...), whose
// reason the status already shows; the status is valid with it unless the
// runtime could not be read (then it is the previous one).
func (p *Pod) Sync(ctx context.Context) (corev1.PodStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.removed {
		return p.pod.Status, ErrRemoved
	}
	status, err := p.syncer.Status(ctx, p.pod)
	if err != nil {
		return p.pod.Status, err
	}
	r := p.syncer.SyncPod(ctx, p.pod, status, p.o.secrets)
	p.reasons.Update(p.pod.UID, r)
	after, err := p.syncer.Status(ctx, p.pod)
	if err != nil {
		return p.pod.Status, err
	}
	return p.record(after, false), r.Error()
}

// Status returns the pod's API status from the runtime's state now,
// without syncing.
func (p *Pod) Status(ctx context.Context) (corev1.PodStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	status, err := p.syncer.Status(ctx, p.pod)
	if err != nil {
		return p.pod.Status, err
	}
	return p.record(status, p.removed), nil
}

// Kill stops the pod's containers and sandbox as kubelet does when a pod
// is deleted (podsync.Syncer.KillPod: pre-stop hooks, grace periods,
// sidecars last; gracePeriod overrides the pod's, nil keeps it) and
// returns its final status, with kubelet's terminal phase. The pod's
// containers and files stay on the node until Remove.
func (p *Pod) Kill(ctx context.Context, gracePeriod *int64) (corev1.PodStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	status, err := p.syncer.Status(ctx, p.pod)
	if err != nil {
		return p.pod.Status, err
	}
	if err := p.syncer.KillPod(ctx, p.pod, status, gracePeriod).Error(); err != nil {
		return p.record(status, false), err
	}
	after, err := p.syncer.Status(ctx, p.pod)
	if err != nil {
		return p.pod.Status, err
	}
	return p.record(after, true), nil
}

// Remove kills what still runs of the pod and removes everything it left
// on the node (podsync.Syncer.RemovePod: containers, sandboxes, logs, the
// pod directory). The Pod cannot sync again.
func (p *Pod) Remove(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.syncer.RemovePod(ctx, p.pod.UID); err != nil {
		return err
	}
	p.reasons.Forget(p.pod.UID)
	p.removed = true
	return nil
}

// record translates the runtime's view and keeps the result as the
// previous status and the pod's.
func (p *Pod) record(status *podsync.PodStatus, terminal bool) corev1.PodStatus {
	in := apistatus.Input{Pod: p.pod, Status: status, Reasons: p.reasons.For(p.pod.UID),
		ResizeError: p.reasons.ResizeFor(p.pod.UID), Previous: p.prev, RuntimeName: p.o.runtimeName,
		HostIPs: p.o.hostIPs, Terminal: terminal, Now: p.syncer.Clock().Now()}
	if p.o.probes != nil {
		in.Probes = p.o.probes
	}
	s := apistatus.PodStatus(in)
	p.prev = s.DeepCopy()
	p.pod = p.pod.DeepCopy()
	p.pod.Status = *s.DeepCopy()
	return s
}
