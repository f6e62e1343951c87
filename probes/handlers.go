package probes

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podstart/podstart/internal/expansion"
	"github.com/podstart/podstart/runtime"
)

type result int

const (
	resultSuccess result = iota
	resultWarning
	resultFailure
)

type outcome struct {
	result result
	output string
}

// userAgent is kubelet's for v1.36 probes.
const userAgent = "kube-probe/1.36"

// maxBody is kubelet's maxRespBodyLength.
const maxBody = 10 * 1024

func defaultHTTPClient() *http.Client {
	t := &http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // kubelet does not verify probe targets
		DisableKeepAlives:  true,
		DisableCompression: true,
		Proxy:              nil,
	}
	return &http.Client{Transport: t, CheckRedirect: sameHostRedirects}
}

// sameHostRedirects is kubelet's RedirectChecker(false).
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

func run(ctx context.Context, m *Manager, p *corev1.Probe, c *corev1.Container, podIP, id string, timeout time.Duration) (outcome, error) {
	switch {
	case p.Exec != nil:
		return execProbe(ctx, m.rt, c, id, p.Exec.Command, timeout)
	case p.HTTPGet != nil:
		return httpProbe(ctx, m.http, c, p.HTTPGet, podIP)
	case p.TCPSocket != nil:
		port, err := resolvePort(p.TCPSocket.Port, c)
		if err != nil {
			return outcome{}, err
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = podIP
		}
		return tcpProbe(ctx, host, port, timeout), nil
	case p.GRPC != nil:
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return grpcProbe(ctx, podIP, service, int(p.GRPC.Port), timeout)
	}
	return outcome{}, fmt.Errorf("missing probe handler for container %s", c.Name)
}

// execProbe runs the command; a non-zero exit is a failure with its
// output, as kubelet's exec prober.
func execProbe(ctx context.Context, rt runtime.ContainerManager, c *corev1.Container, id string, command []string, timeout time.Duration) (outcome, error) {
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	cmd := make([]string, len(command))
	for i, a := range command {
		cmd[i] = expansion.Expand(a, expansion.MappingFor(env))
	}
	stdout, stderr, err := rt.ExecSync(ctx, id, cmd, timeout)
	out := string(stdout) + string(stderr)
	var exit *runtime.ExitError
	switch {
	case err == nil:
		return outcome{resultSuccess, out}, nil
	case errors.As(err, &exit):
		return outcome{resultFailure, out}, nil
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, runtime.ErrDeadlineExceeded):
		return outcome{resultFailure, fmt.Sprintf("command %q timed out", strings.Join(cmd, " "))}, nil
	}
	return outcome{}, err
}

func resolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		if n := p.IntValue(); n > 0 && n < 65536 {
			return n, nil
		}
		return 0, fmt.Errorf("invalid port number: %d", p.IntValue())
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil && n > 0 && n < 65536 {
		return n, nil
	}
	return 0, fmt.Errorf("couldn't find port: %v in %v", p.StrVal, c.Name)
}

// httpProbe is kubelet's: GET, 2xx success, 3xx left unfollowed a
// warning, anything else a failure.
func httpProbe(ctx context.Context, client *http.Client, c *corev1.Container, g *corev1.HTTPGetAction, podIP string) (outcome, error) {
	port, err := resolvePort(g.Port, c)
	if err != nil {
		return outcome{}, err
	}
	host := g.Host
	if host == "" {
		host = podIP
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse(fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), path))
	if err != nil {
		return outcome{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return outcome{}, err
	}
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header.Set("User-Agent", userAgent)
	}
	if _, ok := req.Header["Accept"]; !ok {
		req.Header.Set("Accept", "*/*")
	} else if req.Header.Get("Accept") == "" {
		req.Header.Del("Accept")
	}
	res, err := client.Do(req)
	if err != nil {
		return outcome{resultFailure, err.Error()}, nil
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, maxBody))
	switch {
	case res.StatusCode >= 300 && res.StatusCode < 400:
		return outcome{resultWarning, fmt.Sprintf("Probe terminated redirects, Response body: %v", string(b))}, nil
	case res.StatusCode >= 200 && res.StatusCode < 300:
		return outcome{resultSuccess, string(b)}, nil
	}
	return outcome{resultFailure, fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode)}, nil
}

// tcpProbe is kubelet's: a connection opened and closed.
func tcpProbe(ctx context.Context, host string, port int, timeout time.Duration) outcome {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return outcome{resultFailure, err.Error()}
	}
	conn.Close()
	return outcome{resultSuccess, ""}
}

// grpcProbe is kubelet's: grpc.health.v1 Check of service, SERVING is
// success.
func grpcProbe(ctx context.Context, host, service string, port int, timeout time.Duration) (outcome, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUserAgent(userAgent))
	if err != nil {
		return outcome{resultFailure, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, err)}, nil
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		st, ok := status.FromError(err)
		switch {
		case ok && st.Code() == codes.Unimplemented:
			return outcome{resultFailure, fmt.Sprintf("this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", st.Message())}, nil
		case ok && st.Code() == codes.DeadlineExceeded:
			return outcome{resultFailure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)}, nil
		}
		return outcome{resultFailure, fmt.Sprintf("error: health rpc probe failed: %+v", err)}, nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return outcome{resultFailure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String())}, nil
	}
	return outcome{resultSuccess, "service healthy"}, nil
}
