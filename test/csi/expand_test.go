package csi

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestExpand grows a mounted volume's claim (the tier's StorageClass
// allows expansion; external-resizer runs ControllerExpandVolume): the
// node expands it online with NodeExpandVolume at the pod's publish
// target and the claim's capacity becomes the new size with no resize
// status left; the calls and the node's events are compared with
// kubelet's.
func TestExpand(t *testing.T) {
	tr := setup(t)
	ns := tr.namespace("csi-expand")
	off := tr.callsOffset()
	tr.claimPod(ns, "db", "data")
	p := tr.waitPodReady(ns, "db")
	pv, _ := tr.pvOf(ns, "data")
	start := time.Now()
	patch := []byte(`{"spec":{"resources":{"requests":{"storage":"16Mi"}}}}`)
	if _, err := tr.cs.CoreV1().PersistentVolumeClaims(ns).Patch(ctx(t), "data", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	want := resource.MustParse("16Mi")
	tr.eventually(3*time.Minute, "claim data expanded to 16Mi", func() (bool, string) {
		c, err := tr.cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx(t), "data", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got := c.Status.Capacity[corev1.ResourceStorage]
		resizing := false // Resizing, FileSystemResizePending, ControllerResizeError, NodeResizeError (not v1.37's Unused)
		for _, cond := range c.Status.Conditions {
			resizing = resizing || strings.Contains(string(cond.Type), "Resiz")
		}
		return got.Cmp(want) == 0 && len(c.Status.AllocatedResourceStatuses) == 0 && !resizing,
			fmt.Sprintf("capacity %s, allocated %v, statuses %v, conditions %v; events: %s", got.String(), c.Status.AllocatedResources, c.Status.AllocatedResourceStatuses, c.Status.Conditions, tr.events(ns, "data"))
	})
	t.Logf("claim expanded %v after the patch", time.Since(start).Round(time.Millisecond))
	tr.checkMountedOnce(tr.csiMountOf(p, pv))
	events, podStatus := tr.nodeEvents(ns, "db"), tr.podStatusShape(ns, "db")
	t.Logf("the node's events: %q", events)
	if err := tr.cs.CoreV1().Pods(ns).Delete(ctx(t), "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tr.waitPodGone(ns, "db")
	tr.waitNothingMounted()
	tr.waitNoAttachments()
	r := tr.nodeReport(off)
	expanded := 0
	for vol, calls := range r.ByVolume {
		checkLifecycle(t, vol, calls, true)
		for _, c := range calls {
			if c.Method == "NodeExpandVolume" {
				expanded++
				if path, _ := c.Request["volume_path"].(string); !strings.HasSuffix(path, "/mount") {
					t.Errorf("NodeExpandVolume at %q, want the publish target", path)
				}
			}
		}
	}
	if expanded != 1 {
		t.Errorf("%d NodeExpandVolume calls, want 1:\n%s", expanded, sequence(r.Calls))
	}
	t.Logf("the node's calls, normalised:\n%s", sequence(r.Calls))
	r.Objects = map[string]any{"events": events, "podStatus": podStatus}
	tr.writeReport("expand", r, false)
}
