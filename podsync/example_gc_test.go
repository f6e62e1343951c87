package podsync_test

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/defaults"
	mountsfake "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// A crash-looping container leaves a dead instance behind at every
// restart. Kubelet's default policy (DefaultGCPolicy) keeps one dead
// instance per container, the newest, which holds the last exit code and
// logs; GarbageCollect removes the older ones with their log files. The
// running container and the pod's sandbox stay.
//
// The runtime and the Syncer share a fake clock, stepped past each
// CrashLoopBackOff delay (10 s, 20 s, 40 s) instead of waiting for it.
func ExampleSyncer_GarbageCollect() {
	ctx := context.Background()
	root, err := os.MkdirTemp("", "podsync-gc-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)

	clk := testingclock.NewFakeClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	rt := fake.New(fake.WithImages("busybox:1.35"), fake.WithClock(clk))
	syncer := podsync.NewSyncer(rt, nil, podsync.WithRootDir(root), podsync.WithPodLogsDir(root+"/logs"),
		podsync.WithMounter(mountsfake.New()), podsync.WithClock(clk))

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "busybox:1.35", Command: []string{"sh", "-c", "exit 3"}}, // crashes at once
			{Name: "proxy", Image: "busybox:1.35", Command: []string{"sleep", "infinity"}},
		}},
	}
	defaults.Pod(pod)

	// Four runs of app: the first start, then a restart after each back-off.
	for i := 0; i < 4; i++ {
		status, err := syncer.Status(ctx, pod)
		if err != nil {
			panic(err)
		}
		syncer.SyncPod(ctx, pod, status, nil)
		clk.Step(5 * time.Minute) // past any back-off
	}

	count := func() string {
		pods, err := podsync.ListPods(ctx, rt)
		if err != nil {
			panic(err)
		}
		n := map[string]int{}
		for _, c := range pods[0].Containers {
			n[c.Metadata.Name+" "+c.State.String()]++
		}
		return fmt.Sprintf("app exited: %d, proxy running: %d, sandboxes: %d",
			n["app CONTAINER_EXITED"], n["proxy CONTAINER_RUNNING"], len(pods[0].Sandboxes))
	}
	fmt.Println("before:", count())
	if err := syncer.GarbageCollect(ctx, podsync.DefaultGCPolicy, nil); err != nil {
		panic(err)
	}
	fmt.Println("after: ", count())
	// Output:
	// before: app exited: 4, proxy running: 1, sandboxes: 1
	// after:  app exited: 1, proxy running: 1, sandboxes: 1
}
