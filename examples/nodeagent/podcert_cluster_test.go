package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	fakemount "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/runtime/fake"
)

const testSignerName = "example.com/podstart-test-signer"

// testSigner issues every PodCertificateRequest for testSignerName it
// sees through a watch, as a signer controller would: a leaf for the
// request's public key, signed by its CA, valid for an hour.
type testSigner struct {
	key *ecdsa.PrivateKey
	ca  *x509.Certificate
}

func newTestSigner(t *testing.T) *testSigner {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "podstart test signer"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testSigner{key: key, ca: ca}
}

// run signs until ctx ends; errors go to errs (the test reads them when
// it fails to see the certificate).
func (s *testSigner) run(ctx context.Context, c kubernetes.Interface, errs chan<- error) {
	w, err := c.CertificatesV1().PodCertificateRequests("").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		errs <- err
		return
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			pcr, isPCR := ev.Object.(*certificatesv1.PodCertificateRequest)
			if !isPCR || ev.Type != watch.Added || pcr.Spec.SignerName != testSignerName || len(pcr.Status.Conditions) != 0 {
				continue
			}
			if err := s.issue(ctx, c, pcr); err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		}
	}
}

func (s *testSigner) issue(ctx context.Context, c kubernetes.Interface, pcr *certificatesv1.PodCertificateRequest) error {
	csr, err := x509.ParseCertificateRequest(pcr.Spec.StubPKCS10Request)
	if err != nil {
		return err
	}
	// API times have second precision: the leaf's must match them.
	now := time.Now().Truncate(time.Second)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: pcr.Spec.PodName},
		NotBefore: now, NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.ca, csr.PublicKey, s.key)
	if err != nil {
		return err
	}
	pcr.Status.CertificateChain = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})) +
		string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.ca.Raw}))
	pcr.Status.NotBefore = ptr.To(metav1.NewTime(tmpl.NotBefore))
	pcr.Status.BeginRefreshAt = ptr.To(metav1.NewTime(tmpl.NotBefore.Add(30 * time.Minute)))
	pcr.Status.NotAfter = ptr.To(metav1.NewTime(tmpl.NotAfter))
	pcr.Status.Conditions = []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeIssued,
		Status: metav1.ConditionTrue, Reason: "Issued", Message: "issued by the test signer", LastTransitionTime: metav1.NewTime(now)}}
	_, err = c.CertificatesV1().PodCertificateRequests(pcr.Namespace).UpdateStatus(ctx, pcr, metav1.UpdateOptions{})
	return err
}

// A pod with a podCertificate projection, on the agent against a real
// kube-apiserver v1.37.2 with the node's own credentials (the Node
// authorizer and NodeRestriction check the request's pod, service
// account and node): the agent asks for a certificate, a signer (this
// test, through a watch) issues it, the pod starts, and its volume holds
// the key and the chain, which verify against the signer's CA.
func TestAgentPodCertificateAgainstAPIServer(t *testing.T) {
	t.Parallel() // a cluster of its own: its start overlaps the others'
	const node = "podstart-node"
	c, admin := startCluster(t, node)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signer := newTestSigner(t)
	signerErrs := make(chan error, 1)
	signerDone := make(chan struct{})
	go func() { defer close(signerDone); signer.run(ctx, admin, signerErrs) }()
	defer func() { cancel(); <-signerDone }()

	root := t.TempDir()
	runAgent(t, Config{Client: clientFor(t, c.NodeKubeconfig), Runtime: fake.New(), NodeName: node, RootDir: root,
		PodLogsDir: filepath.Join(root, "logs"), Clock: clock.RealClock{}, Mounter: fakemount.New()})

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "mtls", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.35",
				VolumeMounts: []corev1.VolumeMount{{Name: "identity", MountPath: "/var/run/identity"}}}},
			Volumes: []corev1.Volume{{Name: "identity", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{PodCertificate: &corev1.PodCertificateProjection{
					SignerName: testSignerName, KeyType: "ECDSAP256",
					CredentialBundlePath: "credentials.pem", KeyPath: "tls.key", CertificateChainPath: "tls.crt"}}}}}}}},
	}
	created, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	eventually(t, "pod with a pod certificate Running", func() bool {
		select {
		case err := <-signerErrs:
			t.Fatalf("signer: %v", err)
		default:
		}
		got, err = admin.CoreV1().Pods("default").Get(ctx, "mtls", metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodRunning
	})

	pcrs, err := admin.CertificatesV1().PodCertificateRequests("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pcrs.Items) != 1 {
		t.Fatalf("%d PodCertificateRequests, want 1", len(pcrs.Items))
	}
	spec := pcrs.Items[0].Spec
	if spec.PodUID != created.UID || spec.NodeName != node || spec.ServiceAccountName != "default" || spec.ServiceAccountUID == "" || spec.NodeUID == "" {
		t.Errorf("request spec %+v", spec)
	}

	dir := filepath.Join(root, "pods", string(created.UID), "volumes", "kubernetes.io~projected", "identity")
	read := func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	keyPEM, chainPEM, bundle := read("tls.key"), read("tls.crt"), read("credentials.pem")
	if string(bundle) != string(keyPEM)+string(chainPEM) {
		t.Error("credentials.pem is not the key then the chain")
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil || kb.Type != "PRIVATE KEY" {
		t.Fatal("tls.key is not a PEM PRIVATE KEY")
	}
	priv, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	lb, rest := pem.Decode(chainPEM)
	leaf, err := x509.ParseCertificate(lb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if cb, _ := pem.Decode(rest); cb == nil || string(cb.Bytes) != string(signer.ca.Raw) {
		t.Error("the chain does not end with the signer's CA")
	}
	if ec, ok := priv.(*ecdsa.PrivateKey); !ok || ec.Curve != elliptic.P256() || !ec.PublicKey.Equal(leaf.PublicKey) {
		t.Errorf("key %T does not match the leaf", priv)
	}
	pool := x509.NewCertPool()
	pool.AddCert(signer.ca)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("leaf: %v", err)
	}
	if leaf.Subject.CommonName != "mtls" {
		t.Errorf("leaf for %q", leaf.Subject.CommonName)
	}
	if err := admin.CoreV1().Pods("default").Delete(ctx, "mtls", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod object deleted by the agent", func() bool {
		_, err := admin.CoreV1().Pods("default").Get(ctx, "mtls", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
