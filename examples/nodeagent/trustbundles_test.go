package main

import (
	"context"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/defaults"
	"github.com/podstart/podstart/podsync"
)

func trustBundlePod(name string, projs ...corev1.ClusterTrustBundleProjection) *corev1.Pod {
	pod := testPod(name)
	var sources []corev1.VolumeProjection
	for i := range projs {
		sources = append(sources, corev1.VolumeProjection{ClusterTrustBundle: &projs[i]})
	}
	pod.Spec.Volumes = []corev1.Volume{{Name: "cas", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}}}
	defaults.Pod(pod)
	return pod
}

func certPEM(der string) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte(der)}))
}

// A pod's clusterTrustBundle projections are read from an informer the
// agent starts once discovery says the API server serves
// certificates.k8s.io/v1 ClusterTrustBundles: by name, and by signer and
// labels (the other signer's bundle and the unlabelled one left out).
func TestClusterTrustBundleVolume(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	h.client.Resources = []*metav1.APIResourceList{{GroupVersion: "certificates.k8s.io/v1",
		APIResources: []metav1.APIResource{{Name: "clustertrustbundles", Kind: "ClusterTrustBundle"}}}}
	for _, b := range []*certificatesv1.ClusterTrustBundle{
		{ObjectMeta: metav1.ObjectMeta{Name: "example.com:s:one", Labels: map[string]string{"trust": "yes"}},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/s", TrustBundle: certPEM("b") + certPEM("a")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "example.com:s:two"},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/s", TrustBundle: certPEM("c")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "example.com:t:one", Labels: map[string]string{"trust": "yes"}},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/t", TrustBundle: certPEM("d")}},
	} {
		if _, err := h.client.CertificatesV1().ClusterTrustBundles().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := trustBundlePod("web",
		corev1.ClusterTrustBundleProjection{Name: ptr.To("example.com:s:two"), Path: "by-name.pem"},
		corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/s"), Path: "by-signer.pem",
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"trust": "yes"}}})
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod Running", func() bool {
		p, ok := h.get(t, "web")
		return ok && p.Status.Phase == corev1.PodRunning
	})
	dir := filepath.Join(podsync.PodDir(h.root, pod), "volumes", "kubernetes.io~projected", "cas")
	for file, want := range map[string]string{"by-name.pem": certPEM("c"), "by-signer.pem": certPEM("a") + certPEM("b")} {
		if b, err := os.ReadFile(filepath.Join(dir, file)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", file, b, err, want)
		}
	}
}

// Without the API (discovery does not list it), the projection fails the
// volume with kubelet's message, as its NoopManager does, even when
// optional: the pod does not start without its trust anchors.
func TestClusterTrustBundleNotServed(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	pod := trustBundlePod("web", corev1.ClusterTrustBundleProjection{Name: ptr.To("b"), Path: "ca.pem", Optional: ptr.To(true)})
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const want = `MountVolume.SetUp failed for volume "cas" : ClusterTrustBundle projection is not supported in static kubelet mode`
	eventually(t, "a FailedMount event", func() bool {
		evs, err := h.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.Reason == "FailedMount" && e.InvolvedObject.Name == "web" && e.Message == want {
				return true
			}
		}
		return false
	})
	if p, ok := h.get(t, "web"); ok && p.Status.Phase == corev1.PodRunning {
		t.Errorf("pod Running without its volume")
	}
}
