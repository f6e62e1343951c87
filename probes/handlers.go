package probes

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/internal/expansion"
	"github.com/podstart/podstart/internal/httpaction"
	"github.com/podstart/podstart/runtime"
)

// result is kubelet's probe.Result: what one run of a handler found.
type result int

const (
	resultUnknown result = iota
	resultSuccess
	resultWarning
	resultFailure
)

// String is kubelet's text for the result ("... resulted in unknown
// state").
func (r result) String() string {
	switch r {
	case resultSuccess:
		return "success"
	case resultWarning:
		return "warning"
	case resultFailure:
		return "failure"
	}
	return "unknown"
}

type outcome struct {
	result result
	output string
}

// userAgent is kubelet v1.37's for probes ("kube-probe/<major>.<minor>").
const userAgent = "kube-probe/1.37"

// maxOutput is kubelet's maxRespBodyLength and exec maxReadLength: the
// most of a body or a command's output a probe reads.
const maxOutput = 10 * 1024

func defaultHTTPClient() *http.Client {
	t := &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // kubelet does not verify probe targets
		DisableKeepAlives:   true,
		DisableCompression:  true,
		Proxy:               nil,
		TLSHandshakeTimeout: 10 * time.Second,
		DialContext:         probeDialer().DialContext,
	}
	return &http.Client{Transport: t, CheckRedirect: httpaction.SameHostRedirects}
}

// probeTimeout is the probe's timeoutSeconds, or the API server's default
// of 1s when it is not positive (a pod nobody defaulted): each handler
// takes 0 as no timeout at all (net/http's Client.Timeout, a dialer's,
// CRI's ExecSync), so a silent server would hold the worker for ever.
func probeTimeout(p *corev1.Probe) time.Duration {
	return time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
}

// run1 is kubelet's runProbe: one run of the worker's handler. An error
// comes with resultUnknown.
func (w *worker) run1(pod *corev1.Pod, podIP string) (outcome, error) {
	ctx, m, p, c := w.ctx, w.m, w.spec, &w.container
	timeout := probeTimeout(p)
	switch {
	case p.Exec != nil:
		if w.command == nil {
			w.command = expandCommand(p.Exec.Command, c.Env)
		}
		return execProbe(ctx, m.rt, w.containerID, w.command, timeout)
	case p.HTTPGet != nil:
		return httpProbe(ctx, m.http, c, p.HTTPGet, podIP, timeout)
	case p.TCPSocket != nil:
		port, err := httpaction.ResolvePort(p.TCPSocket.Port, c)
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
		return grpcProbe(ctx, podIP, service, int(p.GRPC.Port), timeout), nil
	}
	return outcome{}, fmt.Errorf("missing probe handler for %s_%s(%s):%s", pod.Name, pod.Namespace, pod.UID, c.Name)
}

// execProbe is kubelet's exec prober over ExecSync: exit 0 is success, any
// other exit a failure with the command's output (stdout then stderr, at
// most 10 KiB), a timeout a failure saying so, any other error an error.
// The runtime enforces the timeout (kubelet's ExecProbeTimeout, locked on
// since v1.35); the call itself is bounded by the runtime client's.
func execProbe(ctx context.Context, rt runtime.ContainerManager, id string, cmd []string, timeout time.Duration) (outcome, error) {
	stdout, stderr, err := rt.ExecSync(ctx, id, cmd, timeout)
	out := limited(stdout, stderr)
	var exit *runtime.ExitError
	switch {
	case err == nil:
		return outcome{resultSuccess, out}, nil
	case errors.As(err, &exit):
		if exit.ExitCode == 0 {
			return outcome{resultSuccess, out}, nil
		}
		return outcome{resultFailure, out}, nil
	case errors.Is(err, runtime.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		// The CRI client's ErrCommandTimedOut text, as kubelet reports it.
		return outcome{resultFailure, fmt.Sprintf("command timed out: %q timed out after %s", strings.Join(cmd, " "), timeout)}, nil
	}
	return outcome{}, err
}

// expandCommand is kubelet's ExpandContainerCommandOnlyStatic: every
// variable of the container's env maps to its literal value (empty for
// valueFrom).
func expandCommand(command []string, envs []corev1.EnvVar) []string {
	env := make(map[string]string, len(envs))
	for _, e := range envs {
		env[e.Name] = e.Value
	}
	cmd := make([]string, len(command))
	for i, a := range command {
		cmd[i] = expansion.Expand(a, expansion.MappingFor(env))
	}
	return cmd
}

// limited is stdout then stderr, cut at maxOutput bytes.
func limited(stdout, stderr []byte) string {
	if len(stdout) >= maxOutput {
		return string(stdout[:maxOutput])
	}
	if len(stdout)+len(stderr) > maxOutput {
		stderr = stderr[:maxOutput-len(stdout)]
	}
	return string(stdout) + string(stderr)
}

// httpRequest is kubelet's NewRequestForHTTPGetAction for a probe: the
// action's host, else the pod's IP.
func httpRequest(ctx context.Context, g *corev1.HTTPGetAction, c *corev1.Container, podIP string) (*http.Request, error) {
	host := g.Host
	if host == "" {
		host = podIP
	}
	return httpaction.NewRequest(ctx, g, c, host, userAgent)
}

// httpProbe is kubelet's DoHTTPProbe: 2xx success, 3xx left unfollowed a
// warning, anything else (or no answer within the timeout) a failure.
func httpProbe(ctx context.Context, base *http.Client, c *corev1.Container, g *corev1.HTTPGetAction, podIP string, timeout time.Duration) (outcome, error) {
	req, err := httpRequest(ctx, g, c, podIP)
	if err != nil {
		return outcome{}, err
	}
	client := *base
	client.Timeout = timeout
	res, err := client.Do(req)
	if err != nil {
		return outcome{resultFailure, err.Error()}, nil
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxOutput))
	if err != nil {
		return outcome{resultFailure, ""}, nil
	}
	body := string(b)
	if res.StatusCode >= http.StatusOK && res.StatusCode < http.StatusBadRequest {
		if res.StatusCode >= http.StatusMultipleChoices {
			return outcome{resultWarning, fmt.Sprintf("Probe terminated redirects, Response body: %v", body)}, nil
		}
		return outcome{resultSuccess, body}, nil
	}
	// As kubelet (issue 99425), the body is not in the message.
	return outcome{resultFailure, fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode)}, nil
}

// tcpProbe is kubelet's: a connection opened and closed.
func tcpProbe(ctx context.Context, host string, port int, timeout time.Duration) outcome {
	d := probeDialer()
	d.Timeout = timeout
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return outcome{resultFailure, err.Error()}
	}
	conn.Close()
	return outcome{resultSuccess, ""}
}

// grpcProbe is kubelet's: connect within the timeout (kubelet dials with
// WithBlock), then grpc.health.v1 Check of service; SERVING is success,
// anything else a failure.
func grpcProbe(ctx context.Context, host, service string, port int, timeout time.Duration) outcome {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUserAgent(userAgent),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return probeDialer().DialContext(ctx, "tcp", addr)
		}))
	if err == nil {
		err = waitReady(ctx, conn)
		if err != nil {
			conn.Close()
		}
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return outcome{resultFailure, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, err)}
		}
		return outcome{resultFailure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err)}
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(metadata.NewOutgoingContext(ctx, metadata.MD{}), &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		if st, ok := status.FromError(err); ok {
			switch st.Code() {
			case codes.Unimplemented:
				return outcome{resultFailure, fmt.Sprintf("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", st.Message())}
			case codes.DeadlineExceeded:
				return outcome{resultFailure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)}
			}
		}
		return outcome{resultFailure, fmt.Sprintf("error: health rpc probe failed: %+v", err)}
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return outcome{resultFailure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String())}
	}
	return outcome{resultSuccess, "service healthy"}
}

// waitReady is grpc.WithBlock's dial: wait until the connection is ready,
// retrying through transient failures, until ctx ends (then ctx's error).
func waitReady(ctx context.Context, conn *grpc.ClientConn) error {
	conn.Connect()
	for {
		s := conn.GetState()
		if s == connectivity.Ready {
			return nil
		}
		if s == connectivity.Shutdown {
			return errors.New("grpc: the client connection is closing")
		}
		if !conn.WaitForStateChange(ctx, s) {
			return ctx.Err()
		}
	}
}
