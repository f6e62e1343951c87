package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podstart/podstart/containerlogs"
	"github.com/podstart/podstart/nodeapi"
	"github.com/podstart/podstart/podsync"
)

// NodeAPI is how the agent serves kubelet's node API (nodeapi): where, with
// which serving certificate, and which client CA it trusts.
type NodeAPI struct {
	// Listener is where it serves (kubelet: 0.0.0.0:10250); its port is
	// the node's daemon endpoint.
	Listener net.Listener
	// Certificate serves TLS (nodeapi.SelfSignedCertificate is kubelet's
	// default); GetCertificate, if set, is used instead
	// (nodeapi.ServingCertificates, kubelet's serverTLSBootstrap).
	Certificate    tls.Certificate
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// ClientCAs verifies client certificates (kubelet's clientCAFile);
	// bearer tokens are reviewed through the API server in any case.
	ClientCAs *x509.CertPool
}

// port is the listener's port, the node's daemon endpoint.
func (n *NodeAPI) port() int32 {
	if n == nil {
		return 0
	}
	_, p, err := net.SplitHostPort(n.Listener.Addr().String())
	if err != nil {
		return 0
	}
	v, _ := strconv.Atoi(p)
	return int32(v)
}

// serveNodeAPI serves the node API until ctx ends.
func (a *agent) serveNodeAPI(ctx context.Context) error {
	n := a.NodeAPI
	c := nodeapi.Config{
		NodeName:      a.NodeName,
		Authenticator: nodeapi.Authenticators{nodeapi.X509{ClientCAs: n.ClientCAs}, nodeapi.NewTokens(reviews{a.Client}, 0)},
		Authorizer:    nodeapi.NewReviews(reviews{a.Client}, 0, 0),
		Pods:          nodeapi.WorkerPods(a.workers),
		Runtime:       a.Runtime,
		Logs:          a.logReader(),
		Summary:       a.summary(),
		Metrics:       a.resourceMetrics(),
	}
	c.NodeMetrics, c.ProbeMetrics, c.CadvisorMetrics = a.metricsHandlers(ctx)
	srv, err := nodeapi.New(c)
	if err != nil {
		return err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ClientAuth: tls.RequestClientCert, GetCertificate: n.GetCertificate}
	if cfg.GetCertificate == nil {
		cfg.Certificates = []tls.Certificate{n.Certificate}
	}
	hs := &http.Server{Handler: srv, TLSConfig: cfg, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- hs.ServeTLS(n.Listener, "", "") }()
	select {
	case err := <-done:
		return fmt.Errorf("node API: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx) // follows and streams end with ctx
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// reviews are nodeapi's TokenReviewer and SubjectAccessReviewer over
// client-go.
type reviews struct{ c kubernetes.Interface }

func (r reviews) CreateTokenReview(ctx context.Context, tr *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
	return r.c.AuthenticationV1().TokenReviews().Create(ctx, tr, metav1.CreateOptions{})
}

func (r reviews) CreateSubjectAccessReview(ctx context.Context, sar *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
	return r.c.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
}

// csrs is nodeapi's CSRClient over client-go.
type csrs struct{ c kubernetes.Interface }

func (c csrs) CreateCertificateSigningRequest(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) (*certificatesv1.CertificateSigningRequest, error) {
	return c.c.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
}

func (c csrs) GetCertificateSigningRequest(ctx context.Context, name string) (*certificatesv1.CertificateSigningRequest, error) {
	return c.c.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
}

// summary and resourceMetrics serve the stats; nil on a runtime without
// CRI stats.
func (a *agent) summary() nodeapi.SummaryProvider {
	if a.stats == nil {
		return nil
	}
	return a.stats
}

func (a *agent) resourceMetrics() nodeapi.ResourceMetrics {
	if a.stats == nil {
		return nil
	}
	return a.stats.ResourceMetrics
}

// logReader reads container logs as kubelet's ReadLogs, asking the
// runtime whether a followed container still runs. Only logs beneath the
// pod logs directory are read, opened there as rotation opens them.
func (a *agent) logReader() nodeapi.LogReader {
	dir := a.PodLogsDir
	if dir == "" {
		dir = podsync.DefaultPodLogsDir
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return func(ctx context.Context, path, containerID string, opts *corev1.PodLogOptions, stdout, stderr io.Writer) error {
		return containerlogs.ReadLogsIn(ctx, dir, path, containerID, containerlogs.NewLogOptions(opts, a.Clock.Now()), a.Runtime, stdout, stderr)
	}
}
