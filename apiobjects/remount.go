package apiobjects

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/validation"
)

var _ podsync.VolumeRemounter = (*Volumes)(nil)

// RemountVolumes implements podsync.VolumeRemounter: the pod's Secret,
// ConfigMap, downward API and projected volumes are set up again, as
// kubelet's volume manager remounts them (their plugins' RequiresRemount)
// at every sync of a running pod: the payload built from the objects as
// they are now and from the pod given (its labels and annotations),
// written only where it differs, with the ..data swap, keys added and
// removed, an optional object that appeared or went away written as such.
// hostPath and emptyDir volumes are left as they are. Every volume is
// tried; each failure is a FailedMount event, and the first, in the
// pod's order, is returned. refreshAt is when the earliest of the pod's
// service account tokens is due for renewal (Tokens.NextRefresh; zero:
// none), when the pod should be synced again. A pod the API server would
// refuse (validation.Check) is refused before anything is written.
func (v *Volumes) RemountVolumes(ctx context.Context, pod *corev1.Pod) (refreshAt time.Time, err error) {
	if err := validation.Check(pod); err != nil {
		return time.Time{}, err
	}
	for _, vol := range pod.Spec.Volumes {
		if !RequiresRemount(vol) {
			continue
		}
		if _, verr := v.volume(ctx, pod, vol); verr != nil && err == nil {
			err = verr
		}
	}
	if v.tokens != nil {
		refreshAt = v.tokens.NextRefresh(pod.UID)
	}
	return refreshAt, err
}

// RequiresRemount reports whether kubelet sets the volume up again at
// every sync of a running pod: Secret, ConfigMap, downward API and
// projected volumes (their plugins' RequiresRemount).
func RequiresRemount(vol corev1.Volume) bool {
	return vol.Secret != nil || vol.ConfigMap != nil || vol.DownwardAPI != nil || vol.Projected != nil
}

// NextRefresh is the earliest time at which a cached token bound to the
// pod certainly needs a refresh: just after it is older than 24 hours or
// within 20% of its lifetime of expiry (kubelet's jitter, up to 10 s,
// only brings a renewal earlier); zero when the pod has no cached token
// with an expiration.
func (m *Tokens) NextRefresh(podUID types.UID) time.Time {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var next time.Time
	for _, tr := range m.cache {
		if tr.Spec.BoundObjectRef == nil || tr.Spec.BoundObjectRef.UID != podUID || tr.Spec.ExpirationSeconds == nil {
			continue
		}
		ttl := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
		exp := tr.Status.ExpirationTimestamp.Time
		at := exp.Add(-ttl * 20 / 100)
		if old := exp.Add(-ttl).Add(tokenMaxTTL); old.Before(at) {
			at = old
		}
		at = at.Add(time.Nanosecond) // after it, whatever the jitter
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}
