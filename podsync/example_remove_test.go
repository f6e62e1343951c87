package podsync_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/defaults"
	mountsfake "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// RemovePod takes everything of a pod off the node, given only its UID:
// it stops what still runs, removes its containers and sandbox from the
// runtime, unmounts the tmpfs of its memory-backed emptyDir and deletes
// its pod directory (<root>/pods/<uid>) and log directory. Here the pod
// still runs; a caller that has the spec would KillPod it first, for its
// grace periods.
func ExampleSyncer_RemovePod() {
	ctx := context.Background()
	root, err := os.MkdirTemp("", "podsync-remove-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)

	rt := fake.New(fake.WithImages("busybox:1.35"))
	mounter := mountsfake.New() // records the tmpfs mounts, needs no privilege
	syncer := podsync.NewSyncer(rt, nil, podsync.WithRootDir(root),
		podsync.WithPodLogsDir(filepath.Join(root, "logs")), podsync.WithMounter(mounter))

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.35",
				Command:      []string{"sleep", "infinity"},
				VolumeMounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}}}},
			Volumes: []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}},
		},
	}
	defaults.Pod(pod)
	status, err := syncer.Status(ctx, pod)
	if err != nil {
		panic(err)
	}
	if err := syncer.SyncPod(ctx, pod, status, nil).Error(); err != nil {
		panic(err)
	}

	podDir := filepath.Join(root, "pods", string(pod.UID))
	show := func(when string) {
		pods, err := podsync.ListPods(ctx, rt)
		if err != nil {
			panic(err)
		}
		containers, sandboxes := 0, 0
		for _, p := range pods {
			containers += len(p.Containers)
			sandboxes += len(p.Sandboxes)
		}
		_, statErr := os.Stat(podDir)
		logDirs, _ := os.ReadDir(filepath.Join(root, "logs"))
		fmt.Printf("%s: pods %d, containers %d, sandboxes %d, tmpfs mounts %d, log directories %d, pod directory exists: %v\n",
			when, len(pods), containers, sandboxes, len(mounter.Tmpfs()), len(logDirs), statErr == nil)
	}
	show("before")
	if err := syncer.RemovePod(ctx, pod.UID); err != nil {
		panic(err)
	}
	show("after")
	// Output:
	// before: pods 1, containers 1, sandboxes 1, tmpfs mounts 1, log directories 1, pod directory exists: true
	// after: pods 0, containers 0, sandboxes 0, tmpfs mounts 0, log directories 0, pod directory exists: false
}
