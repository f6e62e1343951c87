package probes

// Ports of kubelet v1.37.2's pkg/probe/http (http_test.go, request_test.go)
// and pkg/kubelet/prober/prober_test.go (TestGetURLParts,
// TestGetTCPAddrParts) against this package's handlers.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podstart/podstart/internal/httpaction"
)

// TestGetURLParts and TestGetTCPAddrParts are kubelet's, on httpaction.ResolvePort.
func TestGetURLParts(t *testing.T) {
	c := &corev1.Container{Ports: []corev1.ContainerPort{{Name: "found", ContainerPort: 93}}}
	for _, tc := range []struct {
		port intstr.IntOrString
		ok   bool
		want int
		err  string
	}{
		{intstr.FromInt32(-1), false, 0, "invalid port number: -1"},
		{intstr.FromString(""), false, 0, `port "" not found`},
		{intstr.FromString("-1"), false, 0, `port "-1" not found`},
		{intstr.FromString("not-found"), false, 0, `port "not-found" not found`},
		{intstr.FromString("found"), true, 93, ""},
		{intstr.FromInt32(76), true, 76, ""},
		// v1.37 dropped the numeric fallback: a string port is a name.
		{intstr.FromString("118"), false, 0, `port "118" not found`},
		{intstr.FromInt32(65536), false, 0, "invalid port number: 65536"},
	} {
		got, err := httpaction.ResolvePort(tc.port, c)
		if tc.ok && (err != nil || got != tc.want) {
			t.Errorf("%v: %d, %v; want %d", tc.port, got, err, tc.want)
		}
		if !tc.ok && (err == nil || err.Error() != tc.err) {
			t.Errorf("%v: error %v, want %q", tc.port, err, tc.err)
		}
	}
	for _, tc := range []struct {
		action   corev1.HTTPGetAction
		wantURL  string
		wantHost string
	}{
		{corev1.HTTPGetAction{Port: intstr.FromString("found")}, "http://127.0.0.1:93", ""},
		{corev1.HTTPGetAction{Host: "hostname", Port: intstr.FromInt32(76), Path: "path"}, "http://hostname:76/path", ""},
		{corev1.HTTPGetAction{Port: intstr.FromInt32(76), Path: "/healthz?x=1", Scheme: corev1.URISchemeHTTPS}, "https://127.0.0.1:76/healthz?x=1", ""},
		{corev1.HTTPGetAction{Port: intstr.FromInt32(76), Path: "%zz"}, "http://127.0.0.1:76/%25zz", ""}, // kubelet's formatURL fallback
		{corev1.HTTPGetAction{Port: intstr.FromInt32(76), HTTPHeaders: []corev1.HTTPHeader{{Name: "host", Value: "a.example"}, {Name: "Host", Value: "b.example"}}}, "http://127.0.0.1:76", "a.example"},
	} {
		req, err := httpRequest(context.Background(), &tc.action, c, "127.0.0.1")
		if err != nil {
			t.Fatalf("%+v: %v", tc.action, err)
		}
		if req.URL.String() != tc.wantURL || req.Host != tc.wantHost {
			t.Errorf("%+v: %s host %q, want %s host %q", tc.action, req.URL, req.Host, tc.wantURL, tc.wantHost)
		}
	}
}

func serve(t *testing.T, h http.HandlerFunc) (*httptest.Server, corev1.HTTPGetAction) {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	return srv, corev1.HTTPGetAction{Port: intstr.FromInt32(int32(port))}
}

func probeHTTP(t *testing.T, g corev1.HTTPGetAction, timeout time.Duration) outcome {
	t.Helper()
	out, err := httpProbe(context.Background(), defaultHTTPClient(), &corev1.Container{}, &g, "127.0.0.1", timeout)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHTTPProbeChecker is kubelet's (with the prober kubelet uses:
// redirects to other hosts not followed).
func TestHTTPProbeChecker(t *testing.T) {
	reply := func(code int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code); w.Write([]byte(body)) }
	}
	echo := func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		for k, vs := range r.Header {
			for _, v := range vs {
				fmt.Fprintf(w, "%s: %s\n", k, v)
			}
		}
	}
	count := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200); fmt.Fprint(w, len(r.Header)) }
	names := func(w http.ResponseWriter, r *http.Request) {
		var keys []string
		for k := range r.Header {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		w.WriteHeader(200)
		w.Write([]byte(strings.Join(keys, "\n")))
	}
	redirect := func(code int, bad bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/" {
				http.Redirect(w, r, "/new", code)
			} else if bad && r.URL.Path == "/new" {
				http.Error(w, "", http.StatusInternalServerError)
			}
		}
	}
	redirectBody := func(code int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/" {
				http.Redirect(w, r, "/new", code)
			} else {
				w.WriteHeader(code)
				w.Write([]byte(body))
			}
		}
	}
	h := func(pairs ...string) []corev1.HTTPHeader {
		var l []corev1.HTTPHeader
		for i := 0; i < len(pairs); i += 2 {
			l = append(l, corev1.HTTPHeader{Name: pairs[i], Value: pairs[i+1]})
		}
		return l
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		headers []corev1.HTTPHeader
		want    result
		body    string // in the output
		notBody string
		output  string // the whole output
	}{
		{name: "200 with body", handler: reply(200, "ok body"), want: resultSuccess, output: "ok body"},
		{name: "three headers", handler: count, want: resultSuccess, output: "3"},
		{name: "header names", handler: names, want: resultSuccess, output: "Accept\nConnection\nUser-Agent"},
		{name: "Accept-Encoding gzip", handler: echo, headers: h("Accept-Encoding", "gzip"), want: resultSuccess, body: "Accept-Encoding: gzip"},
		{name: "Accept-Encoding foo", handler: echo, headers: h("Accept-Encoding", "foo"), want: resultSuccess, body: "Accept-Encoding: foo"},
		{name: "Accept-Encoding empty", handler: echo, headers: h("Accept-Encoding", ""), want: resultSuccess, body: "Accept-Encoding: \n"},
		{name: "custom header", handler: echo, headers: h("X-Muffins-Or-Cupcakes", "muffins"), want: resultSuccess, body: "X-Muffins-Or-Cupcakes: muffins"},
		{name: "lower-case custom header", handler: echo, headers: h("x-muffins-or-cupcakes", "muffins"), want: resultSuccess, body: "X-Muffins-Or-Cupcakes: muffins"},
		{name: "own User-Agent", handler: echo, headers: h("User-Agent", "foo/1.0"), want: resultSuccess, body: "User-Agent: foo/1.0"},
		{name: "empty User-Agent", handler: echo, headers: h("User-Agent", ""), want: resultSuccess, notBody: "User-Agent"},
		{name: "default User-Agent", handler: echo, want: resultSuccess, body: "User-Agent: kube-probe/1.37\n"},
		{name: "own Accept", handler: echo, headers: h("User-Agent", "foo/1.0", "Accept", "text/html"), want: resultSuccess, body: "Accept: text/html"},
		{name: "own Accept and User-Agent", handler: echo, headers: h("User-Agent", "foo/1.0", "Accept", "foo/*"), want: resultSuccess, body: "User-Agent: foo/1.0"},
		{name: "own Accept and custom", handler: echo, headers: h("X-Muffins-Or-Cupcakes", "muffins", "Accept", "foo/*"), want: resultSuccess, body: "X-Muffins-Or-Cupcakes: muffins"},
		{name: "Accept foo", handler: echo, headers: h("Accept", "foo/*"), want: resultSuccess, body: "Accept: foo/*"},
		{name: "empty Accept removed", handler: echo, headers: h("Accept", ""), want: resultSuccess, notBody: "Accept:"},
		{name: "empty Accept removed with User-Agent", handler: echo, headers: h("User-Agent", "foo/1.0", "Accept", ""), want: resultSuccess, notBody: "Accept:"},
		{name: "default Accept", handler: echo, want: resultSuccess, body: "Accept: */*"},
		{name: "Host header overrides the host", handler: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200); w.Write([]byte(r.Host)) },
			headers: h("Host", "muffins.cupcakes.org"), want: resultSuccess, output: "muffins.cupcakes.org"},
		{name: "400 fails", handler: reply(400, "fail body"), want: resultFailure, output: "HTTP probe failed with statuscode: 400"},
		{name: "500 fails, body not shown", handler: reply(500, "fail body"), want: resultFailure, output: "HTTP probe failed with statuscode: 500"},
		{name: "301 to a good page", handler: redirect(301, false), want: resultSuccess},
		{name: "301 to a bad page", handler: redirect(301, true), want: resultFailure},
		{name: "302 to a good page", handler: redirect(302, false), want: resultSuccess},
		{name: "302 to a bad page", handler: redirect(302, true), want: resultFailure},
		{name: "303", handler: redirect(303, false), want: resultSuccess},
		{name: "307", handler: redirect(307, false), want: resultSuccess},
		{name: "308", handler: redirect(308, false), want: resultSuccess},
		{name: "redirect then 3xx with body", handler: redirectBody(304, "bar"), want: resultWarning, output: "Probe terminated redirects, Response body: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, g := serve(t, tc.handler)
			g.HTTPHeaders = tc.headers
			out := probeHTTP(t, g, 10*time.Second)
			if out.result != tc.want {
				t.Errorf("result %v (%q), want %v", out.result, out.output, tc.want)
			}
			if tc.body != "" && !strings.Contains(out.output, tc.body) {
				t.Errorf("output %q lacks %q", out.output, tc.body)
			}
			if tc.notBody != "" && strings.Contains(out.output, tc.notBody) {
				t.Errorf("output %q has %q", out.output, tc.notBody)
			}
			if tc.output != "" && out.output != tc.output {
				t.Errorf("output %q, want %q", out.output, tc.output)
			}
		})
	}
}

// TestHTTPProbeTimeout: no answer within timeoutSeconds is a failure
// saying so, in net/http's words for a client timeout as kubelet's.
func TestHTTPProbeTimeout(t *testing.T) {
	_, g := serve(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	// The context bounds the test should the probe's own timeout not work.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := httpProbe(ctx, defaultHTTPClient(), &corev1.Container{}, &g, "127.0.0.1", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if out.result != resultFailure || !strings.Contains(out.output, "Client.Timeout exceeded while awaiting headers") {
		t.Errorf("%v %q", out.result, out.output)
	}
}

// TestHTTPProbeChecker_NonLocalRedirects is kubelet's (local prober).
func TestHTTPProbeChecker_NonLocalRedirects(t *testing.T) {
	handler := func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			loc, _ := url.QueryUnescape(r.URL.Query().Get("loc"))
			http.Redirect(w, r, loc, http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/success":
			w.WriteHeader(http.StatusOK)
		default:
			http.Error(w, "", http.StatusInternalServerError)
		}
	}
	other, _ := serve(t, handler)
	_, g := serve(t, handler)
	for _, tc := range []struct {
		name, loc string
		want      result
	}{
		{"local success", "/success", resultSuccess},
		{"local fail", "/fail", resultFailure},
		{"newport success", other.URL + "/success", resultSuccess},
		{"newport fail", other.URL + "/fail", resultFailure},
		{"bogus nonlocal", "http://0.0.0.0/fail", resultWarning},
		{"redirect loop", "/loop", resultFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := g
			g.Path = "/redirect?loc=" + url.QueryEscape(tc.loc)
			if out := probeHTTP(t, g, 10*time.Second); out.result != tc.want {
				t.Errorf("%v (%q), want %v", out.result, out.output, tc.want)
			}
		})
	}
}

// TestHTTPProbeChecker_HostHeaderPreservedAfterRedirect is kubelet's.
func TestHTTPProbeChecker_HostHeaderPreservedAfterRedirect(t *testing.T) {
	_, g := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/success", http.StatusFound)
		case "/success":
			if r.Host == "www.success.com" {
				w.WriteHeader(http.StatusOK)
			} else {
				http.Error(w, "", http.StatusBadRequest)
			}
		default:
			http.Error(w, "", http.StatusInternalServerError)
		}
	})
	for host, want := range map[string]result{"www.success.com": resultSuccess, "www.fail.com": resultFailure} {
		g := g
		g.Path = "/redirect"
		g.HTTPHeaders = []corev1.HTTPHeader{{Name: "Host", Value: host}}
		if out := probeHTTP(t, g, 10*time.Second); out.result != want {
			t.Errorf("Host %s: %v, want %v", host, out.result, want)
		}
	}
}

// TestHTTPProbeChecker_Payload is kubelet's PayloadTruncated and
// PayloadNormal: at most 10 KiB of the body is read, and a longer body is
// no failure.
func TestHTTPProbeChecker_Payload(t *testing.T) {
	for _, n := range []int{maxOutput - 1, maxOutput + 1} {
		_, g := serve(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(strings.Repeat("a", n))) })
		out := probeHTTP(t, g, 10*time.Second)
		if out.result != resultSuccess || len(out.output) != min(n, maxOutput) {
			t.Errorf("body of %d: %v, %d bytes read", n, out.result, len(out.output))
		}
	}
}

// TestTCPProbe is kubelet's tcp_test: an open port succeeds, a closed one
// fails with the dialer's error.
func TestTCPProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if out := tcpProbe(context.Background(), "127.0.0.1", port, time.Second); out.result != resultSuccess {
		t.Errorf("open port: %v %q", out.result, out.output)
	}
	l.Close()
	out := tcpProbe(context.Background(), "127.0.0.1", port, time.Second)
	if out.result != resultFailure || !strings.Contains(out.output, "connection refused") {
		t.Errorf("closed port: %v %q", out.result, out.output)
	}
}

// TestGRPCProbeNoServer is kubelet's grpc_test "no server": the dial waits
// for the connection until the timeout and says so.
func TestGRPCProbeNoServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	out := grpcProbe(context.Background(), "127.0.0.1", "", port, 200*time.Millisecond)
	want := fmt.Sprintf("timeout: failed to connect service %q within 200ms: context deadline exceeded", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if out.result != resultFailure || out.output != want {
		t.Errorf("%v %q, want %q", out.result, out.output, want)
	}
}

// TestGRPCProbeUnimplemented is kubelet's grpc_test: a server without the
// health service is a failure in kubelet's words.
func TestGRPCProbeUnimplemented(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	go srv.Serve(l)
	defer srv.Stop()
	out := grpcProbe(context.Background(), "127.0.0.1", "", l.Addr().(*net.TCPAddr).Port, 5*time.Second)
	want := "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health"
	if out.result != resultFailure || out.output != want {
		t.Errorf("%v %q, want %q", out.result, out.output, want)
	}
}
