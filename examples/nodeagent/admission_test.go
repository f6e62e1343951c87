package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/mounts/fake"
	rtfake "github.com/podstart/podstart/runtime/fake"
)

// The node conformance suite's admission specs: a pod setting an unsafe
// sysctl the node does not allow ends Failed with reason SysctlForbidden,
// one for another OS with PodOSNotSupported, each with kubelet's message,
// a Warning event, and never a sandbox; an unsafe sysctl allowed by
// -allowed-unsafe-sysctls runs.
func TestAdmissionRejects(t *testing.T) {
	h := &harness{client: newFakeClientset(), clock: testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		rt: rtfake.New(), root: t.TempDir(), mounter: fake.New()}
	runAgent(t, Config{Client: h.client, Runtime: h.rt, NodeName: nodeName, RootDir: h.root, PodLogsDir: filepath.Join(h.root, "logs"),
		Clock: h.clock, Mounter: h.mounter, AllowedUnsafeSysctls: []string{"kernel.shmmax"}})
	ctx := context.Background()

	sysctls := testPod("sysctls")
	sysctls.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}, {Name: "kernel.msgmax", Value: "10000000000"}}
	windows := testPod("windows")
	windows.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
	allowed := testPod("allowed")
	allowed.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "kernel.shmmax", Value: "100000000"}}
	for _, p := range []*corev1.Pod{sysctls, windows, allowed} {
		if _, err := h.client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][2]string{
		"sysctls": {"SysctlForbidden", `forbidden sysctl: "kernel.msgmax" not allowlisted`},
		"windows": {"PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS"},
	}
	for name, w := range want {
		eventually(t, name+" rejected", func() bool {
			p, ok := h.get(t, name)
			return ok && p.Status.Phase == corev1.PodFailed && p.Status.Reason == w[0] && p.Status.Message == "Pod was rejected: "+w[1]
		})
		eventually(t, name+"'s Warning event", func() bool {
			evs, err := h.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs.Items {
				if e.InvolvedObject.Name == name && e.Type == corev1.EventTypeWarning && e.Reason == w[0] && e.Message == w[1] {
					return true
				}
			}
			return false
		})
	}
	eventually(t, "the pod with an allowed unsafe sysctl running", func() bool {
		p, ok := h.get(t, "allowed")
		return ok && p.Status.Phase == corev1.PodRunning
	})
	sandboxes, _ := h.rt.ListPodSandbox(ctx, nil)
	for _, sb := range sandboxes {
		if name := sb.GetMetadata().GetName(); name != "allowed" {
			t.Errorf("a sandbox for the rejected pod %s", name)
		}
	}
	if p, _ := h.get(t, "sysctls"); p.Status.QOSClass != corev1.PodQOSBestEffort || p.Status.StartTime == nil {
		t.Errorf("rejected pod's QOS class %q, start time %v: want kubelet's (BestEffort, set)", p.Status.QOSClass, p.Status.StartTime)
	}
}
