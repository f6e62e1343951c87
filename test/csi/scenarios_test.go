package csi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func ptr[T any](v T) *T { return &v }

// container is the tier's one container: it runs script in sh, is Ready
// once ready (a file) exists, and stops at once on SIGTERM.
func (tr *tier) container(script, ready string, mounts ...corev1.VolumeMount) corev1.Container {
	return corev1.Container{Name: "app", Image: tr.image, ImagePullPolicy: corev1.PullIfNotPresent,
		Command:        []string{"sh", "-c", "set -e; " + script + "; trap 'exit 0' TERM; sleep 3600 & wait"},
		VolumeMounts:   mounts,
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", ready}}}, PeriodSeconds: 1}}
}

// statefulSet is "web": replicas pods, each with its claim "data" of the
// tier's StorageClass. A pod appends "<name> gen<gen>" to /data/written,
// after copying what an earlier generation wrote to /data/read-by-gen<gen>.
func (tr *tier) statefulSet(ns string, gen int) *appsv1.StatefulSet {
	sel := map[string]string{"app": "web"}
	script := fmt.Sprintf(`if [ -f /data/written ]; then cp /data/written /data/read-by-gen%d; fi; echo "$HOSTNAME gen%d" >> /data/written`, gen, gen)
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(2)), ServiceName: "web",
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: ptr(int64(5)),
				Containers:                    []corev1.Container{tr.container(script, "/data/written", corev1.VolumeMount{Name: "data", MountPath: "/data"})}}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: ptr(tr.class),
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}}}}}}}
}

// runStatefulSet creates web at generation gen, waits for both pods and
// returns them.
func (tr *tier) runStatefulSet(ns string, gen int) []*corev1.Pod {
	tr.t.Helper()
	if _, err := tr.cs.AppsV1().StatefulSets(ns).Create(ctx(tr.t), tr.statefulSet(ns, gen), metav1.CreateOptions{}); err != nil {
		tr.t.Fatal(err)
	}
	var pods []*corev1.Pod
	for i := range 2 {
		pods = append(pods, tr.waitPodReady(ns, fmt.Sprintf("web-%d", i)))
	}
	return pods
}

// deleteStatefulSet deletes web and waits until its pods are gone.
func (tr *tier) deleteStatefulSet(ns string, pods []*corev1.Pod) {
	tr.t.Helper()
	if err := tr.cs.AppsV1().StatefulSets(ns).Delete(ctx(tr.t), "web", metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationForeground)}); err != nil {
		tr.t.Fatal(err)
	}
	for _, p := range pods {
		tr.waitPodGone(ns, p.Name)
	}
	tr.eventually(time.Minute, "StatefulSet web gone", func() (bool, string) {
		_, err := tr.cs.AppsV1().StatefulSets(ns).Get(ctx(tr.t), "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// TestStatefulSet runs a StatefulSet of 2 replicas with a
// volumeClaimTemplate on the node: each pod writes to its volume; the
// StatefulSet is deleted (nothing left mounted, the volumes detached) and
// made again, and its new pods read what the first ones wrote.
func TestStatefulSet(t *testing.T) {
	tr := setup(t)
	ns := tr.namespace("csi-sts")
	off := tr.callsOffset()
	start := time.Now()

	pods := tr.runStatefulSet(ns, 1)
	handles := map[string]string{}
	pvs := map[string]string{}
	for _, p := range pods {
		claim := "data-" + p.Name
		pv, handle := tr.pvOf(ns, claim)
		pvs[p.Name], handles[p.Name] = pv, handle
		if target := tr.csiMountOf(p, pv); !isMounted(target) {
			t.Errorf("pod %s: its volume is not mounted at %s", p.Name, target)
		}
		if got, want := readFile(t, filepath.Join(tr.data, "volumes", handle, "written")), p.Name+" gen1\n"; got != want {
			t.Errorf("pod %s wrote %q to its volume, want %q", p.Name, got, want)
		}
	}
	t.Logf("generation 1 Ready with its volumes in %v", time.Since(start).Round(time.Millisecond))

	tr.deleteStatefulSet(ns, pods)
	tr.waitNothingMounted()
	tr.waitNoAttachments()
	t.Logf("generation 1 gone, unmounted and detached at %v", time.Since(start).Round(time.Millisecond))

	pods2 := tr.runStatefulSet(ns, 2)
	for _, p := range pods2 {
		if pv, _ := tr.pvOf(ns, "data-"+p.Name); pv != pvs[p.Name] {
			t.Errorf("pod %s got PV %s, not its claim's first %s", p.Name, pv, pvs[p.Name])
		}
		dir := filepath.Join(tr.data, "volumes", handles[p.Name])
		if got, want := readFile(t, filepath.Join(dir, "read-by-gen2")), p.Name+" gen1\n"; got != want {
			t.Errorf("pod %s of generation 2 read %q from its volume, want %q", p.Name, got, want)
		}
		if got, want := readFile(t, filepath.Join(dir, "written")), p.Name+" gen1\n"+p.Name+" gen2\n"; got != want {
			t.Errorf("pod %s's volume holds %q, want %q", p.Name, got, want)
		}
	}
	t.Logf("generation 2 Ready and read generation 1's data at %v", time.Since(start).Round(time.Millisecond))

	tr.deleteStatefulSet(ns, pods2)
	tr.waitNothingMounted()
	tr.waitNoAttachments()
	for _, p := range pods {
		if err := tr.cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx(t), "data-"+p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pods {
		tr.waitPVGone(pvs[p.Name], handles[p.Name])
	}
	t.Logf("StatefulSet flow done in %v", time.Since(start).Round(time.Millisecond))

	r := tr.nodeReport(off)
	for vol, calls := range r.ByVolume {
		checkLifecycle(t, vol, calls, true)
	}
	for _, p := range pods {
		key := "<handle " + ns + "/data-" + p.Name + ">"
		calls := r.ByVolume[key]
		var methods []string
		for _, c := range calls {
			methods = append(methods, c.Method)
		}
		// Two generations: each stages, publishes, unpublishes and unstages once.
		want := "NodeStageVolume NodePublishVolume NodeUnpublishVolume NodeUnstageVolume"
		if got := strings.Join(methods, " "); got != want+" "+want {
			t.Errorf("volume %s: calls %q, want %q twice", key, got, want)
		}
		if p.Name == "web-0" {
			t.Logf("the node's calls for web-0's volume, normalised:\n%s", sequence(calls))
		}
	}
	t.Logf("the node's calls without a volume: %v", r.Counts)
	tr.writeReport("statefulset", r, false)
}

// TestGenericEphemeral runs a pod with a generic ephemeral volume: the
// ephemeral volume controller makes its claim <pod>-<volume>, owned by the
// pod; the node mounts it; when the pod goes, the claim and its volume go.
func TestGenericEphemeral(t *testing.T) {
	tr := setup(t)
	ns := tr.namespace("csi-ephemeral")
	off := tr.callsOffset()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "eph", Namespace: ns}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr(int64(5)),
		Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: ptr(tr.class),
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("8Mi")}}}}}}}},
		Containers: []corev1.Container{tr.container("echo ephemeral > /scratch/hello", "/scratch/hello", corev1.VolumeMount{Name: "scratch", MountPath: "/scratch"})}}}
	if _, err := tr.cs.CoreV1().Pods(ns).Create(ctx(t), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := tr.waitPodReady(ns, "eph")
	pv, handle := tr.pvOf(ns, "eph-scratch")
	claim, err := tr.cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx(t), "eph-scratch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o := metav1.GetControllerOf(claim); o == nil || o.UID != p.UID {
		t.Errorf("claim eph-scratch is not controlled by pod eph: %+v", claim.OwnerReferences)
	}
	if target := tr.csiMountOf(p, pv); !isMounted(target) {
		t.Errorf("the ephemeral volume is not mounted at %s", target)
	}
	if got := readFile(t, filepath.Join(tr.data, "volumes", handle, "hello")); got != "ephemeral\n" {
		t.Errorf("the pod wrote %q, want %q", got, "ephemeral\n")
	}
	if err := tr.cs.CoreV1().Pods(ns).Delete(ctx(t), "eph", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tr.waitPodGone(ns, "eph")
	tr.waitNothingMounted()
	tr.waitNoAttachments()
	tr.eventually(2*time.Minute, "claim eph-scratch collected with its pod", func() (bool, string) {
		_, err := tr.cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx(t), "eph-scratch", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	tr.waitPVGone(pv, handle)
	r := tr.nodeReport(off)
	for vol, calls := range r.ByVolume {
		checkLifecycle(t, vol, calls, true)
	}
	t.Logf("the node's calls, normalised:\n%s", sequence(r.Calls))
	tr.writeReport("ephemeral", r, true)
}

// TestInline runs a pod with a CSI inline volume (the driver's
// volumeLifecycleModes include Ephemeral): published with no stage, the
// pod's attributes and csi.storage.k8s.io/ephemeral=true in its volume
// context, unpublished (its data removed by the driver) when the pod goes.
func TestInline(t *testing.T) {
	tr := setup(t)
	ns := tr.namespace("csi-inline")
	off := tr.callsOffset()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "inline", Namespace: ns}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr(int64(5)),
		Volumes: []corev1.Volume{{Name: "inl", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
			Driver: tr.driver, VolumeAttributes: map[string]string{"greeting": "hello"}}}}},
		Containers: []corev1.Container{tr.container("echo inline > /inl/hello", "/inl/hello", corev1.VolumeMount{Name: "inl", MountPath: "/inl"})}}}
	if _, err := tr.cs.CoreV1().Pods(ns).Create(ctx(t), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := tr.waitPodReady(ns, "inline")
	if target := tr.csiMountOf(p, "inl"); !isMounted(target) {
		t.Errorf("the inline volume is not mounted at %s", target)
	}
	r := tr.nodeReport(off)
	var publish *nodeCall
	for i, c := range r.Calls {
		if c.Method == "NodePublishVolume" {
			publish = &r.Calls[i]
		}
		if c.Method == "NodeStageVolume" {
			t.Errorf("an inline volume was staged: %v", c.Request)
		}
	}
	if publish == nil {
		t.Fatalf("no NodePublishVolume for the inline volume; calls:\n%s", sequence(r.Calls))
	}
	vc, _ := publish.Request["volume_context"].(map[string]any)
	if vc["csi.storage.k8s.io/ephemeral"] != "true" || vc["greeting"] != "hello" {
		t.Errorf("the inline volume's context is %v, want ephemeral=true and greeting=hello", vc)
	}
	ephDirs := func() []string {
		ents, _ := os.ReadDir(filepath.Join(tr.data, "ephemeral"))
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	if len(ephDirs()) != 1 {
		t.Errorf("the driver holds ephemeral volumes %v, want one", ephDirs())
	}
	if err := tr.cs.CoreV1().Pods(ns).Delete(ctx(t), "inline", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tr.waitPodGone(ns, "inline")
	tr.waitNothingMounted()
	if d := ephDirs(); len(d) != 0 {
		t.Errorf("ephemeral volumes left after the pod: %v", d)
	}
	r = tr.nodeReport(off)
	for vol, calls := range r.ByVolume {
		checkLifecycle(t, vol, calls, false)
	}
	t.Logf("the node's calls, normalised:\n%s", sequence(r.Calls))
	tr.writeReport("inline", r, true)
}

// TestCSINode checks what the node published for the driver after the
// registrar's handshake: the CSINode object lists the driver with the node
// ID it answered in NodeGetInfo.
func TestCSINode(t *testing.T) {
	tr := setup(t)
	var drivers []string
	var csiNode *storagev1.CSINode
	tr.eventually(time.Minute, "CSINode "+tr.node+" lists "+tr.driver, func() (bool, string) {
		n, err := tr.cs.StorageV1().CSINodes().Get(ctx(t), tr.node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		csiNode = n
		drivers = nil
		for _, d := range n.Spec.Drivers {
			drivers = append(drivers, d.Name+"="+d.NodeID)
			if d.Name == tr.driver {
				return d.NodeID == tr.node, fmt.Sprintf("node ID %q", d.NodeID)
			}
		}
		return false, fmt.Sprint(drivers)
	})
	node, err := tr.cs.CoreV1().Nodes().Get(context.Background(), tr.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Annotations["volumes.kubernetes.io/controller-managed-attach-detach"] != "true" {
		t.Errorf("node %s does not leave attaching to the attach/detach controller: annotations %v", tr.node, labels.Set(node.Annotations))
	}
	t.Logf("CSINode %s: %v", tr.node, drivers)

	// The registration's calls on the node socket since the driver
	// started: the registrar's GetPluginInfo, then the node's NodeGetInfo;
	// up to the first volume's call (a test that restarts the node, run
	// before, registers it again).
	all := tr.nodeReport(0)
	r := report{Node: tr.kind, ByVolume: map[string][]nodeCall{}, Counts: map[string]int{}}
	for _, c := range all.Calls {
		if _, ok := c.Request["volume_id"]; ok {
			break
		}
		if c.Method == "NodeGetInfo" || c.Method == "GetPluginInfo" || c.Method == "GetPluginCapabilities" || c.Method == "Probe" {
			r.Calls = append(r.Calls, c)
		}
	}
	r.Objects = map[string]any{"csinode.spec": tr.normalisedObject(csiNode.Spec)}
	if len(r.Calls) == 0 || r.Calls[len(r.Calls)-1].Method != "NodeGetInfo" {
		t.Errorf("no NodeGetInfo on the node socket; registration calls:\n%s", sequence(r.Calls))
	}
	t.Logf("registration calls on the node socket:\n%s", sequence(r.Calls))
	tr.writeReport("registration", r, true)
}
