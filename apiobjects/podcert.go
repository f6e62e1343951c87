package apiobjects

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-logr/logr"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Kubelet's pod certificate manager constants (pkg/kubelet/podcertificate).
const (
	// A PodCertificateRequest created this long ago (plus a jitter) that
	// the API server no longer has is taken as deleted, and made again.
	pcrAssumeDeleted = 10 * time.Minute
	// A certificate not refreshed this long after its beginRefreshAt is
	// overdue (a CertificateOverdueForRefresh event).
	pcrRefreshOverdue = 10 * time.Minute
	// The jitter added to beginRefreshAt and to the time a request is
	// taken as deleted, so that pods started together do not renew
	// together: up to 5 minutes.
	pcrMaxJitter = 5 * time.Minute
)

// DefaultPodCertificateInterval is how often PodCertificates.Run steps
// every projection it tracks: pending requests are read again, and a
// certificate past its beginRefreshAt gets a new request.
const DefaultPodCertificateInterval = 10 * time.Second

// Errors of the pod certificate manager, matched with errors.Is; the
// messages are kubelet's.
var (
	// ErrPodCertificatePending: no certificate has been issued yet for
	// the projection (its PodCertificateRequest is pending, or about to
	// be made). The volume fails and is set up again later, as kubelet's
	// does until the signer answers.
	ErrPodCertificatePending = errors.New("credential bundle is not issued yet")
	// ErrPodCertificateDenied: the signer denied the projection's
	// request (a Denied condition). It is permanent for the pod.
	ErrPodCertificateDenied = errors.New("PodCertificateRequest was permanently denied")
	// ErrPodCertificateFailed: the signer could not issue the
	// certificate (a Failed condition). It is permanent for the pod.
	ErrPodCertificateFailed = errors.New("PodCertificateRequest was permanently failed")
	// ErrNoPodCertificateClient: a podCertificate projection with no
	// manager to ask the API server (kubelet in standalone mode).
	ErrNoPodCertificateClient = errors.New("podCertificate projections need a PodCertificates manager with an API client")
	// ErrUnknownKeyType: a projection's keyType that is none of RSA3072,
	// RSA4096, ECDSAP256, ECDSAP384, ECDSAP521 and ED25519.
	ErrUnknownKeyType = errors.New("unknown key type")
	// ErrNoPodCertificateSource: the pod has no podCertificate source at
	// that volume and index.
	ErrNoPodCertificateSource = errors.New("pod does not contain the named podCertificate projected volume source")
)

// PodCertificateClient is what the pod certificate manager asks the API
// server: client-go's CertificatesV1().PodCertificateRequests(ns).Create
// and Get, and CoreV1().ServiceAccounts(ns).Get (for the account's UID).
// A missing object is an errors.IsNotFound error.
type PodCertificateClient interface {
	CreatePodCertificateRequest(ctx context.Context, req *certificatesv1.PodCertificateRequest) (*certificatesv1.PodCertificateRequest, error)
	GetPodCertificateRequest(ctx context.Context, namespace, name string) (*certificatesv1.PodCertificateRequest, error)
	GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
}

// PodCertificates is kubelet's pod certificate manager
// (pkg/kubelet/podcertificate): for each podCertificate source of a pod's
// projected volumes it makes a private key of the source's keyType, asks
// the source's signer for a certificate with a PodCertificateRequest
// naming the pod, its service account and the node (with an empty
// PKCS#10 request signed by the key as proof of possession), and serves
// the key and the issued chain until the request's beginRefreshAt (plus a
// jitter of up to 5 minutes), when it asks again with a new key and
// serves the old pair until the new one is issued. A denied or failed
// request fails the projection for good (ErrPodCertificateDenied,
// ErrPodCertificateFailed), with a Warning event.
//
// CredentialBundle steps a projection's state once and answers; Refresh
// steps every projection (Run calls it periodically). Keys never appear
// in its errors, events or logs.
type PodCertificates struct {
	client   PodCertificateClient
	nodeName types.NodeName
	nodeUID  types.UID
	clock    clock.Clock
	recorder EventRecorder
	notify   func(types.UID)
	interval time.Duration
	jitter   func() time.Duration

	mu    sync.Mutex
	store map[pcKey]*pcRecord

	ranPass func() // a test's hook: Run stepped every projection and armed its timer
}

// PodCertificatesOption configures PodCertificates.
type PodCertificatesOption func(*PodCertificates)

// WithPodCertificateClock sets the clock that ages certificates and
// requests and paces Run (default: the real one).
func WithPodCertificateClock(c clock.Clock) PodCertificatesOption {
	return func(m *PodCertificates) { m.clock = c }
}

// WithPodCertificateRecorder sets where the Denied, Failed,
// CertificateOverdueForRefresh and CertificateExpired Warning events go
// (default: nowhere).
func WithPodCertificateRecorder(r EventRecorder) PodCertificatesOption {
	return func(m *PodCertificates) { m.recorder = r }
}

// WithPodCertificateNotify sets a function Refresh calls with a pod's UID
// when one of its projections changed (a certificate issued or renewed,
// a request denied or failed), so that the caller syncs the pod and its
// volumes are written again (kubelet's volume manager remounts projected
// volumes periodically).
func WithPodCertificateNotify(f func(podUID types.UID)) PodCertificatesOption {
	return func(m *PodCertificates) { m.notify = f }
}

// WithPodCertificateInterval sets how often Run steps every projection
// (default DefaultPodCertificateInterval).
func WithPodCertificateInterval(d time.Duration) PodCertificatesOption {
	return func(m *PodCertificates) { m.interval = d }
}

// NewPodCertificates returns a pod certificate manager asking client for
// certificates on behalf of the node nodeName, whose Node object has the
// UID nodeUID (both go into every PodCertificateRequest).
func NewPodCertificates(client PodCertificateClient, nodeName types.NodeName, nodeUID types.UID, opts ...PodCertificatesOption) *PodCertificates {
	m := &PodCertificates{
		client: client, nodeName: nodeName, nodeUID: nodeUID,
		clock: clock.RealClock{}, interval: DefaultPodCertificateInterval,
		jitter: func() time.Duration { return rand.N(pcrMaxJitter) },
		store:  map[pcKey]*pcRecord{},
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

// pcKey names one podCertificate source of one pod, as kubelet's
// projectionKey.
type pcKey struct {
	namespace, podName string
	podUID             types.UID
	volume             string
	index              int
}

// pcState is kubelet's state machine of a projection:
//
//	initial ──► wait ──► fresh ◄──► waitRefresh
//	             │                      │
//	             └──► denied, failed ◄──┘
type pcState int

const (
	pcInitial     pcState = iota // no request yet
	pcWait                       // the first request made, not answered
	pcFresh                      // a certificate issued
	pcWaitRefresh                // a certificate issued, a new one asked for
	pcDenied
	pcFailed
)

type pcRecord struct {
	mu  sync.Mutex
	pod *corev1.Pod // for events and the request's identity
	src corev1.PodCertificateProjection

	state pcState
	// The certificate served (fresh, waitRefresh).
	key, chain     []byte
	beginRefreshAt time.Time
	notAfter       time.Time
	overdueEvent   bool
	expiredEvent   bool
	// The request made and not yet answered (wait, waitRefresh).
	pendingKey  []byte
	pendingName string
	abandonAt   time.Time
	// The signer's condition (denied, failed).
	reason, message string
}

// CredentialBundle is kubelet's GetPodCertificateCredentialBundle for the
// podCertificate source at sources[sourceIndex] of the pod's projected
// volume volumeName, after one step of its state (the first request
// made, a pending request read, a renewal asked for when due): the
// PEM-encoded PKCS#8 private key and the issued certificate chain (PEM
// CERTIFICATE blocks only, as kubelet cleans it). Before the first
// certificate is issued it fails with ErrPodCertificatePending (or the
// error that kept the request from being made or read); after a denial
// or failure with ErrPodCertificateDenied or ErrPodCertificateFailed. A
// failed renewal keeps the issued pair served (and logged to the
// context's logger), as kubelet does, even past its expiry. The result
// is shared: do not modify it.
func (m *PodCertificates) CredentialBundle(ctx context.Context, pod *corev1.Pod, volumeName string, sourceIndex int) (key, chain []byte, err error) {
	if m == nil {
		return nil, nil, ErrNoPodCertificateClient
	}
	src := podCertificateSource(pod, volumeName, sourceIndex)
	if src == nil {
		return nil, nil, fmt.Errorf("volume %q source %d: %w", volumeName, sourceIndex, ErrNoPodCertificateSource)
	}
	return m.credentialBundle(ctx, pod, volumeName, sourceIndex, src)
}

// credentialBundle is CredentialBundle for the source src, which the
// caller found at the pod's volume and index.
func (m *PodCertificates) credentialBundle(ctx context.Context, pod *corev1.Pod, volumeName string, sourceIndex int, src *corev1.PodCertificateProjection) (key, chain []byte, err error) {
	k := pcKey{pod.Namespace, pod.Name, pod.UID, volumeName, sourceIndex}
	m.mu.Lock()
	rec := m.store[k]
	if rec == nil {
		rec = &pcRecord{pod: pod, src: *src}
		m.store[k] = rec
	}
	m.mu.Unlock()

	rec.mu.Lock()
	defer rec.mu.Unlock()
	stepErr := m.step(ctx, rec)
	key, chain, err = rec.bundle()
	if err != nil && stepErr != nil && errors.Is(err, ErrPodCertificatePending) {
		return nil, nil, fmt.Errorf("%w: %w", err, stepErr)
	}
	if err == nil && stepErr != nil {
		logr.FromContextOrDiscard(ctx).Error(stepErr, "Couldn't refresh pod certificate; serving the one issued", "pod", klogRef(pod), "volume", volumeName, "sourceIndex", sourceIndex)
	}
	return key, chain, err
}

// Refresh steps every projection the manager tracks once, as kubelet's
// periodic refresh pass does, and calls the notify function
// (WithPodCertificateNotify) for each pod whose certificates changed.
// Failures are logged to the context's logger and retried at the next
// step.
func (m *PodCertificates) Refresh(ctx context.Context) {
	m.mu.Lock()
	recs := make([]*pcRecord, 0, len(m.store))
	for _, r := range m.store {
		recs = append(recs, r)
	}
	m.mu.Unlock()
	changed := map[types.UID]bool{}
	for _, rec := range recs {
		rec.mu.Lock()
		before, chain := rec.state, rec.chain
		if err := m.step(ctx, rec); err != nil {
			logr.FromContextOrDiscard(ctx).Error(err, "Couldn't step podCertificate projection", "pod", klogRef(rec.pod), "signerName", rec.src.SignerName)
		}
		final := rec.state == pcDenied || rec.state == pcFailed
		if string(rec.chain) != string(chain) || final && rec.state != before {
			changed[rec.pod.UID] = true
		}
		rec.mu.Unlock()
	}
	if m.notify != nil {
		for uid := range changed {
			m.notify(uid)
		}
	}
}

// Run calls Refresh now and then every interval
// (WithPodCertificateInterval) until ctx is done.
func (m *PodCertificates) Run(ctx context.Context) {
	for {
		m.Refresh(ctx)
		t := m.clock.NewTimer(m.interval)
		if m.ranPass != nil {
			m.ranPass()
		}
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// ForgetPod drops the pod's keys and certificates, as kubelet does when
// the pod leaves the node. Its requests are the API server's garbage (the
// pod owns them).
func (m *PodCertificates) ForgetPod(uid types.UID) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.store {
		if k.podUID == uid {
			delete(m.store, k)
		}
	}
}

// bundle is kubelet's getCredBundle of the record's state.
func (r *pcRecord) bundle() ([]byte, []byte, error) {
	switch r.state {
	case pcFresh, pcWaitRefresh:
		return r.key, r.chain, nil
	case pcDenied:
		return nil, nil, fmt.Errorf("%w: reason=%q message=%q", ErrPodCertificateDenied, r.reason, r.message)
	case pcFailed:
		return nil, nil, fmt.Errorf("%w: reason=%q message=%q", ErrPodCertificateFailed, r.reason, r.message)
	}
	return nil, nil, ErrPodCertificatePending
}

// step is kubelet's handleProjection for one record, locked by the
// caller: one transition of its state machine.
func (m *PodCertificates) step(ctx context.Context, r *pcRecord) error {
	now := m.clock.Now()
	switch r.state {
	case pcInitial:
		key, pcr, err := m.request(ctx, r)
		if err != nil {
			return fmt.Errorf("while creating initial PodCertificateRequest: %w", err)
		}
		r.state, r.pendingKey, r.pendingName, r.abandonAt = pcWait, key, pcr.Name, m.abandonAt(pcr)
		// A signer that answers on create (or a request that comes back
		// answered) is taken at once.
		m.answer(r, pcr)
		return nil
	case pcWait, pcWaitRefresh:
		pcr, err := m.client.GetPodCertificateRequest(ctx, r.pod.Namespace, r.pendingName)
		if apierrors.IsNotFound(err) && now.After(r.abandonAt) {
			// Kubelet's guess that the request was deleted: make
			// another one at the next step.
			name := r.pendingName
			r.pendingKey, r.pendingName = nil, ""
			if r.state == pcWait {
				r.state = pcInitial
			} else {
				r.state = pcFresh
			}
			return fmt.Errorf("PodCertificateRequest %q appears to have been deleted", r.pod.Namespace+"/"+name)
		}
		if err != nil {
			return fmt.Errorf("while getting PodCertificateRequest %q: %w", r.pod.Namespace+"/"+r.pendingName, err)
		}
		if !m.answer(r, pcr) && r.state == pcWaitRefresh {
			m.lateEvents(r, now)
		}
		return nil
	case pcFresh:
		if now.Before(r.beginRefreshAt) {
			return nil
		}
		m.lateEvents(r, now)
		key, pcr, err := m.request(ctx, r)
		if err != nil {
			return fmt.Errorf("while creating refresh PodCertificateRequest: %w", err)
		}
		r.state, r.pendingKey, r.pendingName, r.abandonAt = pcWaitRefresh, key, pcr.Name, m.abandonAt(pcr)
		m.answer(r, pcr)
		return nil
	}
	// Denied and failed are final.
	return nil
}

// answer moves a waiting record on by its request's terminal condition,
// if it has one, and reports whether it had.
func (m *PodCertificates) answer(r *pcRecord, pcr *certificatesv1.PodCertificateRequest) bool {
	for _, c := range pcr.Status.Conditions {
		switch c.Type {
		case certificatesv1.PodCertificateRequestConditionTypeDenied:
			r.toFinal(pcDenied, c)
			m.event(r, certificatesv1.PodCertificateRequestConditionTypeDenied, fmt.Sprintf("PodCertificateRequest %s was denied, reason=%q, message=%q", pcr.Namespace+"/"+pcr.Name, c.Reason, c.Message))
			return true
		case certificatesv1.PodCertificateRequestConditionTypeFailed:
			r.toFinal(pcFailed, c)
			m.event(r, certificatesv1.PodCertificateRequestConditionTypeFailed, fmt.Sprintf("PodCertificateRequest %s failed, reason=%q, message=%q", pcr.Namespace+"/"+pcr.Name, c.Reason, c.Message))
			return true
		case certificatesv1.PodCertificateRequestConditionTypeIssued:
			r.state = pcFresh
			r.key, r.chain = r.pendingKey, cleanChain([]byte(pcr.Status.CertificateChain))
			r.beginRefreshAt, r.notAfter = timeOf(pcr.Status.BeginRefreshAt).Add(m.jitter()), timeOf(pcr.Status.NotAfter)
			r.overdueEvent, r.expiredEvent = false, false
			r.pendingKey, r.pendingName = nil, ""
			return true
		}
	}
	return false
}

// toFinal is a denial or failure: the served pair is dropped with the
// pending one, as kubelet drops it.
func (r *pcRecord) toFinal(s pcState, c metav1.Condition) {
	r.state, r.reason, r.message = s, c.Reason, c.Message
	r.key, r.chain, r.pendingKey, r.pendingName = nil, nil, nil, ""
}

// lateEvents are kubelet's warnings for a certificate not renewed in
// time: once when overdue for refresh, once when expired.
func (m *PodCertificates) lateEvents(r *pcRecord, now time.Time) {
	if now.After(r.beginRefreshAt.Add(pcrRefreshOverdue)) && !r.overdueEvent {
		m.event(r, "CertificateOverdueForRefresh", "PodCertificate refresh overdue")
		r.overdueEvent = true
	}
	if now.After(r.notAfter) && !r.expiredEvent {
		m.event(r, "CertificateExpired", "PodCertificate expired")
		r.expiredEvent = true
	}
}

func (m *PodCertificates) event(r *pcRecord, reason, msg string) {
	if m.recorder != nil {
		m.recorder.Eventf(r.pod, corev1.EventTypeWarning, reason, "%s", msg)
	}
}

// abandonAt is when a request the API server does not have is taken as
// deleted: its creation (the clock's now if the server gave none) plus
// 10 minutes and a jitter.
func (m *PodCertificates) abandonAt(pcr *certificatesv1.PodCertificateRequest) time.Time {
	created := pcr.CreationTimestamp.Time
	if created.IsZero() {
		created = m.clock.Now()
	}
	return created.Add(pcrAssumeDeleted + m.jitter())
}

// request is kubelet's createPodCertificateRequest: a new key of the
// source's type and a request for it, owned by the pod. It returns the
// PEM-encoded key and the request the API server created.
func (m *PodCertificates) request(ctx context.Context, r *pcRecord) ([]byte, *certificatesv1.PodCertificateRequest, error) {
	pod := r.pod
	sa, err := m.client.GetServiceAccount(ctx, pod.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return nil, nil, fmt.Errorf("while fetching service account: %w", err)
	}
	keyPEM, csr, err := newKeyAndProof(r.src.KeyType)
	if err != nil {
		return nil, nil, fmt.Errorf("while generating keypair: %w", err)
	}
	req := &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       pod.Namespace,
			GenerateName:    "req-",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}},
		},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName:                r.src.SignerName,
			PodName:                   pod.Name,
			PodUID:                    pod.UID,
			ServiceAccountName:        pod.Spec.ServiceAccountName,
			ServiceAccountUID:         sa.UID,
			NodeName:                  m.nodeName,
			NodeUID:                   m.nodeUID,
			MaxExpirationSeconds:      r.src.MaxExpirationSeconds,
			StubPKCS10Request:         csr,
			UnverifiedUserAnnotations: r.src.UserAnnotations,
		},
	}
	got, err := m.client.CreatePodCertificateRequest(ctx, req)
	if err == nil && got == nil {
		err = errors.New("PodCertificateClient returned no request and no error")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("while creating on API: %w", err)
	}
	return keyPEM, got, nil
}

// podCertificateSource is the pod's podCertificate source at
// sources[index] of its projected volume volumeName, or nil.
func podCertificateSource(pod *corev1.Pod, volumeName string, index int) *corev1.PodCertificateProjection {
	for _, v := range pod.Spec.Volumes {
		if v.Name == volumeName && v.Projected != nil && index >= 0 && index < len(v.Projected.Sources) {
			return v.Projected.Sources[index].PodCertificate
		}
	}
	return nil
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

// klogRef is the pod's namespace/name, for logs.
func klogRef(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }
