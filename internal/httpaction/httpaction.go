// Package httpaction holds what kubelet's HTTP probes and HTTP lifecycle
// hooks share (pkg/probe and pkg/probe/http in kubelet v1.37.2): resolving
// an action's port and the redirect rule of their clients.
package httpaction

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ResolvePort is kubelet v1.37's probe.ResolveContainerPort, errors
// included: a string port is only ever the name of one of the container's
// ports ("port %q not found" otherwise); a numeric string such as "8080"
// is no longer taken as a number (v1.36 fell back to strconv.Atoi).
func ResolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	port := -1
	switch p.Type {
	case intstr.Int:
		port = p.IntValue()
	case intstr.String:
		found := false
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				port, found = int(cp.ContainerPort), true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("port %q not found", p.StrVal)
		}
	default:
		return port, fmt.Errorf("intOrString had no kind: %+v", p)
	}
	if port > 0 && port < 65536 {
		return port, nil
	}
	return port, fmt.Errorf("invalid port number: %v", port)
}

// SameHostRedirects is kubelet's RedirectChecker(false), an
// http.Client's CheckRedirect: a redirect to another host is not
// followed (its response is the answer), at most 10 are.
func SameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// NewRequest is kubelet's NewRequestForHTTPGetAction: a GET of the
// action's scheme, host (given: the action's, the pod's IP, ...), port
// (ResolvePort) and path (sent as written when it does not parse, as
// kubelet's formatURL), with the action's headers, userAgent and Accept */*
// unless they set their own (an empty Accept removes it), and a Host header
// as the request's host.
func NewRequest(ctx context.Context, g *corev1.HTTPGetAction, c *corev1.Container, host, userAgent string) (*http.Request, error) {
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	port, err := ResolvePort(g.Port, c)
	if err != nil {
		return nil, err
	}
	// As kubelet's formatURL: a path that does not parse is sent as it is.
	u, err := url.Parse(g.Path)
	if err != nil {
		u = &url.URL{Path: g.Path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	headers := make(http.Header, len(g.HTTPHeaders)+2)
	for _, h := range g.HTTPHeaders {
		headers.Add(h.Name, h.Value)
	}
	if _, ok := headers["User-Agent"]; !ok {
		headers.Set("User-Agent", userAgent)
	}
	if _, ok := headers["Accept"]; !ok {
		headers.Set("Accept", "*/*")
	} else if headers.Get("Accept") == "" {
		headers.Del("Accept")
	}
	req.Header = headers
	req.Host = headers.Get("Host")
	return req, nil
}
