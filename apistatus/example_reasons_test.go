package apistatus_test

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/defaults"
	mountsfake "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// A crash loop. The app exits 1 at once: the first sync starts it, the
// second restarts it at once (kubelet's first restart has no delay), the
// third finds it in its 10 s restart back-off. Only the sync result knows
// that back-off: the runtime sees an exited container. Reasons, kubelet's
// reason cache, keeps each container's last start failure from every
// result (Update), and PodStatus reports it as the waiting reason and
// message kubelet gives. Without the Reasons.Update calls the same
// PodStatus would say the app is Terminated with reason Error and exit
// code 1, as if nothing would restart it.
//
// Package podstep (github.com/podstart/podstart/podstep) does all of this
// in one call per step: its Sync runs Status and SyncPod, feeds Reasons
// and returns the corev1.PodStatus.
func ExampleReasons() {
	ctx := context.Background()
	root, err := os.MkdirTemp("", "apistatus-reasons-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)

	rt := fake.New(fake.WithImages("busybox:1.35"))
	syncer := podsync.NewSyncer(rt, nil, podsync.WithRootDir(root),
		podsync.WithPodLogsDir(root+"/logs"), podsync.WithMounter(mountsfake.New()))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "busybox:1.35", Command: []string{"sh", "-c", "exit 1"}},
		}},
	}
	defaults.Pod(pod)

	reasons := apistatus.NewReasons()
	for n := 1; n <= 3; n++ {
		status, err := syncer.Status(ctx, pod)
		if err != nil {
			panic(err)
		}
		result := syncer.SyncPod(ctx, pod, status, nil)
		reasons.Update(pod.UID, result)
		fmt.Printf("sync %d: %v\n", n, result.Error())
	}

	status, err := syncer.Status(ctx, pod)
	if err != nil {
		panic(err)
	}

	s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: status, Reasons: reasons.For(pod.UID)})
	app := s.ContainerStatuses[0]
	fmt.Println("phase:", s.Phase)
	fmt.Println("app waiting:", app.State.Waiting.Reason)
	fmt.Println("message:", app.State.Waiting.Message)
	fmt.Println("last exit code:", app.LastTerminationState.Terminated.ExitCode, "restarts:", app.RestartCount)
	// Output:
	// sync 1: <nil>
	// sync 2: <nil>
	// sync 3: failed to "StartContainer" for "app" with CrashLoopBackOff: "back-off 10s restarting failed container=app pod=web_shop(uid-web)"
	// phase: Running
	// app waiting: CrashLoopBackOff
	// message: back-off 10s restarting failed container=app pod=web_shop(uid-web)
	// last exit code: 1 restarts: 1
}
