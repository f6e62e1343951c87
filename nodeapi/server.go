package nodeapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/proxy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime"
)

// Pods are the pods bound to the node, each with the status the node last
// computed for it (podworker's APIStatus), as kubelet's pod manager and
// status manager hold them.
type Pods interface {
	// Pods lists them (GET /pods).
	Pods() []*corev1.Pod
	// Pod finds one by namespace and name.
	Pod(namespace, name string) (*corev1.Pod, bool)
}

// LogReader writes a container's log file, as kubelet's ReadLogs: path is
// the file the runtime reports (ContainerStatus' LogPath), containerID
// the instance, opts as decoded and checked; stdout or stderr may be nil
// (that stream is not wanted). A follow ends when ctx ends or the
// container stops.
type LogReader func(ctx context.Context, path, containerID string, opts *corev1.PodLogOptions, stdout, stderr io.Writer) error

// SummaryProvider gives the node's stats summary (GET /stats/summary;
// onlyCPUAndMemory for ?only_cpu_and_memory=true).
type SummaryProvider interface {
	Summary(ctx context.Context, onlyCPUAndMemory bool) (*statsapi.Summary, error)
}

// ResourceMetrics writes kubelet's /metrics/resource exposition.
type ResourceMetrics func(ctx context.Context, w io.Writer) error

// Config is what the node's API serves and how it checks who asks.
type Config struct {
	// NodeName is the node's name, the object authorization is asked
	// about.
	NodeName string
	// Authenticator and Authorizer check every request (kubelet's
	// defaults: x509 client certificates and webhook tokens, webhook
	// authorization). Both are required: an unauthenticated node API is
	// not served (see Insecure).
	Authenticator Authenticator
	Authorizer    Authorizer
	// Insecure serves every request without authentication or
	// authorization: for tests on loopback only.
	Insecure bool

	Pods    Pods
	Runtime runtime.RuntimeService
	// Logs reads container logs (nil: /containerLogs answers 501).
	Logs LogReader
	// Summary and Metrics serve /stats/summary and /metrics/resource
	// (nil: 501).
	Summary SummaryProvider
	Metrics ResourceMetrics
	// NodeMetrics, ProbeMetrics and CadvisorMetrics serve kubelet's
	// /metrics, /metrics/probes and /metrics/cadvisor (package
	// nodemetrics' handlers), authorized as nodes/metrics; nil: 404, as
	// an unknown path.
	NodeMetrics, ProbeMetrics, CadvisorMetrics http.Handler
	// SplitLogStreams honours stream=Stdout and stream=Stderr in log
	// queries, as kubelet with its PodLogsQuerySplitStreams gate (alpha,
	// off by default: then a stream other than All is refused, as
	// kubelet's).
	SplitLogStreams bool
	// Healthy answers /healthz (nil: always "ok").
	Healthy func() error
}

// ErrConfig: a Config the server cannot serve safely.
var ErrConfig = errors.New("nodeapi: bad config")

// Server is kubelet's node API (port 10250) as an http.Handler.
type Server struct {
	c   Config
	mux *http.ServeMux
}

// New checks c and returns its Server.
func New(c Config) (*Server, error) {
	if c.NodeName == "" {
		return nil, fmt.Errorf("%w: no NodeName", ErrConfig)
	}
	if !c.Insecure && (c.Authenticator == nil || c.Authorizer == nil) {
		return nil, fmt.Errorf("%w: an Authenticator and an Authorizer are required (or Insecure)", ErrConfig)
	}
	if c.Pods == nil || c.Runtime == nil {
		return nil, fmt.Errorf("%w: Pods and Runtime are required", ErrConfig)
	}
	s := &Server{c: c, mux: http.NewServeMux()}
	// The methods of kubelet's routes: its go-restful routes answer any
	// other method (HEAD included) 405; healthz and the metrics are plain
	// handlers that serve every method.
	s.route("/healthz", s.healthz)
	s.route("/healthz/{rest...}", s.healthz)
	s.route("/pods", s.pods, http.MethodGet)
	s.route("/pods/", s.pods, http.MethodGet)
	s.route("/runningpods/", s.runningPods, http.MethodGet)
	s.route("/stats/summary", s.summary, http.MethodGet, http.MethodPost)
	s.route("/metrics/resource", s.metrics)
	for path, h := range map[string]http.Handler{"/metrics": c.NodeMetrics, "/metrics/probes": c.ProbeMetrics, "/metrics/cadvisor": c.CadvisorMetrics} {
		if h != nil {
			s.mux.Handle(path, h)
		}
	}
	s.route("/containerLogs/{ns}/{pod}/{container}", s.containerLogs, http.MethodGet)
	getPost := []string{http.MethodGet, http.MethodPost}
	s.route("/exec/{ns}/{pod}/{container}", s.exec, getPost...)
	s.route("/exec/{ns}/{pod}/{uid}/{container}", s.exec, getPost...)
	s.route("/attach/{ns}/{pod}/{container}", s.attach, getPost...)
	s.route("/attach/{ns}/{pod}/{uid}/{container}", s.attach, getPost...)
	s.route("/portForward/{ns}/{pod}", s.portForward, getPost...)
	s.route("/portForward/{ns}/{pod}/{uid}", s.portForward, getPost...)
	s.route("/run/{ns}/{pod}/{container}", s.run, http.MethodPost)
	s.route("/run/{ns}/{pod}/{uid}/{container}", s.run, http.MethodPost)
	return s, nil
}

// route serves pattern with h for the methods given, or every method
// if none. Another method is answered as kubelet's go-restful router
// answers it: 405, the route's methods in Allow, and "405: Method Not
// Allowed" (a HEAD is no GET: h does not run).
func (s *Server) route(pattern string, h http.HandlerFunc, methods ...string) {
	if len(methods) == 0 {
		s.mux.HandleFunc(pattern, h)
		return
	}
	allow := strings.Join(methods, ", ")
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if !slices.Contains(methods, r.Method) {
			w.Header().Set("Allow", allow)
			w.WriteHeader(http.StatusMethodNotAllowed)
			_, _ = w.Write([]byte("405: Method Not Allowed"))
			return
		}
		h(w, r)
	})
}

// ServeHTTP authenticates and authorizes the request as kubelet's filter
// does, then serves it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.c.Insecure && !s.allowed(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// allowed is kubelet's InstallAuthFilter: 401 "Unauthorized" without a
// user, 500 when authorization fails, 403 naming the user, verb,
// resource and subresources when no subresource is allowed.
func (s *Server) allowed(w http.ResponseWriter, r *http.Request) bool {
	u, ok, err := s.c.Authenticator.Authenticate(r)
	if err != nil || !ok {
		writeString(w, http.StatusUnauthorized, "Unauthorized")
		return false
	}
	attrs := RequestAttributes(s.c.NodeName, u, r)
	var subs []string
	for _, a := range attrs {
		subs = append(subs, a.Subresource)
		ok, _, err := s.c.Authorizer.Authorize(r.Context(), a)
		if err != nil {
			writeString(w, http.StatusInternalServerError, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)", u.Name, a.Verb, "nodes", a.Subresource))
			return false
		}
		if ok {
			return true
		}
	}
	writeString(w, http.StatusForbidden, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=%v)\n", u.Name, attrs[0].Verb, "nodes", subs))
	return false
}

func writeString(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg)
}

// writeError is go-restful's WriteError, which kubelet uses: the status
// and the error's text.
func writeError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, err.Error())
}

func writeJSON(w http.ResponseWriter, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if s.c.Healthy != nil {
		if err := s.c.Healthy(); err != nil {
			writeString(w, http.StatusInternalServerError, fmt.Sprintf("[-]%v\nhealthz check failed\n", err))
			return
		}
	}
	writeString(w, http.StatusOK, "ok")
}

// pods answers GET /pods: a v1 PodList of the node's pods.
func (s *Server) pods(w http.ResponseWriter, r *http.Request) {
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	for _, p := range s.c.Pods.Pods() {
		list.Items = append(list.Items, *p)
	}
	if list.Items == nil {
		list.Items = []corev1.Pod{}
	}
	writeJSON(w, list)
}

// runningPods answers GET /runningpods/: the pods the runtime runs, as
// kubelet builds them from its runtime cache (name, namespace, UID and
// the running containers' names and images).
func (s *Server) runningPods(w http.ResponseWriter, r *http.Request) {
	rps, err := podsync.ListPods(r.Context(), s.c.Runtime)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []corev1.Pod{}}
	for _, rp := range rps {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: rp.Name, Namespace: rp.Namespace, UID: rp.UID}}
		for _, c := range rp.Containers {
			if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
				continue
			}
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c.GetMetadata().GetName(), Image: c.GetImage().GetImage()})
		}
		if len(p.Spec.Containers) > 0 {
			list.Items = append(list.Items, p)
		}
	}
	writeJSON(w, list)
}

func (s *Server) summary(w http.ResponseWriter, r *http.Request) {
	if s.c.Summary == nil {
		writeError(w, http.StatusNotImplemented, errors.New("stats are not served by this node"))
		return
	}
	only := false
	if v := r.URL.Query().Get("only_cpu_and_memory"); v != "" {
		only = v == "true"
	}
	sum, err := s.c.Summary.Summary(r.Context(), only)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Errorf("internal Error: %v", err))
		return
	}
	writeJSON(w, sum)
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.c.Metrics == nil {
		writeError(w, http.StatusNotImplemented, errors.New("metrics are not served by this node"))
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	if err := s.c.Metrics(r.Context(), w); err != nil {
		writeError(w, http.StatusInternalServerError, err)
	}
}

// containerLogs is kubelet's getContainerLogs and GetKubeletContainerLogs.
func (s *Server) containerLogs(w http.ResponseWriter, r *http.Request) {
	ns, podName, cname := r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container")
	opts, err := LogOptions(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if err := ValidateLogOptions(opts); err != nil {
		writeError(w, http.StatusUnprocessableEntity, errors.New(`{"message": "Invalid request."}`))
		return
	}
	pod, ok := s.c.Pods.Pod(ns, podName)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Errorf("pod %q does not exist", podName))
		return
	}
	if !hasContainer(pod, cname) {
		writeError(w, http.StatusNotFound, fmt.Errorf("container %q not found in pod %q", cname, podName))
		return
	}
	if s.c.Logs == nil {
		writeError(w, http.StatusNotImplemented, errors.New("container logs are not served by this node"))
		return
	}
	fw := &flushWriter{w: w}
	fw.f, _ = w.(http.Flusher)
	var stdout, stderr io.Writer = fw, fw
	if opts.Stream != nil && *opts.Stream != corev1.LogStreamAll {
		if !s.c.SplitLogStreams {
			writeError(w, http.StatusBadRequest, fmt.Errorf("unable to return the given log stream: %q. Please enable PodLogsQuerySplitStreams feature gate in kubelet", *opts.Stream))
			return
		}
		if *opts.Stream == corev1.LogStreamStdout {
			stderr = nil
		} else {
			stdout = nil
		}
	}
	id, err := logContainerID(pod.Name, &pod.Status, cname, opts.Previous)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	st, err := s.c.Runtime.ContainerStatus(r.Context(), id, false)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("failed to get container status %q: %v", id, err))
		return
	}
	w.Header().Set("Transfer-Encoding", "chunked")
	if stdout != nil {
		// As kubelet: one write before the reader may block.
		if _, err := stdout.Write([]byte{}); err != nil {
			return
		}
	}
	if err := s.c.Logs(r.Context(), st.GetStatus().GetLogPath(), id, opts, stdout, stderr); err != nil && !fw.wrote() {
		writeError(w, http.StatusBadRequest, err)
	}
}

func hasContainer(pod *corev1.Pod, name string) bool {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.Name == name {
				return true
			}
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// logContainerID is kubelet's validateContainerLogStatus: which instance's
// log a request reads, from the pod's status, and kubelet's texts when
// there is none.
func logContainerID(podName string, st *corev1.PodStatus, name string, previous bool) (string, error) {
	var cs *corev1.ContainerStatus
	for _, list := range [][]corev1.ContainerStatus{st.ContainerStatuses, st.InitContainerStatuses, st.EphemeralContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				cs = &list[i]
				break
			}
		}
		if cs != nil {
			break
		}
	}
	if cs == nil {
		return "", fmt.Errorf("container %q in pod %q is not available", name, podName)
	}
	last := cs.LastTerminationState
	var id string
	switch {
	case previous:
		if last.Terminated == nil || last.Terminated.ContainerID == "" {
			return "", fmt.Errorf("previous terminated container %q in pod %q not found", name, podName)
		}
		id = last.Terminated.ContainerID
	case cs.State.Running != nil:
		id = cs.ContainerID
	case cs.State.Terminated != nil:
		id = cs.State.Terminated.ContainerID
		if id == "" {
			if last.Terminated == nil || last.Terminated.ContainerID == "" {
				return "", fmt.Errorf("container %q in pod %q is terminated", name, podName)
			}
			id = last.Terminated.ContainerID
		}
	case last.Terminated != nil:
		if last.Terminated.ContainerID == "" {
			return "", fmt.Errorf("container %q in pod %q is terminated", name, podName)
		}
		id = last.Terminated.ContainerID
	case cs.State.Waiting != nil:
		switch reason := cs.State.Waiting.Reason; reason {
		case "ErrImagePull":
			return "", fmt.Errorf("container %q in pod %q is waiting to start: image can't be pulled", name, podName)
		case "ImagePullBackOff":
			return "", fmt.Errorf("container %q in pod %q is waiting to start: trying and failing to pull image", name, podName)
		default:
			return "", fmt.Errorf("container %q in pod %q is waiting to start: %v", name, podName, reason)
		}
	default:
		return "", fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", name, podName)
	}
	// "containerd://<id>": the runtime's own ID after the scheme.
	if _, after, ok := strings.Cut(id, "://"); ok {
		id = after
	}
	return id, nil
}

// flushWriter flushes after every write, as kubelet's flushwriter, so a
// follow reaches the client as it is read.
type flushWriter struct {
	mu sync.Mutex
	w  io.Writer
	f  http.Flusher
	n  int64
}

func (fw *flushWriter) Write(p []byte) (int, error) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	n, err := fw.w.Write(p)
	fw.n += int64(n)
	if fw.f != nil {
		fw.f.Flush()
	}
	return n, err
}

func (fw *flushWriter) wrote() bool {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return fw.n > 0
}

// streamer is the runtime's streaming ability, or an error naming its
// absence.
func (s *Server) streamer() (runtime.Streamer, error) {
	st, ok := s.c.Runtime.(runtime.Streamer)
	if !ok {
		return nil, grpcstatus.Error(codes.Unimplemented, "the runtime does not stream (no CRI Exec, Attach or PortForward)")
	}
	return st, nil
}

// runningContainer is kubelet's findContainer: the running container of
// that name in the pod of that namespace and name (and UID, if given), as
// the runtime lists them.
func (s *Server) runningContainer(ctx context.Context, ns, podName string, uid types.UID, name string) (string, error) {
	rps, err := podsync.ListPods(ctx, s.c.Runtime)
	if err != nil {
		return "", err
	}
	for _, rp := range rps {
		if rp.Namespace != ns || rp.Name != podName || uid != "" && rp.UID != uid {
			continue
		}
		for _, c := range rp.Containers {
			if c.GetMetadata().GetName() == name && c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				return c.Id, nil
			}
		}
	}
	return "", fmt.Errorf("container not found (%q)", name)
}

// proxyTo serves the request by proxying its upgraded connection to the
// runtime's streaming URL, as kubelet does by default.
func proxyTo(w http.ResponseWriter, r *http.Request, raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		writeStreamError(w, err)
		return
	}
	proxy.NewUpgradeAwareHandler(u, nil, false, true, responder{}).ServeHTTP(w, r)
}

// responder answers a failed proxying as kubelet's: 500 and the error.
type responder struct{}

func (responder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

// writeStreamError is the streaming server's WriteError, which kubelet
// answers a failed exec, attach or port-forward with: 404 for NotFound,
// 429 for ResourceExhausted, else 500, and the error's text.
func writeStreamError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch grpcstatus.Code(err) {
	case codes.NotFound:
		code = http.StatusNotFound
	case codes.ResourceExhausted:
		w.Header().Set("Retry-After", "60")
		code = http.StatusTooManyRequests
	}
	w.WriteHeader(code)
	_, _ = io.WriteString(w, err.Error())
}

func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	s.session(w, r, func(st runtime.Streamer, id string, o StreamOptions) (string, error) {
		resp, err := st.Exec(r.Context(), &runtimeapi.ExecRequest{ContainerId: id, Cmd: r.URL.Query()["command"],
			Tty: o.TTY, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr})
		return resp.GetUrl(), err
	})
}

func (s *Server) attach(w http.ResponseWriter, r *http.Request) {
	s.session(w, r, func(st runtime.Streamer, id string, o StreamOptions) (string, error) {
		resp, err := st.Attach(r.Context(), &runtimeapi.AttachRequest{ContainerId: id,
			Tty: o.TTY, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr})
		return resp.GetUrl(), err
	})
}

// session is kubelet's getExec and getAttach around prepare, which asks
// the runtime for the session's URL: the stream options, the pod, the
// running container, then the client's connection proxied to the URL.
func (s *Server) session(w http.ResponseWriter, r *http.Request, prepare func(runtime.Streamer, string, StreamOptions) (string, error)) {
	opts, err := streamOptions(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	ns, podName := r.PathValue("ns"), r.PathValue("pod")
	if _, ok := s.c.Pods.Pod(ns, podName); !ok {
		writeError(w, http.StatusNotFound, errors.New("pod does not exist"))
		return
	}
	st, err := s.streamer()
	if err != nil {
		writeStreamError(w, err)
		return
	}
	id, err := s.runningContainer(r.Context(), ns, podName, types.UID(r.PathValue("uid")), r.PathValue("container"))
	if err != nil {
		writeStreamError(w, err)
		return
	}
	url, err := prepare(st, id, opts)
	if err != nil {
		writeStreamError(w, err)
		return
	}
	proxyTo(w, r, url)
}

func (s *Server) portForward(w http.ResponseWriter, r *http.Request) {
	ports, err := forwardPorts(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	ns, podName, uid := r.PathValue("ns"), r.PathValue("pod"), types.UID(r.PathValue("uid"))
	pod, ok := s.c.Pods.Pod(ns, podName)
	if !ok {
		writeError(w, http.StatusNotFound, errors.New("pod does not exist"))
		return
	}
	if uid != "" && pod.UID != uid {
		writeError(w, http.StatusNotFound, errors.New("pod not found"))
		return
	}
	st, err := s.streamer()
	if err != nil {
		writeStreamError(w, err)
		return
	}
	sandbox, err := s.sandboxOf(r.Context(), pod.UID)
	if err != nil {
		writeStreamError(w, err)
		return
	}
	resp, err := st.PortForward(r.Context(), &runtimeapi.PortForwardRequest{PodSandboxId: sandbox, Port: ports})
	if err != nil {
		writeStreamError(w, err)
		return
	}
	proxyTo(w, r, resp.Url)
}

// sandboxOf is the pod's newest sandbox, as kubelet's
// getSandboxIDByPodUID picks it.
func (s *Server) sandboxOf(ctx context.Context, uid types.UID) (string, error) {
	rps, err := podsync.ListPods(ctx, s.c.Runtime)
	if err != nil {
		return "", err
	}
	for _, rp := range rps {
		if rp.UID == uid && len(rp.Sandboxes) > 0 {
			return rp.Sandboxes[0].Id, nil
		}
	}
	return "", fmt.Errorf("pod not found (%q)", uid)
}

// run is kubelet's /run: ExecSync of the space-separated cmd, answered
// with its combined output.
func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	ns, podName := r.PathValue("ns"), r.PathValue("pod")
	if _, ok := s.c.Pods.Pod(ns, podName); !ok {
		writeError(w, http.StatusNotFound, errors.New("pod does not exist"))
		return
	}
	id, err := s.runningContainer(r.Context(), ns, podName, types.UID(r.PathValue("uid")), r.PathValue("container"))
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	cmd := strings.Split(r.URL.Query().Get("cmd"), " ")
	stdout, stderr, err := s.c.Runtime.ExecSync(r.Context(), id, cmd, 0)
	if err != nil {
		// As kubelet: a command that exits non-zero is an error too.
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(stdout, stderr...))
}

// forwardPorts is kubelet's portforward.NewV4Options: a WebSocket request
// names its ports in the query ("port", repeated or comma-separated, each
// 1-65535); over SPDY each stream carries its port, so none are needed.
func forwardPorts(r *http.Request) ([]int32, error) {
	if !isWebSocket(r) {
		return nil, nil
	}
	values := r.URL.Query()["port"]
	if len(values) == 0 {
		return nil, fmt.Errorf("query parameter %q is required", "port")
	}
	var ports []int32
	for _, v := range values {
		if v == "" {
			return nil, fmt.Errorf("query parameter %q cannot be empty", "port")
		}
		for _, p := range strings.Split(v, ",") {
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("unable to parse %q as a port: %v", v, err)
			}
			if n < 1 {
				return nil, fmt.Errorf("port %q must be > 0", v)
			}
			ports = append(ports, int32(n))
		}
	}
	return ports, nil
}

// isWebSocket: the request asks to upgrade to a WebSocket.
func isWebSocket(r *http.Request) bool {
	for _, c := range strings.Split(r.Header.Get("Connection"), ",") {
		if strings.EqualFold(strings.TrimSpace(c), "upgrade") {
			return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
		}
	}
	return false
}
