package apiobjects

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	fakemount "github.com/podstart/podstart/mounts/fake"
)

// testCA is a signer's CA: an ECDSA P-256 root that issues leaf
// certificates for the public key of a request's stub PKCS#10.
type testCA struct {
	key  crypto.Signer
	cert *x509.Certificate
	pool *x509.CertPool
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test signer CA"},
		NotBefore: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{key: key, cert: cert, pool: pool}
}

// fakePCRClient is the API server's PodCertificateRequests and
// ServiceAccounts in memory. Requests get a name and a creation time on
// create (GenerateName, as the API server); a test signs, denies or
// fails them (issue, answer). It checks each request's proof of
// possession, as the API server's admission does.
type fakePCRClient struct {
	t     testing.TB
	clock clock.PassiveClock
	ca    *testCA

	mu        sync.Mutex
	n         int
	pcrs      map[string]*certificatesv1.PodCertificateRequest // by name
	names     []string                                         // in creation order
	sas       map[string]*corev1.ServiceAccount
	createErr error
	autoIssue bool // issue each request as it is created
}

func newFakePCRClient(t testing.TB, c clock.PassiveClock) *fakePCRClient {
	return &fakePCRClient{t: t, clock: c, ca: newTestCA(t), pcrs: map[string]*certificatesv1.PodCertificateRequest{},
		sas: map[string]*corev1.ServiceAccount{"ns/default": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "default", UID: "sa-uid"}}}}
}

func (f *fakePCRClient) CreatePodCertificateRequest(_ context.Context, req *certificatesv1.PodCertificateRequest) (*certificatesv1.PodCertificateRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.createErr != nil {
		return nil, f.createErr
	}
	csr, err := x509.ParseCertificateRequest(req.Spec.StubPKCS10Request)
	if err != nil || csr.CheckSignature() != nil {
		return nil, apierrors.NewBadRequest("stubPKCS10Request: no proof of possession")
	}
	pcr := req.DeepCopy()
	f.n++
	pcr.Name = fmt.Sprintf("%s%d", req.GenerateName, f.n)
	pcr.CreationTimestamp = metav1.NewTime(f.clock.Now())
	if pcr.Spec.MaxExpirationSeconds == nil {
		pcr.Spec.MaxExpirationSeconds = ptr.To[int32](86400) // the API server's default
	}
	f.pcrs[pcr.Name] = pcr
	f.names = append(f.names, pcr.Name)
	if f.autoIssue {
		f.issueLocked(pcr.Name, 24*time.Hour)
	}
	return pcr.DeepCopy(), nil
}

func (f *fakePCRClient) GetPodCertificateRequest(_ context.Context, namespace, name string) (*certificatesv1.PodCertificateRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if pcr, ok := f.pcrs[name]; ok && pcr.Namespace == namespace {
		return pcr.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(certificatesv1.Resource("podcertificaterequests"), name)
}

func (f *fakePCRClient) GetServiceAccount(_ context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sa, ok := f.sas[namespace+"/"+name]; ok {
		return sa.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name)
}

// created is the requests made so far, oldest first.
func (f *fakePCRClient) created() []*certificatesv1.PodCertificateRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*certificatesv1.PodCertificateRequest
	for _, n := range f.names {
		if p, ok := f.pcrs[n]; ok {
			out = append(out, p.DeepCopy())
		}
	}
	return out
}

func (f *fakePCRClient) last() *certificatesv1.PodCertificateRequest {
	f.t.Helper()
	all := f.created()
	if len(all) == 0 {
		f.t.Fatal("no PodCertificateRequest was made")
	}
	return all[len(all)-1]
}

// issue signs the request's public key: a leaf valid for lifetime from
// now, refresh due at 80% of it; the chain has the leaf, the CA, a
// header and text between the blocks (which kubelet drops).
func (f *fakePCRClient) issue(name string, lifetime time.Duration) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.issueLocked(name, lifetime)
}

func (f *fakePCRClient) issueLocked(name string, lifetime time.Duration) string {
	f.t.Helper()
	pcr := f.pcrs[name]
	csr, err := x509.ParseCertificateRequest(pcr.Spec.StubPKCS10Request)
	if err != nil {
		f.t.Fatal(err)
	}
	now := f.clock.Now().Truncate(time.Second)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(int64(f.n) + 100), Subject: pkix.Name{CommonName: pcr.Spec.PodName},
		NotBefore: now, NotAfter: now.Add(lifetime), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, f.ca.cert, csr.PublicKey, f.ca.key)
	if err != nil {
		f.t.Fatal(err)
	}
	leaf := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Headers: map[string]string{"Issuer": "test"}, Bytes: der})
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.ca.cert.Raw})
	pcr.Status.CertificateChain = "leaf:\n" + string(leaf) + "root:\n" + string(ca)
	pcr.Status.NotBefore = &metav1.Time{Time: now}
	pcr.Status.BeginRefreshAt = &metav1.Time{Time: now.Add(lifetime * 8 / 10)}
	pcr.Status.NotAfter = &metav1.Time{Time: now.Add(lifetime)}
	pcr.Status.Conditions = []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue, Reason: "Issued"}}
	// The chain as kubelet writes it: bare CERTIFICATE blocks.
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})) + string(ca)
}

// answer sets a Denied or Failed condition.
func (f *fakePCRClient) answer(name, condType, reason, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pcrs[name].Status.Conditions = []metav1.Condition{{Type: condType, Status: metav1.ConditionTrue, Reason: reason, Message: message}}
}

func (f *fakePCRClient) delete(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.pcrs, name)
}

var pcTestStart = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// certPod is a pod with a projected volume "certs" whose source 0 is a
// podCertificate of keyType, writing all three files.
func certPod(keyType string) *corev1.Pod {
	return volumePod(corev1.Volume{Name: "certs", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644),
		Sources: []corev1.VolumeProjection{{PodCertificate: &corev1.PodCertificateProjection{
			SignerName: "example.com/signer", KeyType: keyType, MaxExpirationSeconds: ptr.To[int32](86400),
			CredentialBundlePath: "creds.pem", KeyPath: "tls.key", CertificateChainPath: "tls.crt",
			UserAnnotations: map[string]string{"example.com/spiffe-path": "web"},
		}}}}}})
}

// newTestPodCertificates is a manager on a fake clock with no jitter.
func newTestPodCertificates(t testing.TB, opts ...PodCertificatesOption) (*PodCertificates, *fakePCRClient, *testingclock.FakeClock, *testRecorder) {
	c := testingclock.NewFakeClock(pcTestStart)
	client := newFakePCRClient(t, c)
	rec := &testRecorder{}
	m := NewPodCertificates(client, "node1", "node1-uid", append([]PodCertificatesOption{WithPodCertificateClock(c), WithPodCertificateRecorder(rec)}, opts...)...)
	m.jitter = func() time.Duration { return 0 }
	return m, client, c, rec
}

// checkBundle parses the key and chain as a TLS client would: a PKCS#8
// key, a leaf for that key verified by the CA.
func checkBundle(t *testing.T, ca *testCA, key, chain []byte, now time.Time) (crypto.PrivateKey, *x509.Certificate) {
	t.Helper()
	kb, rest := pem.Decode(key)
	if kb == nil || kb.Type != "PRIVATE KEY" || len(rest) != 0 {
		t.Fatalf("key is not one PEM PRIVATE KEY block")
	}
	priv, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	var certs []*x509.Certificate
	for rest := chain; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			if len(strings.TrimSpace(string(rest))) != 0 {
				t.Errorf("text outside PEM blocks in the chain: %q", rest)
			}
			break
		}
		if b.Type != "CERTIFICATE" || len(b.Headers) != 0 {
			t.Errorf("chain block %q with headers %v", b.Type, b.Headers)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		t.Fatal("no certificate in the chain")
	}
	leaf := certs[0]
	if !priv.(interface{ Public() crypto.PublicKey }).Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(leaf.PublicKey) {
		t.Error("the leaf certificate is not for the key")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("leaf does not verify: %v", err)
	}
	return priv, leaf
}

// kubelet's TestTransitionInitialToWait: the first step makes one
// request naming the pod, its service account and the node, owned by the
// pod, with a stub PKCS#10 request signed by a key of the projection's
// type; the projection is pending until the signer answers.
func TestPodCertificateRequestSpec(t *testing.T) {
	m, client, _, _ := newTestPodCertificates(t)
	pod := certPod("ED25519")
	_, _, err := m.CredentialBundle(context.Background(), pod, "certs", 0)
	if !errors.Is(err, ErrPodCertificatePending) || err.Error() != "credential bundle is not issued yet" {
		t.Fatalf("err = %v, want pending", err)
	}
	all := client.created()
	if len(all) != 1 {
		t.Fatalf("%d requests, want 1", len(all))
	}
	got := all[0]
	want := certificatesv1.PodCertificateRequestSpec{
		SignerName: "example.com/signer", PodName: "web", PodUID: "web-uid",
		ServiceAccountName: "default", ServiceAccountUID: "sa-uid", NodeName: "node1", NodeUID: "node1-uid",
		MaxExpirationSeconds:      ptr.To[int32](86400),
		UnverifiedUserAnnotations: map[string]string{"example.com/spiffe-path": "web"},
	}
	spec := got.Spec
	spec.StubPKCS10Request = nil
	if !reflect.DeepEqual(spec, want) {
		t.Errorf("spec\n got %+v\nwant %+v", spec, want)
	}
	if got.Namespace != "ns" || got.GenerateName != "req-" ||
		fmt.Sprint(got.OwnerReferences) != fmt.Sprint([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "web-uid"}}) {
		t.Errorf("metadata %+v", got.ObjectMeta)
	}
	csr, err := x509.ParseCertificateRequest(got.Spec.StubPKCS10Request)
	if err != nil || csr.CheckSignature() != nil {
		t.Fatalf("stub PKCS#10: %v", err)
	}
	if _, ok := csr.PublicKey.(ed25519.PublicKey); !ok || csr.Subject.String() != "" || len(csr.DNSNames)+len(csr.URIs) != 0 {
		t.Errorf("stub PKCS#10 is not an empty ED25519 request: %T %v", csr.PublicKey, csr.Subject)
	}
	// Still pending: read again, no second request.
	if _, _, err := m.CredentialBundle(context.Background(), pod, "certs", 0); !errors.Is(err, ErrPodCertificatePending) {
		t.Fatalf("second step: %v", err)
	}
	if n := len(client.created()); n != 1 {
		t.Errorf("%d requests after a pending step, want 1", n)
	}
}

// Every key type kubelet generates, issued and checked as a TLS client
// would read it.
func TestPodCertificateKeyTypes(t *testing.T) {
	for _, tc := range []struct {
		keyType string
		check   func(crypto.PrivateKey) bool
	}{
		{"RSA3072", func(k crypto.PrivateKey) bool { r, ok := k.(*rsa.PrivateKey); return ok && r.N.BitLen() == 3072 }},
		{"RSA4096", func(k crypto.PrivateKey) bool { r, ok := k.(*rsa.PrivateKey); return ok && r.N.BitLen() == 4096 }},
		{"ECDSAP256", func(k crypto.PrivateKey) bool {
			e, ok := k.(*ecdsa.PrivateKey)
			return ok && e.Curve == elliptic.P256()
		}},
		{"ECDSAP384", func(k crypto.PrivateKey) bool {
			e, ok := k.(*ecdsa.PrivateKey)
			return ok && e.Curve == elliptic.P384()
		}},
		{"ECDSAP521", func(k crypto.PrivateKey) bool {
			e, ok := k.(*ecdsa.PrivateKey)
			return ok && e.Curve == elliptic.P521()
		}},
		{"ED25519", func(k crypto.PrivateKey) bool { _, ok := k.(ed25519.PrivateKey); return ok }},
	} {
		t.Run(tc.keyType, func(t *testing.T) {
			t.Parallel()
			m, client, clk, _ := newTestPodCertificates(t)
			pod := certPod(tc.keyType)
			if _, _, err := m.CredentialBundle(context.Background(), pod, "certs", 0); !errors.Is(err, ErrPodCertificatePending) {
				t.Fatalf("first step: %v", err)
			}
			wantChain := client.issue(client.last().Name, 24*time.Hour)
			key, chain, err := m.CredentialBundle(context.Background(), pod, "certs", 0)
			if err != nil {
				t.Fatal(err)
			}
			if string(chain) != wantChain {
				t.Errorf("chain\n%s\nwant\n%s", chain, wantChain)
			}
			priv, leaf := checkBundle(t, client.ca, key, chain, clk.Now())
			if !tc.check(priv) {
				t.Errorf("key %T is not a %s key", priv, tc.keyType)
			}
			if leaf.Subject.CommonName != "web" {
				t.Errorf("leaf for %q", leaf.Subject.CommonName)
			}
		})
	}
}

// Terminal and failing answers: each as CredentialBundle reports it
// (matched with errors.Is), with kubelet's events.
func TestPodCertificateAnswers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		setup      func(*fakePCRClient, *corev1.Pod)
		answer     func(*fakePCRClient)
		wantErr    error
		wantMsg    string
		wantEvents []string
		requests   int
	}{
		{
			name:     "pending",
			wantErr:  ErrPodCertificatePending,
			wantMsg:  "credential bundle is not issued yet",
			requests: 1,
		},
		{
			name: "denied",
			answer: func(f *fakePCRClient) {
				f.answer(f.last().Name, certificatesv1.PodCertificateRequestConditionTypeDenied, "UnsupportedKeyType", "use ECDSAP256")
			},
			wantErr:    ErrPodCertificateDenied,
			wantMsg:    `PodCertificateRequest was permanently denied: reason="UnsupportedKeyType" message="use ECDSAP256"`,
			wantEvents: []string{`Warning Denied PodCertificateRequest ns/req-1 was denied, reason="UnsupportedKeyType", message="use ECDSAP256"`},
			requests:   1,
		},
		{
			name: "failed",
			answer: func(f *fakePCRClient) {
				f.answer(f.last().Name, certificatesv1.PodCertificateRequestConditionTypeFailed, "SignerDown", "try later")
			},
			wantErr:    ErrPodCertificateFailed,
			wantMsg:    `PodCertificateRequest was permanently failed: reason="SignerDown" message="try later"`,
			wantEvents: []string{`Warning Failed PodCertificateRequest ns/req-1 failed, reason="SignerDown", message="try later"`},
			requests:   1,
		},
		{
			name: "create refused",
			setup: func(f *fakePCRClient, _ *corev1.Pod) {
				f.createErr = apierrors.NewForbidden(certificatesv1.Resource("podcertificaterequests"), "", errors.New("no"))
			},
			wantErr: ErrPodCertificatePending,
			wantMsg: `credential bundle is not issued yet: while creating initial PodCertificateRequest: while creating on API: podcertificaterequests.certificates.k8s.io is forbidden: no`,
		},
		{
			name:    "no service account",
			setup:   func(_ *fakePCRClient, p *corev1.Pod) { p.Spec.ServiceAccountName = "gone" },
			wantErr: ErrPodCertificatePending,
			wantMsg: `credential bundle is not issued yet: while creating initial PodCertificateRequest: while fetching service account: serviceaccounts "gone" not found`,
		},
		{
			name: "unknown key type",
			setup: func(_ *fakePCRClient, p *corev1.Pod) {
				p.Spec.Volumes[0].Projected.Sources[0].PodCertificate.KeyType = "DSA1024"
			},
			wantErr: ErrUnknownKeyType,
			wantMsg: `credential bundle is not issued yet: while creating initial PodCertificateRequest: while generating keypair: unknown key type "DSA1024"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, client, _, rec := newTestPodCertificates(t)
			pod := certPod("ECDSAP256")
			if tc.setup != nil {
				tc.setup(client, pod)
			}
			_, _, err := m.CredentialBundle(context.Background(), pod, "certs", 0)
			if tc.answer != nil {
				if !errors.Is(err, ErrPodCertificatePending) {
					t.Fatalf("before the answer: %v", err)
				}
				tc.answer(client)
				_, _, err = m.CredentialBundle(context.Background(), pod, "certs", 0)
			}
			if !errors.Is(err, tc.wantErr) || err.Error() != tc.wantMsg {
				t.Fatalf("err = %v\nwant %s (%v)", err, tc.wantMsg, tc.wantErr)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Error("key material in the error")
			}
			// A final answer is kept: no new request, the same error.
			key, chain, err2 := m.CredentialBundle(context.Background(), pod, "certs", 0)
			if key != nil || chain != nil || err2 == nil || err2.Error() != err.Error() && tc.answer != nil {
				t.Errorf("second call: %v", err2)
			}
			if n := len(client.created()); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			var events []string
			for _, e := range rec.events {
				events = append(events, e.eventtype+" "+e.reason+" "+e.message)
			}
			if !slices.Equal(events, tc.wantEvents) {
				t.Errorf("events %q, want %q", events, tc.wantEvents)
			}
		})
	}
}

// Refresh: nothing is asked before beginRefreshAt; then a new key and
// request while the issued pair is still served; the new pair once
// issued (and the pod's sync asked for); kubelet's warnings when the
// renewal is late or the certificate expired.
func TestPodCertificateRefresh(t *testing.T) {
	var notified []types.UID
	m, client, clk, rec := newTestPodCertificates(t, WithPodCertificateNotify(func(uid types.UID) { notified = append(notified, uid) }))
	ctx := context.Background()
	pod := certPod("ECDSAP256")
	if _, _, err := m.CredentialBundle(ctx, pod, "certs", 0); !errors.Is(err, ErrPodCertificatePending) {
		t.Fatal(err)
	}
	// Issued while nobody asked: Refresh reads it and tells the caller.
	chain1 := client.issue("req-1", 10*time.Hour) // beginRefreshAt at 8h
	m.Refresh(ctx)
	if !slices.Equal(notified, []types.UID{"web-uid"}) {
		t.Fatalf("notified %v after issuance", notified)
	}
	key1, got, err := m.CredentialBundle(ctx, pod, "certs", 0)
	if err != nil || string(got) != chain1 {
		t.Fatalf("issued: %v", err)
	}

	clk.Step(8*time.Hour - time.Second)
	m.Refresh(ctx)
	if n := len(client.created()); n != 1 {
		t.Fatalf("%d requests before beginRefreshAt, want 1", n)
	}
	clk.Step(2 * time.Second)
	m.Refresh(ctx)
	if n := len(client.created()); n != 2 {
		t.Fatalf("%d requests after beginRefreshAt, want 2", n)
	}
	key, got, err := m.CredentialBundle(ctx, pod, "certs", 0)
	if err != nil || string(got) != chain1 || string(key) != string(key1) {
		t.Fatalf("while renewing, the issued pair is served: %v", err)
	}
	if len(notified) != 1 {
		t.Errorf("notified %v for a pending renewal", notified)
	}
	// Late: overdue 10 minutes after beginRefreshAt, then expired.
	clk.Step(11 * time.Minute)
	m.Refresh(ctx)
	clk.Step(2 * time.Hour)
	m.Refresh(ctx)
	m.Refresh(ctx)
	var reasons []string
	for _, e := range rec.events {
		reasons = append(reasons, e.reason)
	}
	if !slices.Equal(reasons, []string{"CertificateOverdueForRefresh", "CertificateExpired"}) {
		t.Errorf("events %v", reasons)
	}
	if _, _, err := m.CredentialBundle(ctx, pod, "certs", 0); err != nil {
		t.Errorf("an expired certificate is still served while renewing, as kubelet does: %v", err)
	}

	chain2 := client.issue("req-2", 10*time.Hour)
	m.Refresh(ctx)
	if !slices.Equal(notified, []types.UID{"web-uid", "web-uid"}) {
		t.Errorf("notified %v after renewal", notified)
	}
	key2, got, err := m.CredentialBundle(ctx, pod, "certs", 0)
	if err != nil || string(got) != chain2 {
		t.Fatalf("renewed: %v", err)
	}
	if string(key2) == string(key1) {
		t.Error("the renewal reused the key")
	}
	checkBundle(t, client.ca, key2, got, clk.Now())

	// A renewal denied drops the pair, as kubelet's state machine does.
	clk.Step(9 * time.Hour)
	m.Refresh(ctx)
	client.answer("req-3", certificatesv1.PodCertificateRequestConditionTypeDenied, "Revoked", "")
	m.Refresh(ctx)
	if _, _, err := m.CredentialBundle(ctx, pod, "certs", 0); !errors.Is(err, ErrPodCertificateDenied) {
		t.Errorf("renewal denied: %v", err)
	}
	if len(notified) != 3 {
		t.Errorf("notified %v after a denied renewal", notified)
	}
}

// kubelet's TestPCRDeletedWhileWaiting: a request the API server does not
// have is waited for 10 minutes after its creation, then made again.
func TestPodCertificateRequestDeleted(t *testing.T) {
	m, client, clk, _ := newTestPodCertificates(t)
	ctx := context.Background()
	pod := certPod("ED25519")
	if _, _, err := m.CredentialBundle(ctx, pod, "certs", 0); !errors.Is(err, ErrPodCertificatePending) {
		t.Fatal(err)
	}
	client.delete("req-1")
	clk.Step(5 * time.Minute)
	if _, _, err := m.CredentialBundle(ctx, pod, "certs", 0); !errors.Is(err, ErrPodCertificatePending) || !strings.Contains(err.Error(), `while getting PodCertificateRequest "ns/req-1"`) {
		t.Fatalf("within 10 minutes: %v", err)
	}
	if n := len(client.created()); n != 0 {
		t.Fatalf("%d requests made within 10 minutes, want none", n)
	}
	clk.Step(6 * time.Minute)
	_, _, err := m.CredentialBundle(ctx, pod, "certs", 0)
	if !errors.Is(err, ErrPodCertificatePending) || !strings.Contains(err.Error(), `PodCertificateRequest "ns/req-1" appears to have been deleted`) {
		t.Fatalf("after 10 minutes: %v", err)
	}
	if _, _, err := m.CredentialBundle(ctx, pod, "certs", 0); !errors.Is(err, ErrPodCertificatePending) {
		t.Fatal(err)
	}
	if all := client.created(); len(all) != 1 || all[0].Name != "req-2" {
		t.Fatalf("requests %d, want req-2 made again", len(all))
	}
}

// ForgetPod drops the pod's pairs: the next setup asks again.
func TestPodCertificateForgetPod(t *testing.T) {
	m, client, _, _ := newTestPodCertificates(t)
	client.autoIssue = true
	ctx := context.Background()
	pod := certPod("ED25519")
	if _, _, err := m.CredentialBundle(ctx, pod, "certs", 0); err != nil {
		t.Fatalf("a request answered on create is served at once: %v", err)
	}
	m.ForgetPod("other-uid")
	if _, _, err := m.CredentialBundle(ctx, pod, "certs", 0); err != nil || len(client.created()) != 1 {
		t.Fatalf("another pod's ForgetPod: %v, %d requests", err, len(client.created()))
	}
	m.ForgetPod(pod.UID)
	if _, _, err := m.CredentialBundle(ctx, pod, "certs", 0); err != nil || len(client.created()) != 2 {
		t.Fatalf("after ForgetPod: %v, %d requests", err, len(client.created()))
	}
	if _, _, err := m.CredentialBundle(ctx, pod, "certs", 1); !errors.Is(err, ErrNoPodCertificateSource) {
		t.Errorf("no such source: %v", err)
	}
	var nilManager *PodCertificates
	if _, _, err := nilManager.CredentialBundle(ctx, pod, "certs", 0); !errors.Is(err, ErrNoPodCertificateClient) {
		t.Errorf("nil manager: %v", err)
	}
}

// Run steps every projection now and at each interval of its clock.
func TestPodCertificatesRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	m, client, clk, _ := newTestPodCertificates(t, WithPodCertificateInterval(time.Minute))
	notified := make(chan types.UID, 1)
	m.notify = func(uid types.UID) { notified <- uid }
	ran := make(chan struct{})
	m.ranPass = func() { ran <- struct{}{} }
	pod := certPod("ED25519")
	if _, _, err := m.CredentialBundle(context.Background(), pod, "certs", 0); !errors.Is(err, ErrPodCertificatePending) {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	<-ran
	client.issue("req-1", 24*time.Hour)
	select {
	case uid := <-notified:
		t.Fatalf("notified %s before the interval", uid)
	default:
	}
	clk.Step(time.Minute)
	if uid := <-notified; uid != pod.UID {
		t.Errorf("notified %s", uid)
	}
	<-ran
	cancel()
	<-done
}

// Through Volumes: kubelet's three files in the projected volume, the
// bundle the key then the chain, mode defaultMode, or 0600 owned by the
// pod's user when it has one; pending until issued, as a failed mount.
func TestVolumesPodCertificate(t *testing.T) {
	m, client, clk, _ := newTestPodCertificates(t)
	root := t.TempDir()
	rec := &testRecorder{}
	v := NewVolumes(newTestSource(), root, WithMounter(fakemount.New()), WithPodCertificates(m), WithEventRecorder(rec))
	pod := certPod("ECDSAP384")
	ctx := context.Background()
	_, err := v.Volumes(ctx, pod)
	if !errors.Is(err, ErrPodCertificatePending) || err.Error() != `MountVolume.SetUp failed for volume "certs" : credential bundle is not issued yet` {
		t.Fatalf("pending: %v", err)
	}
	if len(rec.events) != 1 || rec.events[0].reason != "FailedMount" {
		t.Errorf("events %v", rec.events)
	}
	chain := client.issue("req-1", 24*time.Hour)
	got, err := v.Volumes(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	dir := got["certs"].HostPath
	if dir != filepath.Join(root, "pods", "web-uid", "volumes", "kubernetes.io~projected", "certs") {
		t.Errorf("volume at %s", dir)
	}
	files := readVolume(t, dir)
	if len(files) != 3 || files["tls.crt"] != chain || files["creds.pem"] != files["tls.key"]+chain {
		t.Fatalf("files %v", files)
	}
	checkBundle(t, client.ca, []byte(files["tls.key"]), []byte(files["tls.crt"]), clk.Now())
	for _, f := range []string{"creds.pem", "tls.key", "tls.crt"} {
		if md := mode(t, filepath.Join(dir, f)); md != 0o644 {
			t.Errorf("%s: mode %v, want defaultMode", f, md)
		}
	}
	for _, e := range rec.events {
		if strings.Contains(e.message, "PRIVATE KEY") {
			t.Error("key material in an event")
		}
	}

	// With a pod user the files are 0600 and its own.
	uid := int64(os.Geteuid())
	userPod := certPod("ED25519")
	userPod.UID, userPod.Name = "user-uid", "user"
	userPod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid}
	client.autoIssue = true
	got, err = v.Volumes(ctx, userPod)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"creds.pem", "tls.key", "tls.crt"} {
		if md := mode(t, filepath.Join(got["certs"].HostPath, f)); md != fs.FileMode(0o600) {
			t.Errorf("%s: mode %v, want 0600", f, md)
		}
	}
	// Only the paths the projection names are written.
	onlyBundle := certPod("ED25519")
	onlyBundle.UID = "bundle-uid"
	pc := onlyBundle.Spec.Volumes[0].Projected.Sources[0].PodCertificate
	pc.KeyPath, pc.CertificateChainPath = "", ""
	got, err = v.Volumes(ctx, onlyBundle)
	if err != nil {
		t.Fatal(err)
	}
	if files := readVolume(t, got["certs"].HostPath); len(files) != 1 || !strings.HasPrefix(files["creds.pem"], "-----BEGIN PRIVATE KEY-----") {
		t.Errorf("files %v", files)
	}
	// Without a manager: refused by its class.
	if _, err := NewVolumes(newTestSource(), t.TempDir(), WithMounter(fakemount.New())).Volumes(ctx, pod); !errors.Is(err, ErrNoPodCertificateClient) {
		t.Errorf("no manager: %v", err)
	}
}
