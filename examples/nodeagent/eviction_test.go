package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/eviction"
	"github.com/podstart/podstart/mounts/fake"
	rtfake "github.com/podstart/podstart/runtime/fake"
)

// Under memory pressure (a threshold every host meets), the Node reports
// MemoryPressure, and a new BestEffort pod is refused as kubelet refuses
// it: Failed, reason Evicted, kubelet's message, and never a sandbox; a
// Burstable one runs, then is evicted by the next pass.
func TestEvictionAdmission(t *testing.T) {
	thresholds, err := eviction.ParseThresholds(eviction.Config{Hard: map[string]string{"memory.available": "1Ei"}})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{client: newFakeClientset(), clock: testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		rt: rtfake.New(), root: t.TempDir(), mounter: fake.New()}
	runAgent(t, Config{Client: h.client, Runtime: h.rt, NodeName: nodeName, RootDir: h.root, PodLogsDir: filepath.Join(h.root, "logs"),
		Clock: h.clock, Mounter: h.mounter, Eviction: thresholds})
	eventually(t, "the Node under MemoryPressure", func() bool {
		h.clock.Step(10 * time.Second) // the eviction manager's and the status loop's periods
		n, err := h.client.CoreV1().Nodes().Get(t.Context(), nodeName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeMemoryPressure && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})

	besteffort := testPod("besteffort")
	burstable := testPod("burstable")
	burstable.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi")}
	for _, p := range []*corev1.Pod{besteffort, burstable} {
		if _, err := h.client.CoreV1().Pods("default").Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the BestEffort pod refused", func() bool {
		p, ok := h.get(t, "besteffort")
		return ok && p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted" &&
			p.Status.Message == "Pod was rejected: The node had condition: [MemoryPressure]. "
	})
	eventually(t, "the Burstable pod running", func() bool {
		p, ok := h.get(t, "burstable")
		return ok && p.Status.Phase == corev1.PodRunning
	})
	// The threshold stays met: the next pass evicts the running pod, as
	// kubelet, with its status and message, and the pod is not run again.
	eventually(t, "the Burstable pod evicted", func() bool {
		h.clock.Step(10 * time.Second)
		p, ok := h.get(t, "burstable")
		return ok && p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted" &&
			strings.HasPrefix(p.Status.Message, "The node was low on resource: memory.")
	})
	sandboxes, _ := h.rt.ListPodSandbox(t.Context(), nil)
	for _, sb := range sandboxes {
		if sb.GetMetadata().GetName() == "besteffort" {
			t.Errorf("a sandbox for the refused pod: %v", sb.GetMetadata())
		}
	}
}
