package nodeapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
)

// signer is an API server with a CSR store: it issues (or denies) a
// request on its second read.
type signer struct {
	mu     sync.Mutex
	deny   bool
	csrs   map[string]*certificatesv1.CertificateSigningRequest
	reads  int
	caKey  *ecdsa.PrivateKey
	caCert *x509.Certificate
}

func newSigner(t *testing.T) *signer {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubelet-serving-ca"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	return &signer{csrs: map[string]*certificatesv1.CertificateSigningRequest{}, caKey: key, caCert: ca}
}

func (s *signer) CreateCertificateSigningRequest(_ context.Context, csr *certificatesv1.CertificateSigningRequest) (*certificatesv1.CertificateSigningRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := csr.DeepCopy()
	c.Name = csr.GenerateName + "1"
	s.csrs[c.Name] = c
	return c.DeepCopy(), nil
}

func (s *signer) GetCertificateSigningRequest(_ context.Context, name string) (*certificatesv1.CertificateSigningRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.csrs[name]
	s.reads++
	if s.reads == 2 {
		if s.deny {
			c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: "NotMine", Message: "no"})
		} else {
			b, _ := pem.Decode(c.Spec.Request)
			req, _ := x509.ParseCertificateRequest(b.Bytes)
			tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: req.Subject, DNSNames: req.DNSNames, IPAddresses: req.IPAddresses,
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour)}
			der, _ := x509.CreateCertificate(rand.Reader, tmpl, s.caCert, req.PublicKey, s.caKey)
			c.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		}
	}
	return c.DeepCopy(), nil
}

func TestServingCertificateFromCSR(t *testing.T) {
	s := newSigner(t)
	m := NewServingCertificates(s, "node-1", func() []corev1.NodeAddress {
		return []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.7"}, {Type: corev1.NodeHostName, Address: "node-1.example"}}
	})
	m.poll = time.Millisecond
	if _, err := m.GetCertificate(nil); err == nil {
		t.Error("a certificate before any was issued")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Request(ctx); err != nil {
		t.Fatal(err)
	}
	csr := s.csrs["csr-1"]
	if csr.Spec.SignerName != KubeletServingSigner || len(csr.Spec.Usages) != 2 ||
		csr.Spec.Usages[0] != certificatesv1.UsageDigitalSignature || csr.Spec.Usages[1] != certificatesv1.UsageServerAuth {
		t.Errorf("CSR spec %+v", csr.Spec)
	}
	c, err := m.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Leaf.Subject.CommonName != "system:node:node-1" || c.Leaf.Subject.Organization[0] != "system:nodes" ||
		c.Leaf.DNSNames[0] != "node-1.example" || c.Leaf.IPAddresses[0].String() != "10.0.0.7" {
		t.Errorf("issued %v %v %v", c.Leaf.Subject, c.Leaf.DNSNames, c.Leaf.IPAddresses)
	}
	// It serves TLS: a client trusting the signer's CA verifies it.
	pool := x509.NewCertPool()
	pool.AddCert(s.caCert)
	if _, err := c.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "node-1.example"}); err != nil {
		t.Error(err)
	}
	if at := RenewAt(c.Leaf, 0); !at.Equal(c.Leaf.NotBefore.Add(time.Duration(0.7 * float64(c.Leaf.NotAfter.Sub(c.Leaf.NotBefore))))) {
		t.Errorf("renew at %v", at)
	}
}

func TestServingCertificateDenied(t *testing.T) {
	s := newSigner(t)
	s.deny = true
	m := NewServingCertificates(s, "node-1", func() []corev1.NodeAddress { return []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n"}} })
	m.poll = time.Millisecond
	if err := m.Request(context.Background()); !errors.Is(err, ErrCertificateDenied) {
		t.Errorf("denied CSR: %v", err)
	}
	m = NewServingCertificates(s, "node-1", func() []corev1.NodeAddress { return nil })
	if err := m.Request(context.Background()); err == nil {
		t.Error("a CSR without addresses")
	}
}

func TestSelfSignedCertificate(t *testing.T) {
	dir := t.TempDir()
	c, err := SelfSignedCertificate(dir, "node-1")
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(c.Certificate[0])
	if len(c.Certificate) != 2 || leaf.DNSNames[0] != "node-1" {
		t.Errorf("chain of %d, names %v", len(c.Certificate), leaf.DNSNames)
	}
	if fi, err := os.Stat(filepath.Join(dir, "kubelet.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file %v %v", fi, err)
	}
	if _, err := SelfSignedCertificate(t.TempDir(), ""); !errors.Is(err, ErrConfig) {
		t.Errorf("no host: %v, want ErrConfig", err)
	}
	again, err := SelfSignedCertificate(dir, "node-1")
	if err != nil || string(again.Certificate[0]) != string(c.Certificate[0]) {
		t.Errorf("second call made a new certificate (%v)", err)
	}
	if _, err := tls.X509KeyPair(mustRead(t, filepath.Join(dir, "kubelet.crt")), mustRead(t, filepath.Join(dir, "kubelet.key"))); err != nil {
		t.Error(err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
