package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	fakemount "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/runtime/fake"
)

func selfSignedCA(t *testing.T, cn string) *x509.Certificate {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A clusterTrustBundle projection against a real kube-apiserver v1.37.2
// with the node's credentials: discovery lists the v1 API, the Node
// authorizer lets the node list and watch ClusterTrustBundles, and the
// pod's file holds the certificates of the signer's selected bundles,
// each once, which crypto/x509 parses back.
func TestAgentClusterTrustBundleAgainstAPIServer(t *testing.T) {
	t.Parallel() // a cluster of its own: its start overlaps the others'
	const node = "podstart-node"
	c, admin := startCluster(t, node)
	ctx := context.Background()
	pemOf := func(cs ...*x509.Certificate) string {
		var s string
		for _, c := range cs {
			s += string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
		}
		return s
	}
	old, cur, other := selfSignedCA(t, "old"), selfSignedCA(t, "current"), selfSignedCA(t, "other")
	for _, b := range []*certificatesv1.ClusterTrustBundle{
		{ObjectMeta: metav1.ObjectMeta{Name: "example.com:podstart-ca:a", Labels: map[string]string{"live": "yes"}},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/podstart-ca", TrustBundle: pemOf(cur, old)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "example.com:podstart-ca:b", Labels: map[string]string{"live": "yes"}},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/podstart-ca", TrustBundle: pemOf(old)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "example.com:podstart-ca:retired"},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/podstart-ca", TrustBundle: pemOf(other)}},
	} {
		if _, err := admin.CertificatesV1().ClusterTrustBundles().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	root := t.TempDir()
	runAgent(t, Config{Client: clientFor(t, c.NodeKubeconfig), Runtime: fake.New(), NodeName: node, RootDir: root,
		PodLogsDir: filepath.Join(root, "logs"), Clock: clock.RealClock{}, Mounter: fakemount.New()})

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "trusting", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.35",
				VolumeMounts: []corev1.VolumeMount{{Name: "cas", MountPath: "/etc/cas"}}}},
			Volumes: []corev1.Volume{{Name: "cas", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{
					SignerName: ptr.To("example.com/podstart-ca"), Path: "ca.pem",
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"live": "yes"}}}}}}}}}},
	}
	created, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod with a trust bundle Running", func() bool {
		got, err := admin.CoreV1().Pods("default").Get(ctx, "trusting", metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodRunning
	})
	data, err := os.ReadFile(filepath.Join(root, "pods", string(created.UID), "volumes", "kubernetes.io~projected", "cas", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, c.Subject.CommonName)
	}
	if len(names) != 2 || names[0] == names[1] || (names[0] != "old" && names[0] != "current") || (names[1] != "old" && names[1] != "current") {
		t.Errorf("ca.pem holds %v, want current and old once each", names)
	}
	if err := admin.CoreV1().Pods("default").Delete(ctx, "trusting", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod object deleted by the agent", func() bool {
		_, err := admin.CoreV1().Pods("default").Get(ctx, "trusting", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
