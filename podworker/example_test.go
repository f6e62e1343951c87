package podworker_test

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/defaults"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/runtime/fake"
)

// A node agent's core: upsert a pod, learn when it runs, delete it and
// learn when nothing of it is left.
func ExampleWorkers() {
	root, err := os.MkdirTemp("", "podworker-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)

	rt := fake.New(fake.WithImages("nginx:1.27"))
	ims := images.NewManager(rt)
	defer ims.Close()
	syncer := podsync.NewSyncer(rt, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(root+"/logs"))

	running, gone := make(chan struct{}), make(chan struct{})
	workers := podworker.New(syncer, podworker.WithOnSync(func(uid types.UID, st podworker.PodState) {
		switch {
		case st.Removed:
			close(gone)
		case !st.Terminating && st.Result.Error() == nil && len(st.Result.Results) == 0 && st.Status.FindContainerStatusByName("app") != nil:
			select {
			case <-running:
			default:
				close(running) // the first sync with nothing left to do
			}
		}
	}))
	defer workers.Close()

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "1"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}
	defaults.Pod(pod)
	if err := workers.Upsert(pod); err != nil {
		panic(err)
	}
	<-running
	st, _ := workers.Status(pod.UID)
	fmt.Println("app:", st.Status.FindContainerStatusByName("app").State)

	if err := workers.Delete(pod, nil); err != nil {
		panic(err)
	}
	<-gone
	left, _ := podsync.ListPods(context.Background(), rt)
	fmt.Println("pods left on the runtime:", len(left))
	// Output:
	// app: running
	// pods left on the runtime: 0
}
