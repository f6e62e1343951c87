// Command quickstart runs one pod to Running on the in-process fake
// runtime: the smallest complete use of images.Manager and podsync.Syncer.
// The part between the README markers is the README's "Using it" snippet;
// main_test.go checks that the two stay equal.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/defaults"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
	"github.com/podstart/podstart/validation"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root, err := os.MkdirTemp("", "podstart-quickstart-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	if err := run(ctx, os.Stdout, root); err != nil {
		log.Fatal(err)
	}
}

// run starts the pod, writing kubelet's state under root.
func run(ctx context.Context, out io.Writer, root string) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "quickstart-1"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1.35"}}},
	}
	// README:begin
	rt := fake.New(fake.WithImages("busybox:1.35")) // or runtime.Dial(ctx, "unix:///run/containerd/containerd.sock"), then defer rt.Close()
	ims := images.NewManager(rt)                    // images.WithNodeKeyring(...) for the node's registry credentials
	defer ims.Close()
	// podsync.WithRecorder(...): client-go's event recorder fits
	syncer := podsync.NewSyncer(rt, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(root+"/logs"))
	defaults.Pod(pod) // what the API server fills in and kubelet relies on
	// validation.Check: what the API server would refuse (SyncPod checks it too)
	if err := validation.Check(pod); err != nil {
		return err
	}
	for n := 1; ; n++ {
		status, err := syncer.Status(ctx, pod) // rebuilt from the runtime's labels
		if err != nil {
			return err
		}
		if running(pod, status) {
			fmt.Fprintf(out, "pod %s/%s running after %d syncs\n", pod.Namespace, pod.Name, n-1)
			return nil
		}
		result := syncer.SyncPod(ctx, pod, status, nil) // nil: no pull secrets
		if err := result.Error(); err != nil {
			return err // errors.Is(err, images.ErrImagePullBackOff): kubelet syncs again later
		}
		select { // wait between syncs: containers take time to start and exit
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	// README:end
}

// running reports whether every app container of pod is running.
func running(pod *corev1.Pod, status *podsync.PodStatus) bool {
	for _, c := range pod.Spec.Containers {
		if cs := status.FindContainerStatusByName(c.Name); cs == nil || cs.State != podsync.ContainerStateRunning {
			return false
		}
	}
	return true
}
