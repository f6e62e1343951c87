// Command quickstart runs one pod to Running on the in-process fake
// runtime: the smallest complete use of podsync.Syncer, through podstep.
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

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/podstep"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
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
	// nil: pull with an images.Manager on kubelet's defaults; podsync.WithRecorder(...): client-go's event recorder fits
	syncer := podsync.NewSyncer(rt, nil, podsync.WithRootDir(root), podsync.WithPodLogsDir(root+"/logs"))
	p, err := podstep.New(syncer, pod) // defaulted as the API server would, and checked (validation.ErrInvalidPod)
	if err != nil {
		return err
	}
	for n := 1; ; n++ {
		status, err := p.Sync(ctx) // status: the corev1.PodStatus kubelet would report after this sync
		if apistatus.Running(p.Pod(), status) {
			fmt.Fprintf(out, "pod %s/%s %s after %d syncs\n", pod.Namespace, pod.Name, status.Phase, n)
			return nil
		}
		if err != nil && apistatus.Settled(p.Pod(), status) {
			return err // errors.Is(err, images.ErrImagePullBackOff): the status says ImagePullBackOff too
		}
		select { // wait between syncs: containers take time to start and exit
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	// README:end
}
