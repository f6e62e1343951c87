package podsync

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/validation"
)

// nilDefaults puts the defaults back where an option set nil.
func (o *options) nilDefaults() {
	if o.clock == nil {
		o.clock = clock.RealClock{}
	}
	if o.handler == nil {
		o.handler = func(*corev1.Pod) string { return "" }
	}
	if o.httpClient == nil {
		o.httpClient = lifecycleHTTPClient()
	}
}

// validatePod refuses a pod the API server would refuse
// (validation.Check: its names would take host paths outside the root or
// log dirs, its modes, paths, quantities or security settings are ones
// kubelet never sees); SyncPod calls it before anything else.
// It also refuses what podsync does not carry out rather than run the pod
// otherwise: a RestartAllContainers restart rule (kubelet v1.36 restarts
// every container in place; podsync would restart only the one).
func validatePod(pod *corev1.Pod) error {
	if err := validation.Check(pod); err != nil {
		return err
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, r := range c.RestartPolicyRules {
				if r.Action == corev1.ContainerRestartRuleActionRestartAllContainers {
					return fmt.Errorf("%w: container %q: restartPolicyRules action RestartAllContainers is not implemented", criconfig.ErrUnsupported, c.Name)
				}
			}
		}
	}
	return nil
}

// readOnly returns a shallow copy of the caller's status that SyncPod may
// change (the init-container purge drops entries) without writing to the
// caller's value, which others may share. Entries are not modified.
func readOnly(status *PodStatus) *PodStatus {
	if status == nil {
		return &PodStatus{}
	}
	cp := *status
	return &cp
}
