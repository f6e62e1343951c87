package podsync

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podstart/podstart/runtime"
)

// minGracePeriod is kubelet's floor for stopping a container.
const minGracePeriod = 2

// gracePeriod is kubelet's setTerminationGracePeriod.
func gracePeriod(pod *corev1.Pod, c *corev1.Container, reason KillReason) int64 {
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		return *pod.DeletionGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		g := *pod.Spec.TerminationGracePeriodSeconds
		if reason == KillReasonStartupProbe && c.StartupProbe != nil && c.StartupProbe.TerminationGracePeriodSeconds != nil {
			g = *c.StartupProbe.TerminationGracePeriodSeconds
		}
		if reason == KillReasonLivenessProbe && c.LivenessProbe != nil && c.LivenessProbe.TerminationGracePeriodSeconds != nil {
			g = *c.LivenessProbe.TerminationGracePeriodSeconds
		}
		return g
	}
	return minGracePeriod
}

// runHook runs an exec or HTTP GET lifecycle handler, returning kubelet's
// message on failure.
func (s *Syncer) runHook(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id string, h *corev1.LifecycleHandler, podIP string) (string, error) {
	switch {
	case h.Exec != nil:
		_, _, err := s.rt.ExecSync(ctx, id, h.Exec.Command, 0)
		if err != nil {
			var exit *runtime.ExitError
			out := ""
			if errors.As(err, &exit) {
				out = string(exit.Stderr)
			}
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q", h.Exec.Command, c.Name, podName(pod), err, out), err
		}
		return "", nil
	case h.HTTPGet != nil:
		if err := s.httpHook(ctx, c, h.HTTPGet, podIP); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, c.Name, podName(pod), err), err
		}
		return "", nil
	case h.Sleep != nil:
		t := s.o.clock.NewTimer(time.Duration(h.Sleep.Seconds) * time.Second)
		defer t.Stop()
		select {
		case <-t.C():
			return "", nil
		case <-ctx.Done():
			return "sleep hook interrupted", ctx.Err()
		}
	}
	err := errors.New("handler has no exec, httpGet or sleep action")
	return err.Error(), err
}

func (s *Syncer) httpHook(ctx context.Context, c *corev1.Container, g *corev1.HTTPGetAction, podIP string) error {
	host := g.Host
	if host == "" {
		host = podIP
	}
	if host == "" {
		return errors.New("no host and no pod IP for the HTTP hook")
	}
	port, err := resolvePort(g.Port, c)
	if err != nil {
		return err
	}
	scheme := "http"
	if g.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: g.Path}
	if u.Path == "" {
		u.Path = "/"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	for _, h := range g.HTTPHeaders {
		req.Header.Add(h.Name, h.Value)
	}
	resp, err := s.o.httpClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("HTTP status %d", resp.StatusCode)
	}
	return nil
}

func resolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("port %q not found in container %q", p.StrVal, c.Name)
}
