package podsync

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/internal/httpaction"
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
		if err := s.httpHook(ctx, pod, c, h.HTTPGet, podIP); err != nil {
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
			// Kubelet's text; the error still matches ctx's.
			err := sleepInterrupted{ctx.Err()}
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v", h.Sleep.Seconds, c.Name, podName(pod), err), err
		}
	}
	err := errors.New("handler has no exec, httpGet or sleep action")
	return err.Error(), err
}

// sleepInterrupted is kubelet's error for a sleep hook cut short: its
// text is kubelet's, and it unwraps to the context's error.
type sleepInterrupted struct{ err error }

func (e sleepInterrupted) Error() string { return "container terminated before sleep hook finished" }
func (e sleepInterrupted) Unwrap() error { return e.err }

// lifecycleUserAgent is kubelet v1.37's User-Agent for HTTP lifecycle
// hooks ("kube-lifecycle/<major>.<minor>"), sent unless the hook sets one.
const lifecycleUserAgent = "kube-lifecycle/1.37"

// maxHookBody is how much of a hook's answer is read (and thrown away) so
// that the connection can be reused, as kubelet's maxRespBodyLength.
const maxHookBody = 10 * 1024

// EventLifecycleHTTPFallback is kubelet's reason for the Warning event on
// a pod whose HTTPS hook was answered in plain HTTP and then succeeded
// when asked again in HTTP.
const EventLifecycleHTTPFallback = "LifecycleHTTPFallback"

// httpHook is kubelet v1.37.2's runHTTPHandler: a GET built as
// pkg/probe/http's NewRequestForHTTPGetAction (User-Agent
// kube-lifecycle/1.37 and Accept */* unless given, a Host header sets the
// request's host, a string port only a container port's name); the
// answer's status is not looked at, only whether one came; an HTTPS hook
// answered in plain HTTP is asked again in HTTP without its Authorization
// header, and a Warning LifecycleHTTPFallback event says so.
func (s *Syncer) httpHook(ctx context.Context, pod *corev1.Pod, c *corev1.Container, g *corev1.HTTPGetAction, podIP string) error {
	host := g.Host
	if host == "" {
		host = podIP
	}
	if host == "" {
		// As kubelet: the pod's IP from the runtime (a pre-stop hook is
		// given none).
		st, err := s.Status(ctx, pod)
		if err != nil {
			return fmt.Errorf("unable to get pod status, event handlers may be invalid: %w", err)
		}
		if len(st.IPs) == 0 {
			return fmt.Errorf("failed to find networking container: pod %s has no IP", podName(pod))
		}
		host = st.IPs[0]
	}
	req, err := hookRequest(ctx, g, c, host)
	if err != nil {
		return err
	}
	resp, err := s.o.httpClient.Do(req)
	discardBody(resp)
	if isHTTPResponseError(err) {
		retry := req.Clone(ctx)
		retry.URL.Scheme = "http"
		retry.Header.Del("Authorization")
		resp, rerr := s.o.httpClient.Do(retry)
		discardBody(resp)
		if rerr == nil {
			logFromContext(ctx).V(1).Info("HTTPS request to lifecycle hook got HTTP response, retried with HTTP", "pod", podName(pod), "host", retry.URL.Host)
			s.o.recorder.Eventf(images.ContainerRef(pod, nil), corev1.EventTypeWarning, EventLifecycleHTTPFallback,
				"request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", retry.URL.Host)
			err = nil
		}
	}
	return err
}

// hookRequest is kubelet's NewRequestForHTTPGetAction with the
// "lifecycle" User-Agent.
func hookRequest(ctx context.Context, g *corev1.HTTPGetAction, c *corev1.Container, host string) (*http.Request, error) {
	return httpaction.NewRequest(ctx, g, c, host, lifecycleUserAgent)
}

// isHTTPResponseError: an HTTPS request answered in plain HTTP.
func isHTTPResponseError(err error) bool {
	var uerr *url.Error
	if err == nil || !errors.As(err, &uerr) {
		return false
	}
	return strings.Contains(uerr.Err.Error(), "server gave HTTP response to HTTPS client")
}

func discardBody(resp *http.Response) {
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	if resp.ContentLength <= maxHookBody {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxHookBody))
	}
}

// lifecycleHTTPClient is kubelet's insecureContainerLifecycleHTTPClient:
// a hook's HTTPS target is the container's own server, whose certificate
// nothing on the node can verify, so it is not verified; the client
// carries no credentials, and a redirect to another host is not followed
// (kubelet's RedirectChecker(false)). The timeout bounds a hook whose
// server never answers.
func lifecycleHTTPClient() *http.Client {
	return &http.Client{
		Timeout:       30 * time.Second,
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // as kubelet: nothing can verify a container's certificate
		CheckRedirect: httpaction.SameHostRedirects,
	}
}
