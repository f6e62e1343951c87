package podsync_test

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/defaults"
	mountsfake "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// A running pod with two sidecars (restartable init containers) and an app
// container, killed with a 10 s grace period, as for
// `kubectl delete --grace-period=10`. App containers stop first, all at
// once; then the sidecars, the last declared first; then the sandbox. Each
// StopContainer carries the grace period. Containers and sandbox stay on
// the runtime, exited, for GarbageCollect or RemovePod.
func ExampleSyncer_KillPod() {
	ctx := context.Background()
	root, err := os.MkdirTemp("", "podsync-kill-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)

	rt := fake.New(fake.WithImages("busybox:1.35"))
	syncer := podsync.NewSyncer(rt, nil, podsync.WithRootDir(root),
		podsync.WithPodLogsDir(root+"/logs"), podsync.WithMounter(mountsfake.New()))

	always := corev1.ContainerRestartPolicyAlways
	forever := []string{"sleep", "infinity"} // runtime/fake keeps it running
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Name: "logger", Image: "busybox:1.35", Command: forever, RestartPolicy: &always},
				{Name: "proxy", Image: "busybox:1.35", Command: forever, RestartPolicy: &always},
			},
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.35", Command: forever}},
		},
	}
	defaults.Pod(pod)

	// Sync until nothing is left to do: every container runs.
	status, err := syncer.Status(ctx, pod)
	for i := 0; err == nil && i < 5; i++ {
		if len(syncer.SyncPod(ctx, pod, status, nil).Results) == 0 {
			break
		}
		status, err = syncer.Status(ctx, pod)
	}
	if err != nil {
		panic(err)
	}
	for _, name := range []string{"logger", "proxy", "app"} {
		fmt.Println(name, status.FindContainerStatusByName(name).State)
	}

	rt.ResetCalls()
	grace := int64(10)
	if err := syncer.KillPod(ctx, pod, status, &grace).Error(); err != nil {
		panic(err)
	}

	names := map[string]string{} // container ID -> name
	for _, c := range status.ContainerStatuses {
		names[c.ID] = c.Name
	}
	for _, call := range rt.Calls() {
		switch req := call.Request.(type) {
		case *runtimeapi.StopContainerRequest:
			fmt.Printf("StopContainer %s (grace %ds)\n", names[req.ContainerId], req.Timeout)
		case *runtimeapi.StopPodSandboxRequest:
			fmt.Println("StopPodSandbox")
		}
	}
	left, _ := podsync.ListPods(ctx, rt)
	fmt.Println("containers still on the runtime:", len(left[0].Containers))
	// Output:
	// logger running
	// proxy running
	// app running
	// StopContainer app (grace 10s)
	// StopContainer proxy (grace 10s)
	// StopContainer logger (grace 10s)
	// StopPodSandbox
	// containers still on the runtime: 3
}
