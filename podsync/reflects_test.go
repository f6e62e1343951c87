package podsync_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/defaults"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// Reflects: an event about an instance the cache holds in that state (or a
// later one) brings nothing new; anything else does.
func TestStatusCacheReflects(t *testing.T) {
	ctx := context.Background()
	rt := fake.New(fake.WithImages("nginx:1"))
	ims := images.NewManager(rt)
	defer ims.Close()
	root := t.TempDir()
	s := podsync.NewSyncer(rt, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(root+"/logs"))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1"}}}}
	defaults.Pod(pod)
	st, err := s.Status(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	if r := s.SyncPod(ctx, pod, st, nil); r.Error() != nil {
		t.Fatal(r.Error())
	}
	ev := func(id string, typ runtimeapi.ContainerEventType) *runtimeapi.ContainerEventResponse {
		return &runtimeapi.ContainerEventResponse{ContainerId: id, ContainerEventType: typ}
	}
	const (
		created = runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT
		started = runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT
		stopped = runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT
		deleted = runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT
	)
	// Nothing listed yet: nothing is reflected but the deletion of what the
	// cache never held.
	sandboxes, err := rt.ListPodSandbox(ctx, nil)
	if err != nil || len(sandboxes) != 1 {
		t.Fatalf("sandboxes %v, %v", sandboxes, err)
	}
	containers, err := rt.ListContainers(ctx, nil)
	if err != nil || len(containers) != 1 {
		t.Fatalf("containers %v, %v", containers, err)
	}
	sb, ct := sandboxes[0].Id, containers[0].Id
	cache := s.StatusCache()
	for _, e := range []*runtimeapi.ContainerEventResponse{ev(ct, created), ev(ct, started), ev(sb, started), ev("", deleted)} {
		if cache.Reflects(e) {
			t.Errorf("before a relist: %v reflected", e)
		}
	}
	if !cache.Reflects(ev("gone", deleted)) {
		t.Error("the deletion of an instance the cache never held is not reflected")
	}
	if _, _, err := cache.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		ev   *runtimeapi.ContainerEventResponse
		want bool
	}{
		{ev(ct, created), true},
		{ev(ct, started), true},
		{ev(ct, stopped), false}, // it runs: the stop is news
		{ev(ct, deleted), false},
		{ev(sb, created), true},
		{ev(sb, started), true},
		{ev(sb, stopped), false},
		{ev("other", created), false},
		{ev("other", started), false},
	}
	for _, w := range want {
		if got := cache.Reflects(w.ev); got != w.want {
			t.Errorf("running pod: Reflects(%v) = %v, want %v", w.ev, got, w.want)
		}
	}
	if err := rt.StopContainer(ctx, ct, 0); err != nil {
		t.Fatal(err)
	}
	if cache.Reflects(ev(ct, stopped)) {
		t.Error("a stop the cache has not listed is reflected")
	}
	if _, _, err := cache.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if !cache.Reflects(ev(ct, stopped)) || !cache.Reflects(ev(ct, started)) {
		t.Error("a listed stop is not reflected")
	}
	if err := rt.RemoveContainer(ctx, ct); err != nil {
		t.Fatal(err)
	}
	if cache.Reflects(ev(ct, deleted)) {
		t.Error("a removal the cache has not listed is reflected")
	}
	if _, _, err := cache.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if !cache.Reflects(ev(ct, deleted)) {
		t.Error("a listed removal is not reflected")
	}
}
