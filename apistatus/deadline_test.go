package apistatus_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/apistatus"
)

// Kubelet's active deadline handler in generateAPIPodStatus: a pod active
// for its activeDeadlineSeconds (from the start time already reported) is
// Failed with DeadlineExceeded; without a start time or a deadline it is
// not. Found by the conformance spec "Pods should allow
// activeDeadlineSeconds to be updated".
func TestActiveDeadline(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	start := metav1.NewTime(t0)
	for _, tc := range []struct {
		name     string
		deadline *int64
		start    *metav1.Time
		now      time.Duration
		failed   bool
	}{
		{"at the deadline", new(int64(5)), &start, 5 * time.Second, true},
		{"past it", new(int64(5)), &start, time.Hour, true},
		{"before it", new(int64(5)), &start, 4 * time.Second, false},
		{"no start time", new(int64(5)), nil, time.Hour, false},
		{"no deadline", nil, &start, time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
				Spec: corev1.PodSpec{ActiveDeadlineSeconds: tc.deadline, Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
			prev := &corev1.PodStatus{Phase: corev1.PodPending, StartTime: tc.start}
			s := apistatus.PodStatus(apistatus.Input{Pod: pod, Previous: prev, Now: t0.Add(tc.now)})
			failed := s.Phase == corev1.PodFailed && s.Reason == apistatus.DeadlineExceeded &&
				s.Message == "Pod was active on the node longer than the specified deadline"
			if failed != tc.failed || apistatus.PastActiveDeadline(pod, prev, t0.Add(tc.now)) != tc.failed {
				t.Fatalf("phase %s %q %q, want failed %v", s.Phase, s.Reason, s.Message, tc.failed)
			}
		})
	}
}
