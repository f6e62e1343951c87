package podworker

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/admission"
	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/podsync"
)

// AdmitFunc decides whether the node takes a pod new to it: nil admits
// it; an error rejects it. admitted are the pods already admitted and
// still active (not in a terminal phase, or being killed), the pod itself
// not among them. admission.Admitter's Admit fits.
type AdmitFunc func(ctx context.Context, pod *corev1.Pod, admitted []*corev1.Pod) error

// WithAdmission runs kubelet's pod admission (admission.Admitter.Admit,
// with eviction's handler first) for each pod new to the node, before its
// first sync: kubelet's HandlePodAdditions. Admissions run one at a time,
// each seeing every pod admitted before it. A pod the runtime already has
// (an earlier agent process admitted and started it) is admitted without
// asking f. A rejected pod never reaches the runtime: it gets kubelet's
// rejectPod status (RejectedStatus: phase Failed, the rejection's reason
// and "Pod was rejected: " + its message), heard once by the listeners as
// a removed pod (PodState.Removed, with PodState.Err the rejection), and
// the Workers remember it: later upserts of it are ignored until it is
// deleted (Delete).
func WithAdmission(f AdmitFunc) Option { return func(o *options) { o.admit = f } }

// RejectedStatus is the status kubelet's rejectPod writes for a pod
// refused by err: phase Failed, err's reason (Reason(), as
// admission.Rejection and eviction.AdmitError have; else
// UnexpectedAdmissionError), "Pod was rejected: " and err's message, the
// pod's QOS class, and its start time (now if it had none, as kubelet's
// status manager sets it).
func RejectedStatus(pod *corev1.Pod, err error, now metav1.Time) corev1.PodStatus {
	reason, message := admission.ReasonUnexpectedAdmissionError, err.Error()
	var rm interface {
		Reason() string
		Message() string
	}
	if errors.As(err, &rm) {
		reason, message = rm.Reason(), rm.Message()
	}
	st := corev1.PodStatus{QOSClass: criconfig.QOSClass(pod), Phase: corev1.PodFailed, Reason: reason, Message: admission.StatusMessage(message)}
	if pod.Status.StartTime != nil && !pod.Status.StartTime.IsZero() {
		st.StartTime = pod.Status.StartTime.DeepCopy()
	} else {
		st.StartTime = &now
	}
	return st
}

// admitFirst admits p before its first sync, or rejects it; rejected: p
// was rejected and is gone from the Workers (its loop ends). An error
// (the runtime could not list its pods) decides nothing: the sync is
// retried.
func (w *Workers) admitFirst(ctx context.Context, p *worker, pod *corev1.Pod, status *podsync.PodStatus) (rejected bool, _ error) {
	w.admitMu.Lock()
	defer w.admitMu.Unlock()
	var err error
	if status == nil || (len(status.SandboxStatuses) == 0 && len(status.ContainerStatuses) == 0) {
		if err := w.admitRunning(ctx, p); err != nil {
			return false, err
		}
		err = w.o.admit(ctx, pod, w.admittedPods(p))
	}
	if err == nil {
		w.mu.Lock()
		p.admitted = true
		w.mu.Unlock()
		return false, nil
	}
	final := RejectedStatus(pod, err, metav1.NewTime(w.o.clock.Now()))
	w.mu.Lock()
	st := PodState{Pod: p.pod, Status: status, APIStatus: final, Err: err, Synced: w.o.clock.Now(), Removed: true}
	if w.pods[p.uid] == p {
		delete(w.pods, p.uid)
		w.setBusyLocked(p, false, false)
	}
	if w.rejected == nil {
		w.rejected = map[types.UID]struct{}{}
	}
	w.rejected[p.uid] = struct{}{}
	w.removing++
	w.mu.Unlock()
	w.notify(p.uid, st)
	w.mu.Lock()
	w.removing--
	w.idle.Broadcast()
	w.mu.Unlock()
	return true, nil
}

// admitRunning marks admitted the held pods not yet decided that the
// runtime has: a restarted agent's pods, whose loops have not reached
// their first sync yet, count for the pod being admitted (kubelet, which
// admits pods in order of creation, has admitted them first). Only while
// such pods are held; from the last relist when there is one (it saw
// every pod the runtime had before these Workers started: the pods
// started since were admitted first), else one ListPodSandbox and one
// ListContainers. In a burst of new pods, every admission finds pods not
// yet decided: a list per admission would be two calls per pod start.
func (w *Workers) admitRunning(ctx context.Context, p *worker) error {
	w.mu.Lock()
	undecided := false
	for _, q := range w.pods {
		if q != p && !q.admitted {
			undecided = true
			break
		}
	}
	if undecided && w.lastRelist != nil {
		for uid := range w.lastRelist {
			if q := w.pods[uid]; q != nil && q != p {
				q.admitted = true
			}
		}
		undecided = false
	}
	w.mu.Unlock()
	if !undecided {
		return nil
	}
	pods, err := podsync.ListPods(ctx, w.rt)
	if err != nil {
		return fmt.Errorf("admission: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, rp := range pods {
		if q := w.pods[rp.UID]; q != nil && q != p {
			q.admitted = true
		}
	}
	return nil
}

// needsAdmission: p has not been admitted yet and the Workers admit pods.
func (w *Workers) needsAdmission(p *worker) bool {
	if w.o.admit == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return !p.admitted
}

// admittedPods are kubelet's active pods: admitted, and not in a terminal
// phase unless being killed; p left out.
func (w *Workers) admittedPods(p *worker) []*corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*corev1.Pod
	for _, q := range w.pods {
		if q == p || !q.admitted || q.pod == nil {
			continue
		}
		if phase := q.state.APIStatus.Phase; (phase == corev1.PodSucceeded || phase == corev1.PodFailed) && !q.terminating {
			continue
		}
		out = append(out, q.pod)
	}
	return out
}

// wasRejectedLocked reports a pod admission rejected (w.mu held).
func (w *Workers) wasRejectedLocked(uid types.UID) bool {
	_, ok := w.rejected[uid]
	return ok
}

// forgetRejectedLocked forgets a rejected pod, which never ran (w.mu
// held); it reports whether it was one.
func (w *Workers) forgetRejectedLocked(uid types.UID) bool {
	if _, ok := w.rejected[uid]; !ok {
		return false
	}
	delete(w.rejected, uid)
	return true
}
