package main

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Config.EventClient receives the events (kubelet's separate event
// client, rate-limited apart); Client then sends none.
func TestEventClient(t *testing.T) {
	events := newFakeClientset()
	h := startWith(t, func(c *Config) { c.EventClient = events })
	ctx := context.Background()
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, testPod("web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a Started event through the event client", func() bool {
		evs, err := events.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.Reason == "Started" && e.InvolvedObject.Name == "web" {
				return true
			}
		}
		return false
	})
	for _, a := range h.client.Actions() {
		if a.GetResource().Resource == "events" && (a.GetVerb() == "create" || a.GetVerb() == "patch") {
			t.Errorf("an event sent through the main client: %v", a)
		}
	}
	eventually(t, "the pod Running", func() bool {
		p, ok := h.get(t, "web")
		return ok && p.Status.Phase == corev1.PodRunning
	})
}
