package main

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/defaults"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
)

// A running pod's Secret, ConfigMap and downward API volumes follow their
// objects and the pod, as kubelet's remount at each sync makes them
// (issue 36's conformance specs): a changed Secret, an optional Secret
// created after the pod started, a changed ConfigMap, new labels. The
// agent watches the objects and wakes the pod; nothing restarts.
func TestVolumesFollowObjectsInRunningPod(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	secrets, configMaps := h.client.CoreV1().Secrets("default"), h.client.CoreV1().ConfigMaps("default")
	if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"}, Data: map[string][]byte{"data-1": []byte("value-1")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf", Namespace: "default"}, Data: map[string]string{"data-1": "value-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := testPod("refresh")
	pod.Labels = map[string]string{"key1": "value1"}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
		{Name: "later", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "later", Optional: ptr.To(true)}}},
		{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}},
		{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
	}
	defaults.Pod(pod)
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod Running", func() bool {
		p, ok := h.get(t, "refresh")
		return ok && p.Status.Phase == corev1.PodRunning
	})
	vdir := filepath.Join(podsync.PodDir(h.root, pod), "volumes")
	file := func(path string) string {
		b, err := os.ReadFile(filepath.Join(vdir, path))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	wait := func(path, want string) {
		t.Helper()
		eventually(t, path+" = "+want, func() bool { return file(path) == want })
	}
	wait("kubernetes.io~secret/creds/data-1", "value-1")

	if _, err := secrets.Update(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"}, Data: map[string][]byte{"data-1": []byte("value-2")}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("kubernetes.io~secret/creds/data-1", "value-2")
	if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: "default"}, Data: map[string][]byte{"data-3": []byte("value-3")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("kubernetes.io~secret/later/data-3", "value-3")
	if _, err := configMaps.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf", Namespace: "default"}, Data: map[string]string{"data-1": "value-2"}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("kubernetes.io~configmap/conf/data-1", "value-2")
	if err := secrets.Delete(ctx, "later", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("kubernetes.io~secret/later/data-3", "<open "+filepath.Join(vdir, "kubernetes.io~secret/later/data-3")+": no such file or directory>")

	p, _ := h.get(t, "refresh")
	p.Labels["key3"] = "value3"
	if _, err := h.client.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("kubernetes.io~downward-api/info/labels", "key1=\"value1\"\nkey3=\"value3\"")
	if n := h.rt.CallCount("StartContainer"); n != 1 {
		t.Fatalf("%d container starts, want 1", n)
	}
}

// objectWatches watches what its pods refer to while they do, reads from
// the watch once it has listed (a missing object is kubelet's NotFound),
// and reports a change by the object's name.
func TestObjectWatches(t *testing.T) {
	client := newFakeClientset()
	ctx := context.Background()
	var mu sync.Mutex
	var changed []podworker.ObjectRef
	o := newObjectWatches(apiObjects{client}, func(r podworker.ObjectRef) {
		mu.Lock()
		defer mu.Unlock()
		changed = append(changed, r)
	})
	defer o.shutdown()
	seen := func(name string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range changed {
			if r.Name == name {
				return true
			}
		}
		return false
	}
	a := testPod("a")
	a.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
	b := a.DeepCopy()
	b.UID = "b-uid"
	o.setPod(a)
	o.setPod(b)
	ref := podworker.ObjectRef{Kind: podworker.KindSecret, Namespace: "default", Name: "s"}
	eventually(t, "the watch listed", func() bool { _, found := o.cached(ref); return found })
	if _, err := o.GetSecret(ctx, "default", "s"); !apierrors.IsNotFound(err) || err.Error() != `secret "s" not found` {
		t.Fatalf("missing Secret: %v", err)
	}
	if _, err := client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}, Data: map[string][]byte{"k": []byte("v")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the creation reported", func() bool { return seen("s") })
	if s, err := o.GetSecret(ctx, "default", "s"); err != nil || string(s.Data["k"]) != "v" {
		t.Fatalf("GetSecret: %v, %v", s, err)
	}
	o.forgetPod(a.UID)
	if _, found := o.cached(ref); !found {
		t.Fatal("the watch stopped while pod b still refers to the Secret")
	}
	b.Spec.Volumes = nil
	o.setPod(b)
	if _, found := o.cached(ref); found {
		t.Fatal("the watch still runs with no pod referring to the Secret")
	}
	// Without a watch, the API server answers.
	if s, err := o.GetSecret(ctx, "default", "s"); err != nil || string(s.Data["k"]) != "v" {
		t.Fatalf("GetSecret without a watch: %v, %v", s, err)
	}
}
