package nodeapi

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	mathrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// KubeletServingSigner is the signer of kubelets' serving certificates.
const KubeletServingSigner = "kubernetes.io/kubelet-serving"

// ErrCertificateDenied: the CertificateSigningRequest was denied or
// failed.
var ErrCertificateDenied = errors.New("nodeapi: certificate signing request denied")

// SelfSignedCertificate is kubelet's default serving certificate (no
// tlsCertFile and no serverTLSBootstrap): <dir>/kubelet.crt and
// kubelet.key, read if both exist, else made as kubelet makes them (an
// RSA 2048 CA "<host>-ca@<unix time>" and a certificate "<host>@<unix
// time>" it signs for host, valid a year, the file holding both) and
// written with mode 0600 for the key.
func SelfSignedCertificate(dir, host string) (tls.Certificate, error) {
	if host == "" || dir == "" {
		return tls.Certificate{}, fmt.Errorf("%w: a self-signed certificate needs a host and a directory", ErrConfig)
	}
	crt, key := filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key")
	if c, err := tls.LoadX509KeyPair(crt, key); err == nil {
		return c, nil
	}
	now := time.Now()
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return tls.Certificate{}, err
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: fmt.Sprintf("%s-ca@%d", host, now.Unix())},
		NotBefore: now.UTC(), NotAfter: now.Add(365 * 24 * time.Hour).UTC(), KeyUsage: x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true, IsCA: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return tls.Certificate{}, err
	}
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: fmt.Sprintf("%s@%d", host, now.Unix())},
		NotBefore: now.UTC(), NotAfter: now.Add(365 * 24 * time.Hour).UTC(), KeyUsage: x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	certPEM := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})...)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return tls.Certificate{}, err
	}
	if err := os.WriteFile(crt, certPEM, 0o644); err != nil {
		return tls.Certificate{}, err
	}
	if err := os.WriteFile(key, keyPEM, 0o600); err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// CSRClient creates and reads CertificateSigningRequests (client-go's
// CertificatesV1().CertificateSigningRequests() fits).
type CSRClient interface {
	CreateCertificateSigningRequest(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) (*certificatesv1.CertificateSigningRequest, error)
	GetCertificateSigningRequest(ctx context.Context, name string) (*certificatesv1.CertificateSigningRequest, error)
}

// ServingCertificates is kubelet's serving certificate manager with
// serverTLSBootstrap: a key made on the node (ECDSA P-256), a
// CertificateSigningRequest to the kubernetes.io/kubelet-serving signer
// for "system:node:<name>" in "system:nodes" with the node's addresses,
// usages digital signature and server auth; the certificate once issued
// (someone must approve it, as for kubelet), renewed at a random point
// between 70% and 90% of its life. GetCertificate serves it to TLS.
type ServingCertificates struct {
	client   CSRClient
	nodeName string
	addrs    func() []corev1.NodeAddress
	clock    clock.WithTicker
	poll     time.Duration

	mu   sync.Mutex
	cert *tls.Certificate
}

// NewServingCertificates returns a manager for nodeName's serving
// certificate, its names from addrs (the node's status addresses:
// hostnames become DNS names, IPs IP addresses).
func NewServingCertificates(client CSRClient, nodeName string, addrs func() []corev1.NodeAddress) *ServingCertificates {
	return &ServingCertificates{client: client, nodeName: nodeName, addrs: addrs, clock: clock.RealClock{}, poll: time.Second}
}

// Request asks for a certificate and waits until it is issued, denied
// (ErrCertificateDenied) or ctx ends.
func (m *ServingCertificates) Request(ctx context.Context) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + m.nodeName, Organization: []string{"system:nodes"}}}
	for _, a := range m.addrs() {
		switch a.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			tmpl.DNSNames = appendNew(tmpl.DNSNames, a.Address)
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			if ip := net.ParseIP(a.Address); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
		}
	}
	if len(tmpl.DNSNames) == 0 && len(tmpl.IPAddresses) == 0 {
		return fmt.Errorf("nodeapi: no addresses for node %q's serving certificate", m.nodeName)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return err
	}
	csr, err := m.client.CreateCertificateSigningRequest(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: KubeletServingSigner,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
		},
	})
	if err != nil {
		return fmt.Errorf("creating the serving CertificateSigningRequest: %w", err)
	}
	for {
		for _, c := range csr.Status.Conditions {
			if (c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed) && c.Status != corev1.ConditionFalse {
				return fmt.Errorf("%w: %s %s: %s", ErrCertificateDenied, csr.Name, c.Reason, c.Message)
			}
		}
		if len(csr.Status.Certificate) > 0 {
			return m.install(csr.Status.Certificate, key)
		}
		t := m.clock.NewTimer(m.poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
		if csr, err = m.client.GetCertificateSigningRequest(ctx, csr.Name); err != nil {
			return fmt.Errorf("reading CertificateSigningRequest: %w", err)
		}
	}
}

func appendNew(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

func (m *ServingCertificates) install(chainPEM []byte, key crypto.Signer) error {
	var chain [][]byte
	for rest := chainPEM; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			chain = append(chain, b.Bytes)
		}
	}
	if len(chain) == 0 {
		return errors.New("nodeapi: the issued certificate holds no PEM certificate")
	}
	leaf, err := x509.ParseCertificate(chain[0])
	if err != nil {
		return err
	}
	if !leaf.PublicKey.(*ecdsa.PublicKey).Equal(key.Public()) {
		return errors.New("nodeapi: the issued certificate is not for the requested key")
	}
	m.mu.Lock()
	m.cert = &tls.Certificate{Certificate: chain, PrivateKey: key, Leaf: leaf}
	m.mu.Unlock()
	return nil
}

// GetCertificate is tls.Config.GetCertificate: the current certificate.
func (m *ServingCertificates) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cert == nil {
		return nil, errors.New("nodeapi: no serving certificate yet")
	}
	return m.cert, nil
}

// RenewAt is when kubelet's manager renews a certificate: a random point
// between 70% and 90% of its validity.
func RenewAt(c *x509.Certificate, r float64) time.Time {
	life := c.NotAfter.Sub(c.NotBefore)
	return c.NotBefore.Add(time.Duration(float64(life) * (0.7 + 0.2*r)))
}

// Run renews the certificate from RenewAt until ctx ends, retrying a
// failed request after a back-off (kubelet's: from 2 s, doubling to 5
// minutes). Request must have succeeded once.
func (m *ServingCertificates) Run(ctx context.Context) {
	backoff := 2 * time.Second
	for {
		m.mu.Lock()
		leaf := m.cert.Leaf
		m.mu.Unlock()
		wait := RenewAt(leaf, mathrand.Float64()).Sub(m.clock.Now())
		for {
			if wait > 0 {
				t := m.clock.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C():
				}
			}
			if err := m.Request(ctx); err == nil {
				backoff = 2 * time.Second
				break
			}
			if ctx.Err() != nil {
				return
			}
			wait, backoff = backoff, min(2*backoff, 5*time.Minute)
		}
	}
}
