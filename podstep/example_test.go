package podstep_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/apistatus"
	mountsfake "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podstep"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// A unit test of pod start: sync until nothing is left to do, then read
// the status kubelet would report. The app crashes; the status says so
// with kubelet's reason, with nothing carried by hand.
func Example() {
	dir, _ := os.MkdirTemp("", "podstep-example-")
	defer os.RemoveAll(dir)
	rt := fake.New(fake.WithImages("busybox:1.35"), fake.WithStartFunc(func(c *runtimeapi.ContainerConfig) *fake.Exit {
		if c.Metadata.Name == "app" {
			return &fake.Exit{Code: 2} // crashes at once
		}
		return nil // keeps running
	}))
	syncer := podsync.NewSyncer(rt, nil, podsync.WithRootDir(dir), podsync.WithPodLogsDir(dir+"/logs"), podsync.WithMounter(mountsfake.New()))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "busybox:1.35"},
			{Name: "proxy", Image: "busybox:1.35"},
		}},
	}
	p, err := podstep.New(syncer, pod)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	var status corev1.PodStatus
	for i := 0; i < 10 && !apistatus.Settled(p.Pod(), status); i++ {
		status, err = p.Sync(ctx) // err is the sync's failure; status already shows it
	}
	fmt.Println("crash loop:", errors.Is(err, podsync.ErrCrashLoopBackOff))
	fmt.Println(err)
	fmt.Println("phase:", status.Phase, "running:", apistatus.Running(p.Pod(), status), "ready:", apistatus.Ready(status))
	for _, c := range status.ContainerStatuses {
		switch {
		case c.State.Waiting != nil:
			fmt.Printf("%s: waiting %s (last exit %d)\n", c.Name, c.State.Waiting.Reason, c.LastTerminationState.Terminated.ExitCode)
		case c.State.Running != nil:
			fmt.Printf("%s: running\n", c.Name)
		}
	}
	status, _ = p.Kill(ctx, nil)
	fmt.Println("after kill:", status.Phase, apistatus.Terminal(status))
	fmt.Println("remove:", p.Remove(ctx))
	// Output:
	// crash loop: true
	// failed to "StartContainer" for "app" with CrashLoopBackOff: "back-off 10s restarting failed container=app pod=web_default(uid-web)"
	// phase: Running running: false ready: false
	// app: waiting CrashLoopBackOff (last exit 2)
	// proxy: running
	// after kill: Failed true
	// remove: <nil>
}
