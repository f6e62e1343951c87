package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime/fake"
)

// Kubelet's image pull records (KubeletEnsureSecretPulledImages, on by
// default): a private image a pod pulled with its secret is not handed to
// a pod without that secret because it is present; the agent pulls it with
// that pod's credentials (none), which the registry refuses. Records are
// kept in <root-dir>/image_manager.
func TestPulledImageNeedsThePodsCredentials(t *testing.T) {
	h := start(t, fake.WithRegistryAuth("registry.example.com", "robot", "hunter2"))
	ctx := context.Background()
	cfg := `{"auths":{"registry.example.com":{"username":"robot","password":"hunter2"}}}`
	objs := []apiruntime.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: "default"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(cfg)}},
	}
	for _, o := range objs {
		if err := h.client.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	const image = "registry.example.com/team/app:1.0"
	owner := testPod("owner")
	owner.Spec.Containers[0].Image = image
	owner.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	owner.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, owner, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pod with the secret Running", func() bool {
		p, ok := h.get(t, "owner")
		return ok && p.Status.Phase == corev1.PodRunning
	})
	pulled, err := os.ReadDir(filepath.Join(h.root, "image_manager", "pulled"))
	if err != nil || len(pulled) != 1 {
		t.Fatalf("pulled records: %v, %v", pulled, err)
	}
	pulls := func() int {
		n := 0
		for _, c := range h.rt.Calls() {
			if r, ok := c.Request.(*runtimeapi.PullImageRequest); ok && r.GetImage().GetImage() == image {
				n++
			}
		}
		return n
	}
	before := pulls()

	other := testPod("other")
	other.Spec.Containers[0].Image = image
	other.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pod without the secret waiting in ErrImagePull", func() bool {
		p, ok := h.get(t, "other")
		if !ok || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return false
		}
		r := p.Status.ContainerStatuses[0].State.Waiting.Reason
		return r == "ErrImagePull" || r == "ImagePullBackOff"
	})
	if p, _ := h.get(t, "other"); p.Status.Phase == corev1.PodRunning {
		t.Error("the pod without the secret runs the private image")
	}
	if n := pulls(); n <= before {
		t.Errorf("no pull with the second pod's credentials (%d pulls before, %d after)", before, n)
	}
}
