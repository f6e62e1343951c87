package nodeapi

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	mountsfake "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podstep"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// staticPods serves fixed pods.
type staticPods []*corev1.Pod

func (s staticPods) Pods() []*corev1.Pod { return s }
func (s staticPods) Pod(ns, name string) (*corev1.Pod, bool) {
	for _, p := range s {
		if p.Namespace == ns && p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// reviewer answers TokenReviews and SubjectAccessReviews from tables, and
// counts them.
type reviewer struct {
	tokens  map[string]string          // token -> user
	allowed map[string]map[string]bool // user -> subresource -> allowed
	fail    bool
	tokenN  atomic.Int32
	sarN    atomic.Int32
}

func (r *reviewer) CreateTokenReview(_ context.Context, tr *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
	r.tokenN.Add(1)
	out := tr.DeepCopy()
	if u, ok := r.tokens[tr.Spec.Token]; ok {
		out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: u, Groups: []string{"system:authenticated"}}}
	}
	return out, nil
}

func (r *reviewer) CreateSubjectAccessReview(_ context.Context, sar *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
	r.sarN.Add(1)
	if r.fail {
		return nil, errors.New("apiserver down")
	}
	ra := sar.Spec.ResourceAttributes
	if ra.Resource != "nodes" || ra.Name != "node-1" || ra.Version != "v1" {
		return nil, fmt.Errorf("unexpected attributes %+v", ra)
	}
	out := sar.DeepCopy()
	out.Status.Allowed = r.allowed[sar.Spec.User][ra.Subresource]
	return out, nil
}

func newServer(t *testing.T, c Config, rv *reviewer) *Server {
	t.Helper()
	if c.NodeName == "" {
		c.NodeName = "node-1"
	}
	if rv != nil {
		c.Authenticator = Authenticators{NewTokens(rv, 0)}
		c.Authorizer = NewReviews(rv, 0, 0)
	}
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func get(t *testing.T, h http.Handler, path, token string) (int, string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

func TestNewRefusesUnsafeConfig(t *testing.T) {
	rt := fake.New()
	for _, c := range []Config{
		{Pods: staticPods{}, Runtime: rt},                   // no node name
		{NodeName: "n", Pods: staticPods{}, Runtime: rt},    // no authn/authz and not Insecure
		{NodeName: "n", Insecure: true, Runtime: rt},        // no pods
		{NodeName: "n", Insecure: true, Pods: staticPods{}}, // no runtime
	} {
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v) = %v, want ErrConfig", c, err)
		}
	}
}

func TestAuthenticationAndAuthorization(t *testing.T) {
	rv := &reviewer{
		tokens: map[string]string{"alice-token": "alice", "bob-token": "bob"},
		allowed: map[string]map[string]bool{
			"alice": {"proxy": true, "stats": true, "log": true, "metrics": true},
			"bob":   {"stats": true},
		},
	}
	s := newServer(t, Config{Pods: staticPods{}, Runtime: fake.New()}, rv)
	for _, tc := range []struct {
		path, token string
		code        int
		body        string
	}{
		{"/pods", "", 401, "Unauthorized"},
		{"/pods", "wrong", 401, "Unauthorized"},
		{"/pods", "bob-token", 403, "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[pods proxy])\n"},
		{"/healthz", "bob-token", 403, "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[healthz proxy])\n"},
		{"/stats/summary", "bob-token", 501, "stats are not served by this node"},
		{"/pods", "alice-token", 200, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`},
		{"/healthz", "alice-token", 200, "ok"},
	} {
		code, body := get(t, s, tc.path, tc.token)
		if code != tc.code || body != tc.body {
			t.Errorf("GET %s as %q: %d %q, want %d %q", tc.path, tc.token, code, body, tc.code, tc.body)
		}
	}
	// Answers are kept: asking again reviews nothing.
	tokens, sars := rv.tokenN.Load(), rv.sarN.Load()
	get(t, s, "/pods", "alice-token")
	get(t, s, "/pods", "bob-token")
	if rv.tokenN.Load() != tokens || rv.sarN.Load() != sars {
		t.Errorf("cached answers reviewed again: tokens %d -> %d, SARs %d -> %d", tokens, rv.tokenN.Load(), sars, rv.sarN.Load())
	}
}

func TestAnswersExpire(t *testing.T) {
	rv := &reviewer{tokens: map[string]string{"t": "alice"}, allowed: map[string]map[string]bool{"alice": {"proxy": true}}}
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	tok := NewTokens(rv, 0)
	tok.clock = clk
	rvw := NewReviews(rv, 0, 0)
	rvw.clock = clk
	s := newServer(t, Config{Pods: staticPods{}, Runtime: fake.New(), Authenticator: tok, Authorizer: rvw}, nil)
	get(t, s, "/pods", "t")
	clk.Step(DefaultWebhookCacheTTL - time.Second)
	get(t, s, "/pods", "t")
	if n := rv.tokenN.Load(); n != 1 {
		t.Errorf("token reviewed %d times within the TTL, want 1", n)
	}
	clk.Step(2 * time.Second)
	get(t, s, "/pods", "t")
	if n := rv.tokenN.Load(); n != 2 {
		t.Errorf("token reviewed %d times after the TTL, want 2", n)
	}
	// A denial is kept 30 s, an allowance 5 min.
	rv.allowed["alice"]["proxy"] = false
	clk.Step(DefaultAuthorizedTTL + time.Second)
	if code, _ := get(t, s, "/pods", "t"); code != 403 {
		t.Errorf("after the allowed TTL: %d, want 403", code)
	}
	rv.allowed["alice"]["proxy"] = true
	if code, _ := get(t, s, "/pods", "t"); code != 403 {
		t.Errorf("within the denied TTL: %d, want 403 (cached)", code)
	}
	clk.Step(DefaultUnauthorizedTTL + time.Second)
	if code, _ := get(t, s, "/pods", "t"); code != 200 {
		t.Errorf("after the denied TTL: %d, want 200", code)
	}
}

func TestAuthorizationError(t *testing.T) {
	rv := &reviewer{tokens: map[string]string{"t": "alice"}, fail: true}
	s := newServer(t, Config{Pods: staticPods{}, Runtime: fake.New()}, rv)
	code, body := get(t, s, "/stats/summary", "t")
	if code != 500 || body != "Authorization error (user=alice, verb=get, resource=nodes, subresource=stats)" {
		t.Errorf("%d %q", code, body)
	}
}

// X509 takes the CN and O of a certificate the client CA signed, and
// nothing else.
func TestX509(t *testing.T) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, _ := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	ca, _ := x509.ParseCertificate(caDER)
	client := func(cn string, usage x509.ExtKeyUsage, signer *ecdsa.PrivateKey, parent *x509.Certificate) *x509.Certificate {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn, Organization: []string{"system:masters"}},
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		if signer == nil {
			signer, parent = key, tmpl
		}
		der, _ := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
		c, _ := x509.ParseCertificate(der)
		return c
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	a := X509{ClientCAs: pool}
	req := func(c *x509.Certificate) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/pods", nil)
		if c != nil {
			r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}}
		}
		return r
	}
	u, ok, err := a.Authenticate(req(client("admin", x509.ExtKeyUsageClientAuth, caKey, ca)))
	if !ok || err != nil || u.Name != "admin" || len(u.Groups) != 1 || u.Groups[0] != "system:masters" {
		t.Errorf("signed client: %+v %v %v", u, ok, err)
	}
	for name, c := range map[string]*x509.Certificate{
		"self-signed":  client("admin", x509.ExtKeyUsageClientAuth, nil, nil),
		"server usage": client("admin", x509.ExtKeyUsageServerAuth, caKey, ca),
		"no CN":        client("", x509.ExtKeyUsageClientAuth, caKey, ca),
	} {
		if _, ok, _ := a.Authenticate(req(c)); ok {
			t.Errorf("%s certificate authenticated", name)
		}
	}
	if _, ok, err := a.Authenticate(req(nil)); ok || err != nil {
		t.Errorf("no certificate: %v %v, want not ok and no error", ok, err)
	}
}

func TestRequestAttributes(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		verb         string
		subs         string
	}{
		{"GET", "/pods", "get", "pods,proxy"},
		{"GET", "/pods/", "get", "pods,proxy"},
		{"GET", "/podsx", "get", "proxy"},
		{"GET", "/runningpods/", "get", "pods,proxy"},
		{"GET", "/healthz", "get", "healthz,proxy"},
		{"GET", "/healthz/ping", "get", "healthz,proxy"},
		{"GET", "/configz", "get", "configz,proxy"},
		{"GET", "/stats/summary", "get", "stats"},
		{"GET", "/stats", "get", "stats"},
		{"GET", "/metrics", "get", "metrics"},
		{"GET", "/metrics/resource", "get", "metrics"},
		{"GET", "/logs/", "get", "log"},
		{"GET", "/containerLogs/ns/p/c", "get", "proxy"},
		{"POST", "/exec/ns/p/c", "create", "proxy"},
		{"POST", "/checkpoint/ns/p/c", "create", "checkpoint"},
		{"GET", "/flagz", "get", "configz"},
		{"PUT", "/x", "update", "proxy"},
		{"PATCH", "/x", "patch", "proxy"},
		{"DELETE", "/x", "delete", "proxy"},
		{"HEAD", "/x", "", "proxy"},
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		attrs := RequestAttributes("node-1", User{Name: "u"}, r)
		var subs []string
		for _, a := range attrs {
			subs = append(subs, a.Subresource)
			if a.Verb != tc.verb || a.Name != "node-1" || a.Path != tc.path {
				t.Errorf("%s %s: %+v", tc.method, tc.path, a)
			}
		}
		if got := strings.Join(subs, ","); got != tc.subs {
			t.Errorf("%s %s: subresources %s, want %s", tc.method, tc.path, got, tc.subs)
		}
	}
}

// logsEnv runs a pod on the fake runtime and serves it.
type logsEnv struct {
	s     *Server
	pod   *corev1.Pod
	mu    sync.Mutex
	reads []string // "path|id|opts"
}

func newLogsEnv(t *testing.T, split bool, startFn fake.StartFunc) *logsEnv {
	t.Helper()
	rt := fake.New(fake.WithImages("busybox:1.35"), fake.WithStartFunc(startFn))
	dir := t.TempDir()
	syncer := podsync.NewSyncer(rt, nil, podsync.WithRootDir(dir), podsync.WithPodLogsDir(dir+"/logs"), podsync.WithMounter(mountsfake.New()))
	p, err := podstep.New(syncer, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1.35"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		_, _ = p.Sync(context.Background())
	}
	e := &logsEnv{pod: p.Pod()}
	e.s = newServer(t, Config{Insecure: true, Pods: staticPods{e.pod}, Runtime: rt, SplitLogStreams: split,
		Logs: func(ctx context.Context, path, id string, opts *corev1.PodLogOptions, stdout, stderr io.Writer) error {
			e.mu.Lock()
			o, _ := json.Marshal(opts)
			e.reads = append(e.reads, path+"|"+id+"|"+string(o))
			e.mu.Unlock()
			if stdout != nil {
				fmt.Fprintln(stdout, "out line")
			}
			if stderr != nil {
				fmt.Fprintln(stderr, "err line")
			}
			return nil
		}}, nil)
	return e
}

func TestContainerLogs(t *testing.T) {
	e := newLogsEnv(t, false, nil)
	id := strings.TrimPrefix(e.pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	for _, tc := range []struct {
		path string
		code int
		body string
		read string // part of what the reader was asked
	}{
		{path: "/containerLogs/shop/web/app?tailLines=5&timestamps=true&limitBytes=100", code: 200, body: "out line\nerr line\n",
			read: `|` + id + `|{"timestamps":true,"tailLines":5,"limitBytes":100}`},
		{path: "/containerLogs/shop/web/app?tail=all&follow=1", code: 200, body: "out line\nerr line\n", read: `{"follow":true}`},
		{path: "/containerLogs/shop/web/app?sinceTime=2026-11-26T10:00:00Z", code: 200, body: "out line\nerr line\n", read: `"sinceTime":"2026-11-26T10:00:00Z"`},
		{path: "/containerLogs/shop/web/app?tailLines=x", code: 400, body: `{"message": "Unable to decode query."}`},
		{path: "/containerLogs/shop/web/app?sinceTime=yesterday", code: 400, body: `{"message": "Unable to decode query."}`},
		{path: "/containerLogs/shop/web/app?tailLines=-1", code: 422, body: `{"message": "Invalid request."}`},
		{path: "/containerLogs/shop/web/app?limitBytes=0", code: 422, body: `{"message": "Invalid request."}`},
		{path: "/containerLogs/shop/web/app?sinceSeconds=5&sinceTime=2026-11-26T10:00:00Z", code: 422, body: `{"message": "Invalid request."}`},
		{path: "/containerLogs/shop/web/app?stream=Stdout", code: 400, body: `unable to return the given log stream: "Stdout". Please enable PodLogsQuerySplitStreams feature gate in kubelet`},
		{path: "/containerLogs/shop/nope/app", code: 404, body: `pod "nope" does not exist`},
		{path: "/containerLogs/shop/web/nope", code: 404, body: `container "nope" not found in pod "web"`},
		{path: "/containerLogs/shop/web/app?previous=true", code: 400, body: `previous terminated container "app" in pod "web" not found`},
		{path: "/containerLogs/shop/web/%2e%2e", code: 404, body: `container ".." not found in pod "web"`},
		{path: "/containerLogs/shop/web/app?tailLines=9223372036854775807", code: 200, body: "out line\nerr line\n", read: `"tailLines":9223372036854775807`},
	} {
		e.reads = nil
		code, body := get(t, e.s, tc.path, "")
		if code != tc.code || body != tc.body {
			t.Errorf("GET %s: %d %q, want %d %q", tc.path, code, body, tc.code, tc.body)
		}
		if tc.read != "" && (len(e.reads) != 1 || !strings.Contains(e.reads[0], tc.read)) {
			t.Errorf("GET %s: reader asked %q, want %q in it", tc.path, e.reads, tc.read)
		}
		if tc.read == "" && len(e.reads) != 0 {
			t.Errorf("GET %s: read %q, want nothing read", tc.path, e.reads)
		}
	}
}

func TestContainerLogStreams(t *testing.T) {
	e := newLogsEnv(t, true, nil)
	for stream, want := range map[string]string{"Stdout": "out line\n", "Stderr": "err line\n", "All": "out line\nerr line\n"} {
		if code, body := get(t, e.s, "/containerLogs/shop/web/app?stream="+stream, ""); code != 200 || body != want {
			t.Errorf("stream %s: %d %q, want %q", stream, code, body, want)
		}
	}
	if code, _ := get(t, e.s, "/containerLogs/shop/web/app?stream=Stdout&tailLines=1", ""); code != 422 {
		t.Errorf("stream with tailLines: %d, want 422", code)
	}
}

// A container waiting for its image answers kubelet's texts.
func TestContainerLogsWaiting(t *testing.T) {
	for reason, want := range map[string]string{
		"ErrImagePull":      `container "app" in pod "web" is waiting to start: image can't be pulled`,
		"ImagePullBackOff":  `container "app" in pod "web" is waiting to start: trying and failing to pull image`,
		"ContainerCreating": `container "app" in pod "web" is waiting to start: ContainerCreating`,
	} {
		st := &corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}}}
		if _, err := logContainerID("web", st, "app", false); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", reason, err, want)
		}
	}
	st := &corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ContainerID: "containerd://old"}}}}}
	for _, previous := range []bool{false, true} {
		if id, err := logContainerID("web", st, "app", previous); err != nil || id != "old" {
			t.Errorf("crash loop (previous %v): %q %v, want the last instance", previous, id, err)
		}
	}
}

// streamingRuntime is the fake with CRI Exec, Attach and PortForward
// answering with one URL.
type streamingRuntime struct {
	*fake.Runtime
	url  string
	reqs []any
}

func (s *streamingRuntime) Exec(_ context.Context, r *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	s.reqs = append(s.reqs, r)
	return &runtimeapi.ExecResponse{Url: s.url}, nil
}
func (s *streamingRuntime) Attach(_ context.Context, r *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	s.reqs = append(s.reqs, r)
	return &runtimeapi.AttachResponse{Url: s.url}, nil
}
func (s *streamingRuntime) PortForward(_ context.Context, r *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	s.reqs = append(s.reqs, r)
	return &runtimeapi.PortForwardResponse{Url: s.url}, nil
}

// An upgraded session reaches the runtime's streaming server through the
// node's API, byte for byte both ways.
func TestStreamsAreProxied(t *testing.T) {
	// The runtime's streaming server: upgrades and echoes.
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "SPDY/3.1" {
			http.Error(w, "upgrade required", 400)
			return
		}
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
		rw.Flush()
		line, _ := rw.ReadString('\n')
		fmt.Fprintf(rw, "echo %s %s", r.URL.Path, line)
		rw.Flush()
	}))
	defer backend.Close()
	e := newLogsEnv(t, false, nil)
	srt := &streamingRuntime{Runtime: e.s.c.Runtime.(*fake.Runtime), url: backend.URL + "/exec/token1"}
	c := e.s.c
	c.Runtime = srt
	s := newServer(t, c, nil)
	front := httptest.NewServer(s)
	defer front.Close()

	for _, path := range []string{"/exec/shop/web/app?command=ls&command=-l&output=1&input=1", "/attach/shop/web/app?output=1&tty=1&error=1", "/portForward/shop/web"} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(front.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: node\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nContent-Length: 0\r\n\r\n", path)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("%s: %v %v", path, resp, err)
		}
		fmt.Fprintf(conn, "hello\n")
		got, _ := io.ReadAll(br)
		conn.Close()
		if string(got) != "echo /exec/token1 hello\n" {
			t.Errorf("%s: through the proxy %q", path, got)
		}
	}
	exec := srt.reqs[0].(*runtimeapi.ExecRequest)
	if exec.ContainerId == "" || strings.Join(exec.Cmd, " ") != "ls -l" || !exec.Stdin || !exec.Stdout || exec.Stderr || exec.Tty {
		t.Errorf("exec request %+v", exec)
	}
	attach := srt.reqs[1].(*runtimeapi.AttachRequest)
	if !attach.Tty || attach.Stderr || !attach.Stdout {
		t.Errorf("attach request %+v (a TTY merges stderr)", attach)
	}
	if pf := srt.reqs[2].(*runtimeapi.PortForwardRequest); pf.PodSandboxId == "" {
		t.Errorf("port-forward request %+v", pf)
	}
}

func TestStreamErrors(t *testing.T) {
	e := newLogsEnv(t, false, nil)
	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/exec/shop/web/app?command=ls", 400, "you must specify at least 1 of stdin, stdout, stderr"},
		{"/exec/shop/nope/app?output=1", 404, "pod does not exist"},
		{"/exec/shop/web/app?output=1", 500, "rpc error: code = Unimplemented desc = the runtime does not stream (no CRI Exec, Attach or PortForward)"},
		{"/portForward/shop/web/other-uid", 404, "pod not found"},
	} {
		r := httptest.NewRequest(http.MethodPost, tc.path, nil)
		w := httptest.NewRecorder()
		e.s.ServeHTTP(w, r)
		if w.Code != tc.code || w.Body.String() != tc.body {
			t.Errorf("POST %s: %d %q, want %d %q", tc.path, w.Code, w.Body.String(), tc.code, tc.body)
		}
	}
	srt := &streamingRuntime{Runtime: e.s.c.Runtime.(*fake.Runtime), url: "http://127.0.0.1:1/x"}
	c := e.s.c
	c.Runtime = srt
	s := newServer(t, c, nil)
	r := httptest.NewRequest(http.MethodPost, "/exec/shop/web/gone?output=1", nil)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != 500 || w.Body.String() != `container not found ("gone")` {
		t.Errorf("exec in a missing container: %d %q", w.Code, w.Body.String())
	}
	r = httptest.NewRequest(http.MethodGet, "/portForward/shop/web?port=0", nil)
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Upgrade", "websocket")
	w = httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != 400 || w.Body.String() != `port "0" must be > 0` {
		t.Errorf("websocket port-forward to port 0: %d %q", w.Code, w.Body.String())
	}
}

// Ever new tokens do not grow the answer cache without end.
func TestTokenCacheIsBounded(t *testing.T) {
	rv := &reviewer{tokens: map[string]string{}}
	tok := NewTokens(rv, 0)
	for i := range maxCached + 500 {
		r := httptest.NewRequest(http.MethodGet, "/pods", nil)
		r.Header.Set("Authorization", fmt.Sprintf("Bearer token-%d", i))
		if _, ok, err := tok.Authenticate(r); ok || err != nil {
			t.Fatalf("unknown token %d: %v %v", i, ok, err)
		}
	}
	if n := len(tok.cache.m); n > maxCached {
		t.Errorf("%d answers cached, want at most %d", n, maxCached)
	}
	// The newest answer is still cached.
	r := httptest.NewRequest(http.MethodGet, "/pods", nil)
	r.Header.Set("Authorization", fmt.Sprintf("Bearer token-%d", maxCached+499))
	before := rv.tokenN.Load()
	tok.Authenticate(r)
	if rv.tokenN.Load() != before {
		t.Error("the newest answer was not cached")
	}
}
