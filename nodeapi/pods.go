package nodeapi

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/podworker"
)

// WorkerPods are the pods w holds, each with the API status w last
// computed for it, as Pods.
func WorkerPods(w *podworker.Workers) Pods { return workerPods{w} }

type workerPods struct{ w *podworker.Workers }

func (p workerPods) Pods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, uid := range p.w.Pods() {
		if pod := p.withStatus(uid); pod != nil {
			out = append(out, pod)
		}
	}
	return out
}

func (p workerPods) Pod(namespace, name string) (*corev1.Pod, bool) {
	for _, uid := range p.w.Pods() {
		st, ok := p.w.Status(uid)
		if ok && st.Pod != nil && st.Pod.Namespace == namespace && st.Pod.Name == name {
			return p.withStatus(uid), true
		}
	}
	return nil, false
}

func (p workerPods) withStatus(uid types.UID) *corev1.Pod {
	st, ok := p.w.Status(uid)
	if !ok || st.Pod == nil {
		return nil
	}
	pod := st.Pod.DeepCopy()
	if !st.Synced.IsZero() {
		pod.Status = *st.APIStatus.DeepCopy()
	}
	return pod
}
