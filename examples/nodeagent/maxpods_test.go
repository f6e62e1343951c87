package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	fakemount "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/runtime/fake"
)

// Config.MaxPods (-max-pods, kubelet's --max-pods) is the Node's pods
// capacity and allocatable, and admission refuses a pod beyond it with
// kubelet's OutOfpods.
func TestMaxPods(t *testing.T) {
	h := &harness{
		client:  newFakeClientset(),
		clock:   testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		rt:      fake.New(),
		root:    t.TempDir(),
		mounter: fakemount.New(),
	}
	runAgent(t, Config{Client: h.client, Runtime: h.rt, NodeName: nodeName, RootDir: h.root, MaxPods: 2,
		PodLogsDir: filepath.Join(h.root, "logs"), Clock: h.clock, Mounter: h.mounter})
	ctx := context.Background()
	node, err := h.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c, a := node.Status.Capacity[corev1.ResourcePods], node.Status.Allocatable[corev1.ResourcePods]; c.Value() != 2 || a.Value() != 2 {
		t.Fatalf("pods capacity %v, allocatable %v, want 2", c.String(), a.String())
	}
	for _, name := range []string{"one", "two"} {
		if _, err := h.client.CoreV1().Pods("default").Create(ctx, testPod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, name+" Running", func() bool {
			p, ok := h.get(t, name)
			return ok && p.Status.Phase == corev1.PodRunning
		})
	}
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, testPod("three"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the third pod refused with OutOfpods", func() bool {
		p, ok := h.get(t, "three")
		return ok && p.Status.Phase == corev1.PodFailed && p.Status.Reason == "OutOfpods"
	})
}
