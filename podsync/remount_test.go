package podsync_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// remounter is a VolumeRemounter counting its calls.
type remounter struct {
	claimVolumes
	setups, remounts int
	err              error
	refreshAt        time.Time
}

func (r *remounter) Volumes(ctx context.Context, pod *corev1.Pod) (mounts.VolumeMap, error) {
	r.setups++
	return r.claimVolumes.Volumes(ctx, pod)
}

func (r *remounter) RemountVolumes(context.Context, *corev1.Pod) (time.Time, error) {
	r.remounts++
	return r.refreshAt, r.err
}

// A running pod's volumes are set up again at every sync, as kubelet's
// volume manager remounts Secret, ConfigMap, downward API and projected
// volumes at each sync; a sync whose container start set them up does not
// set them up twice; a failed remount is not a failed sync.
func TestSyncPodRemountsRunningPodsVolumes(t *testing.T) {
	v := &remounter{}
	h := newHarness(t, false, nil, podsync.WithVolumes(v))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-remount"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1", ImagePullPolicy: corev1.PullIfNotPresent}},
			Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}}}
	if r := h.sync(pod); r.Error() != nil {
		t.Fatal(r.Error())
	}
	if v.setups != 1 || v.remounts != 0 {
		t.Fatalf("first sync: %d setups, %d remounts; want the container start's one setup", v.setups, v.remounts)
	}
	if !h.running(pod) {
		t.Fatal("pod not running")
	}
	v.refreshAt = h.clk.Now().Add(time.Hour)
	r := h.sync(pod)
	if r.Error() != nil || len(r.Results) != 0 {
		t.Fatalf("steady sync: %v %+v", r.Error(), r.Results)
	}
	if v.setups != 1 || v.remounts != 1 {
		t.Fatalf("steady sync: %d setups, %d remounts; want one remount", v.setups, v.remounts)
	}
	if !r.RefreshAt.Equal(v.refreshAt) {
		t.Fatalf("RefreshAt %v, want %v", r.RefreshAt, v.refreshAt)
	}
	v.err = errors.New(`secret "s" not found`)
	r = h.sync(pod)
	if r.Error() != nil || r.RemountError == nil || r.RemountError.Error() != `secret "s" not found` {
		t.Fatalf("failed remount: Error() %v, RemountError %v; want only the remount error", r.Error(), r.RemountError)
	}
	// A pod being deleted is killed, not remounted.
	del := pod.DeepCopy()
	del.DeletionTimestamp = &metav1.Time{Time: h.clk.Now()}
	zero := int64(0)
	del.DeletionGracePeriodSeconds = &zero
	h.sync(del)
	if v.remounts != 2 {
		t.Fatalf("%d remounts after the kill, want 2", v.remounts)
	}
}

// A pod with no running container has no volumes to refresh: nothing is
// remounted (a container start sets them up).
func TestSyncPodNoRemountWithoutRunningContainer(t *testing.T) {
	v := &remounter{}
	exit := fake.WithStartFunc(func(*runtimeapi.ContainerConfig) *fake.Exit { return &fake.Exit{Code: 0} })
	h := newHarness(t, false, []fake.Option{exit}, podsync.WithVolumes(v))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-noremount"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "app", Image: "nginx:1", ImagePullPolicy: corev1.PullIfNotPresent}}}}
	for range 3 { // start, the sandbox killed, nothing
		h.sync(pod)
	}
	if v.remounts != 0 {
		t.Fatalf("%d remounts of a pod whose containers ended, want 0", v.remounts)
	}
}
