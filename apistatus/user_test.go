package apistatus_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/podsync"
)

// The runtime's view of a container's user reaches its status, as kubelet
// reports it with SupplementalGroupsPolicy (GA); none when the runtime
// reports none (containerd 1.6).
func TestContainerUser(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}}
	now := time.Unix(1000, 0)
	rs := &podsync.PodStatus{ContainerStatuses: []*podsync.ContainerStatus{
		{ID: "1", Name: "a", State: podsync.ContainerStateRunning, CreatedAt: now, StartedAt: now,
			User: &runtimeapi.ContainerUser{Linux: &runtimeapi.LinuxContainerUser{Uid: 1000, Gid: 2000, SupplementalGroups: []int64{2000, 3000}}}},
		{ID: "2", Name: "b", State: podsync.ContainerStateRunning, CreatedAt: now, StartedAt: now},
	}}
	s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: rs, Now: now})
	for _, cs := range s.ContainerStatuses {
		switch cs.Name {
		case "a":
			if u := cs.User; u == nil || u.Linux == nil || u.Linux.UID != 1000 || u.Linux.GID != 2000 || len(u.Linux.SupplementalGroups) != 2 {
				t.Errorf("a: user %+v", u)
			}
		case "b":
			if cs.User != nil {
				t.Errorf("b: user %+v, want none", cs.User)
			}
		}
	}
}
