package csi

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// blockPod is a pod using claim as the raw device /dev/xvda: it runs
// script (busybox dd on the device) and is Ready once /tmp/ready exists.
func (tr *tier) blockPod(ns, name, claim, script string) *corev1.Pod {
	c := tr.container(script+"; touch /tmp/ready", "/tmp/ready")
	c.VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr(int64(5)),
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		Containers: []corev1.Container{c}}}
}

// loopsOf lists the loop devices (losetup -a) whose backing file is
// under one of dirs.
func loopsOf(t *testing.T, dirs ...string) []string {
	t.Helper()
	out, err := exec.Command("losetup", "-a").CombinedOutput()
	if err != nil {
		t.Fatalf("losetup -a: %v: %s", err, out)
	}
	var left []string
	for _, line := range strings.Split(string(out), "\n") {
		for _, d := range dirs {
			if strings.Contains(line, d+"/") {
				left = append(left, line)
			}
		}
	}
	return left
}

// TestBlock runs a pod with a block PVC (volumeMode: Block, used in
// volumeDevices): it writes to the raw device with dd; it is deleted (the
// device unmapped, unpublished and unstaged: nothing mounted, no loop
// device, no directory of the volume left) and a second pod of the same
// claim reads the first one's bytes back and adds its own. The node's CSI
// calls are kubelet's, compared with its report.
func TestBlock(t *testing.T) {
	tr := setup(t)
	ns := tr.namespace("csi-block")
	off := tr.callsOffset()
	start := time.Now()
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "disk", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr(tr.class), VolumeMode: ptr(corev1.PersistentVolumeBlock),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}}}}
	if _, err := tr.cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx(t), claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gens := []struct{ name, script, want string }{
		{"blk-1", "printf block-gen1 | dd of=/dev/xvda bs=10 count=1 conv=fsync", "block-gen1"},
		{"blk-2", `[ "$(dd if=/dev/xvda bs=10 count=1 2>/dev/null)" = block-gen1 ]; printf block-gen2 | dd of=/dev/xvda bs=10 seek=1 count=1 conv=fsync`, "block-gen1block-gen2"},
	}
	var pv, handle string
	for _, g := range gens {
		if _, err := tr.cs.CoreV1().Pods(ns).Create(ctx(t), tr.blockPod(ns, g.name, "disk", g.script), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := tr.waitPodReady(ns, g.name)
		pv, handle = tr.pvOf(ns, "disk")
		podLink := filepath.Join(tr.root, "pods", string(p.UID), "volumeDevices", "kubernetes.io~csi", pv)
		if target, err := os.Readlink(podLink); err != nil {
			t.Errorf("pod %s: no device link at %s: %v", g.name, podLink, err)
		} else if st, err := os.Stat(target); err != nil || st.Mode()&os.ModeDevice == 0 {
			t.Errorf("pod %s: %s → %s is not a device (%v)", g.name, podLink, target, err)
		}
		global := filepath.Join(tr.root, "plugins", "kubernetes.io", "csi", "volumeDevices", pv, "dev", string(p.UID))
		if !isMounted(global) {
			t.Errorf("pod %s: the device is not bind-mounted at %s", g.name, global)
		}
		if l := loopsOf(t, tr.root); len(l) != 1 {
			t.Errorf("pod %s: loop devices on the node's map paths %q, want the one holding the device", g.name, l)
		}
		img, err := os.ReadFile(filepath.Join(tr.data, "volumes", handle, "disk.img"))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(bytes.TrimRight(img[:20], "\x00")); got != g.want {
			t.Errorf("pod %s: the device holds %q, want %q", g.name, got, g.want)
		}
		t.Logf("pod %s Ready, wrote its bytes, at %v", g.name, time.Since(start).Round(time.Millisecond))
		if err := tr.cs.CoreV1().Pods(ns).Delete(ctx(t), g.name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		tr.waitPodGone(ns, g.name)
		tr.waitNothingMounted()
		tr.waitNoAttachments()
		tr.eventually(time.Minute, "no loop device and no directory of "+pv+" left", func() (bool, string) {
			var left []string
			left = append(left, loopsOf(t, tr.root, tr.data)...)
			devs := filepath.Join(tr.root, "plugins", "kubernetes.io", "csi", "volumeDevices")
			for _, p := range []string{filepath.Join(devs, "staging", pv), filepath.Join(devs, "publish", pv), filepath.Join(devs, pv),
				filepath.Join(tr.root, "pods", string(p.UID), "volumeDevices")} {
				if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
					left = append(left, fmt.Sprintf("%s (%v)", p, err))
				}
			}
			return len(left) == 0, strings.Join(left, ", ")
		})
		t.Logf("pod %s gone, unmapped, unstaged and detached at %v", g.name, time.Since(start).Round(time.Millisecond))
	}
	if err := tr.cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx(t), "disk", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tr.waitPVGone(pv, handle)

	r := tr.nodeReport(off)
	for vol, calls := range r.ByVolume {
		checkLifecycle(t, vol, calls, true)
	}
	t.Logf("the node's calls, normalised:\n%s", sequence(r.Calls))
	tr.writeReport("block", r, true)
}
