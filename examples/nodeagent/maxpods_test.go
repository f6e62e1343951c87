package main

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Config.MaxPods (-max-pods, kubelet's --max-pods) is the Node's pods
// capacity and allocatable, and admission refuses a pod beyond it with
// kubelet's OutOfpods.
func TestMaxPods(t *testing.T) {
	h := startWith(t, func(c *Config) { c.MaxPods = 2 })
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
