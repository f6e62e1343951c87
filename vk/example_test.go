package vk_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/defaults"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
	"github.com/podstart/podstart/vk"
)

// The provider as virtual-kubelet's pod controller drives it, here on
// podstart's fake runtime: create a pod, learn its status through
// NotifyPods, read it back, delete it and learn its terminal status once
// nothing of it is left.
func Example() {
	root, err := os.MkdirTemp("", "vk-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)
	rt := fake.New(fake.WithImages("nginx:1.27"))
	ims := images.NewManager(rt)
	defer ims.Close()
	syncer := podsync.NewSyncer(rt, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(root+"/logs"))
	provider := vk.New(syncer)
	defer provider.Close()

	// VK registers its callback; statuses arrive on the provider's goroutines.
	var mu sync.Mutex
	phases := map[corev1.PodPhase]chan struct{}{corev1.PodRunning: make(chan struct{}), corev1.PodFailed: make(chan struct{})}
	ctx := context.Background()
	provider.NotifyPods(ctx, func(p *corev1.Pod) {
		mu.Lock()
		defer mu.Unlock()
		if ch, ok := phases[p.Status.Phase]; ok {
			close(ch)
			delete(phases, p.Status.Phase)
		}
	})
	wait := func(ch chan struct{}) {
		select {
		case <-ch:
		case <-time.After(time.Minute):
			panic("no notification")
		}
	}
	running, failed := phases[corev1.PodRunning], phases[corev1.PodFailed]

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "1"},
		Spec:       corev1.PodSpec{NodeName: "vk", Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}
	defaults.Pod(pod) // VK's pods come from the API server, defaulted
	if err := provider.CreatePod(ctx, pod); err != nil {
		panic(err)
	}
	wait(running)
	got, _ := provider.GetPod(ctx, "shop", "web")
	fmt.Println("GetPod:", got.Status.Phase, got.Status.ContainerStatuses[0].Ready)

	if err := provider.DeletePod(ctx, pod); err != nil {
		panic(err)
	}
	wait(failed) // the fake stops containers with exit code 143
	left, _ := podsync.ListPods(ctx, rt)
	_, err = provider.GetPod(ctx, "shop", "web")
	fmt.Println("after delete: pods on the runtime:", len(left), "GetPod:", err)
	// Output:
	// GetPod: Running true
	// after delete: pods on the runtime: 0 GetPod: pod shop/web is not known to the provider
}
