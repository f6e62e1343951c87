package podsync_test

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/defaults"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// A pod with an init container and an app container, synced until the app
// runs: Status rebuilds the pod from the runtime, SyncPod takes the next
// step. A real agent waits between syncs; here the init container exits at
// once.
func ExampleSyncer() {
	ctx := context.Background()
	root, err := os.MkdirTemp("", "podsync-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)

	rt := fake.New(
		fake.WithImages("busybox:1.35", "nginx:1.27"),
		fake.WithStartFunc(func(c *runtimeapi.ContainerConfig) *fake.Exit {
			if c.Metadata.Name == "migrate" {
				return &fake.Exit{Code: 0} // the init container finishes at once
			}
			return nil // the app keeps running
		}),
	)
	ims := images.NewManager(rt)
	defer ims.Close()
	syncer := podsync.NewSyncer(rt, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(root+"/logs"))

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "1"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "migrate", Image: "busybox:1.35"}},
			Containers:     []corev1.Container{{Name: "app", Image: "nginx:1.27"}},
		},
	}
	defaults.Pod(pod) // what the API server would fill in

	for n := 1; n <= 5; n++ {
		status, err := syncer.Status(ctx, pod)
		if err != nil {
			panic(err)
		}
		if app := status.FindContainerStatusByName("app"); app != nil && app.State == podsync.ContainerStateRunning {
			fmt.Println("app running")
			return
		}
		result := syncer.SyncPod(ctx, pod, status, nil)
		fmt.Printf("sync %d:", n)
		for _, r := range result.Results {
			fmt.Printf(" %s %s", r.Action, r.Target)
			if r.Err != nil {
				fmt.Printf(" (%v)", r.Err)
			}
		}
		fmt.Println()
	}
	// Output:
	// sync 1: CreatePodSandbox web_shop(1) StartContainer migrate
	// sync 2: StartContainer app
	// app running
}
