package podsync

import (
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/mounts"
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
		o.httpClient = &http.Client{Timeout: 30 * time.Second}
	}
}

// validatePod refuses a pod whose names would take host paths outside the
// root or log dirs; SyncPod calls it before anything else.
func validatePod(pod *corev1.Pod) error { return mounts.ValidatePodNames(pod) }

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
