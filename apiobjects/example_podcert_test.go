package apiobjects_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/apiobjects"
)

// signer is a PodCertificateClient in memory with a signer that issues
// every pending request when told to (a node agent adapts client-go's
// CertificatesV1().PodCertificateRequests instead; see
// examples/nodeagent).
type signer struct {
	key  ed25519.PrivateKey
	ca   *x509.Certificate
	pcrs map[string]*certificatesv1.PodCertificateRequest
}

func newSigner() *signer {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "example CA"}, IsCA: true,
		BasicConstraintsValid: true, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	ca, _ := x509.ParseCertificate(der)
	return &signer{key: key, ca: ca, pcrs: map[string]*certificatesv1.PodCertificateRequest{}}
}

func (s *signer) CreatePodCertificateRequest(_ context.Context, req *certificatesv1.PodCertificateRequest) (*certificatesv1.PodCertificateRequest, error) {
	pcr := req.DeepCopy()
	pcr.Name = fmt.Sprintf("%s%d", req.GenerateName, len(s.pcrs)+1)
	s.pcrs[pcr.Name] = pcr
	return pcr.DeepCopy(), nil
}

func (s *signer) GetPodCertificateRequest(_ context.Context, _, name string) (*certificatesv1.PodCertificateRequest, error) {
	if pcr, ok := s.pcrs[name]; ok {
		return pcr.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(certificatesv1.Resource("podcertificaterequests"), name)
}

func (s *signer) GetServiceAccount(_ context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: "sa-uid"}}, nil
}

// issueAll signs each request's public key (from its stub PKCS#10) for
// an hour, with the pod's name as the subject.
func (s *signer) issueAll() {
	for _, pcr := range s.pcrs {
		csr, _ := x509.ParseCertificateRequest(pcr.Spec.StubPKCS10Request)
		now := time.Now()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: pcr.Spec.PodName + "." + pcr.Namespace},
			NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour)}
		der, _ := x509.CreateCertificate(rand.Reader, tmpl, s.ca, csr.PublicKey, s.key)
		pcr.Status.CertificateChain = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
		pcr.Status.NotBefore, pcr.Status.NotAfter = &metav1.Time{Time: tmpl.NotBefore}, &metav1.Time{Time: tmpl.NotAfter}
		pcr.Status.BeginRefreshAt = &metav1.Time{Time: now.Add(45 * time.Minute)}
		pcr.Status.Conditions = []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue}}
	}
}

// A pod's podCertificate projection: pending until the signer issues the
// request the manager made, then the key and chain the volume holds.
// A node agent passes the manager to NewVolumes (WithPodCertificates),
// runs its Run loop to renew certificates, and calls its ForgetPod
// (through Volumes.ForgetPod) when a pod leaves.
func ExamplePodCertificates() {
	ctx := context.Background()
	s := newSigner()
	certs := apiobjects.NewPodCertificates(s, "node1", "node1-uid")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "web-uid"},
		Spec: corev1.PodSpec{ServiceAccountName: "default", Volumes: []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{
			Projected: &corev1.ProjectedVolumeSource{DefaultMode: new(int32(0o644)), Sources: []corev1.VolumeProjection{{
				PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/workload", KeyType: "ED25519", CredentialBundlePath: "credentials.pem"},
			}}}}}}},
	}

	_, _, err := certs.CredentialBundle(ctx, pod, "tls", 0)
	fmt.Println(err, errors.Is(err, apiobjects.ErrPodCertificatePending))
	req := s.pcrs["req-1"]
	fmt.Println(req.Spec.SignerName, req.Spec.PodName, req.Spec.ServiceAccountUID, req.Spec.NodeName)

	s.issueAll()
	files, err := apiobjects.PodCertificatePayload(ctx, certs, pod, "tls", 0, pod.Spec.Volumes[0].Projected.Sources[0].PodCertificate, 0o644, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	rest := files["credentials.pem"].Data
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			leaf, _ := x509.ParseCertificate(b.Bytes)
			fmt.Println(b.Type, leaf.Subject.CommonName)
		} else {
			fmt.Println(b.Type)
		}
	}
	// Output:
	// credential bundle is not issued yet true
	// example.com/workload web sa-uid node1
	// PRIVATE KEY
	// CERTIFICATE web.shop
}
