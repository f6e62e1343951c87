package probes_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	goruntime "runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/probes"
	"github.com/podstart/podstart/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// execOnly answers ExecSync with the scripted exit code and reports each
// call on a channel; the rest of ContainerManager is not used by probes.
type execOnly struct {
	runtime.ContainerManager
	mu    sync.Mutex
	code  int32
	calls chan []string
}

func (e *execOnly) ExecSync(_ context.Context, id string, cmd []string, _ time.Duration) ([]byte, []byte, error) {
	e.mu.Lock()
	code := e.code
	e.mu.Unlock()
	e.calls <- cmd
	if code != 0 {
		return []byte("not ready\n"), nil, &runtime.ExitError{Cmd: cmd, ExitCode: code}
	}
	return []byte("ok\n"), nil, nil
}

func (e *execOnly) setCode(c int32) {
	e.mu.Lock()
	e.code = c
	e.mu.Unlock()
}

type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) Eventf(_ apiruntime.Object, typ, reason, format string, args ...interface{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, reason)
}

func probePod(c corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, Containers: []corev1.Container{c}}}
}

func running(name, id string, started bool, at time.Time, podIP string) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodRunning, PodIP: podIP, ContainerStatuses: []corev1.ContainerStatus{{
		Name: name, ContainerID: "containerd://" + id, Started: &started,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}}}}
}

// An exec readiness probe: ready after one success, unready only after
// failureThreshold failures in a row, each reported as Unhealthy.
func TestExecReadinessThresholds(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	rt := &execOnly{calls: make(chan []string, 100)}
	changes := make(chan types.UID, 100)
	ev := &events{}
	m := probes.New(rt, probes.WithClock(clk), probes.WithRecorder(ev), probes.WithOnChange(func(uid types.UID) { changes <- uid }))
	defer m.Close()
	c := corev1.Container{Name: "app", Env: []corev1.EnvVar{{Name: "FILE", Value: "/ready"}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "$(FILE)"}}},
			PeriodSeconds: 10, FailureThreshold: 3, SuccessThreshold: 1, TimeoutSeconds: 1}}
	pod := probePod(c)
	// Marked ready, so Update triggers no probe out of period and each
	// probe below is one period's.
	m.Update(pod, readyStatus(running("app", "c1", true, clk.Now(), "10.0.0.5")))
	step := func() {
		for !clk.HasWaiters() {
			goruntimeGosched()
		}
		clk.Step(10 * time.Second)
	}
	<-changes // the initial Failure for a new container
	if cmd := <-rt.calls; cmd[2] != "/ready" {
		t.Fatalf("command %v: $(FILE) not expanded", cmd)
	}
	<-changes
	if r, _ := m.Readiness("c1"); r != podsync.ProbeSuccess {
		t.Fatalf("after a success: %v", r)
	}
	rt.setCode(1)
	for i := 0; i < 2; i++ {
		step()
		<-rt.calls
	}
	if r, _ := m.Readiness("c1"); r != podsync.ProbeSuccess {
		t.Fatalf("changed after %d failures, threshold 3", 2)
	}
	step()
	<-rt.calls
	<-changes
	if r, _ := m.Readiness("c1"); r != podsync.ProbeFailure {
		t.Fatalf("after 3 failures: %v", r)
	}
	ev.mu.Lock()
	n := len(ev.list)
	ev.mu.Unlock()
	if n != 3 {
		t.Fatalf("%d Unhealthy events, want 3", n)
	}
}

// Liveness and readiness wait for the startup probe; before the initial
// delay nothing runs.
func TestStartupGatesAndInitialDelay(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	rt := &execOnly{calls: make(chan []string, 100)}
	changes := make(chan types.UID, 100)
	m := probes.New(rt, probes.WithClock(clk), probes.WithOnChange(func(uid types.UID) { changes <- uid }))
	defer m.Close()
	exec := func(cmd string) corev1.ProbeHandler {
		return corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{cmd}}}
	}
	c := corev1.Container{Name: "app",
		StartupProbe:  &corev1.Probe{ProbeHandler: exec("startup"), PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1, InitialDelaySeconds: 5},
		LivenessProbe: &corev1.Probe{ProbeHandler: exec("liveness"), PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1}}
	pod := probePod(c)
	m.Update(pod, running("app", "c1", false, clk.Now(), "10.0.0.5"))
	<-changes                // startup Unknown
	<-changes                // liveness Success (initial)
	for i := 0; i < 5; i++ { // within the initial delay: no startup probe; liveness waits for started
		for !clk.HasWaiters() {
			goruntimeGosched()
		}
		select {
		case cmd := <-rt.calls:
			t.Fatalf("%v ran before the initial delay or before startup", cmd)
		default:
		}
		clk.Step(time.Second)
	}
	if cmd := <-rt.calls; cmd[0] != "startup" {
		t.Fatalf("first probe %v, want startup", cmd)
	}
	<-changes
	if r, _ := m.Startup("c1"); r != podsync.ProbeSuccess {
		t.Fatalf("startup %v", r)
	}
	m.Update(pod, running("app", "c1", true, clk.Now().Add(-10*time.Second), "10.0.0.5"))
	clk.Step(time.Second)
	if cmd := <-rt.calls; cmd[0] != "liveness" {
		t.Fatalf("after startup: %v, want liveness", cmd)
	}
}

// HTTP probes against a server on loopback: headers, status classes and
// redirects as kubelet.
func TestHTTPProbe(t *testing.T) {
	var mu sync.Mutex
	code := http.StatusOK
	var gotUA, gotHeader string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		gotUA, gotHeader = r.UserAgent(), r.Header.Get("X-Probe")
		if r.URL.Path == "/elsewhere" {
			http.Redirect(w, r, "http://other.invalid/", http.StatusFound)
			return
		}
		w.WriteHeader(code)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())

	clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	changes := make(chan types.UID, 100)
	m := probes.New(nil, probes.WithClock(clk), probes.WithOnChange(func(uid types.UID) { changes <- uid }))
	defer m.Close()
	c := corev1.Container{Name: "web", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http"),
			HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "yes"}}}}, PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 1}}
	pod := probePod(c)
	m.Update(pod, running("web", "c1", true, clk.Now(), "127.0.0.1"))
	<-changes // initial Failure
	<-changes // Success
	mu.Lock()
	if gotUA != "kube-probe/1.37" || gotHeader != "yes" {
		t.Errorf("User-Agent %q, X-Probe %q", gotUA, gotHeader)
	}
	code = http.StatusInternalServerError
	mu.Unlock()
	for !clk.HasWaiters() {
		goruntimeGosched()
	}
	clk.Step(time.Second)
	<-changes
	if r, _ := m.Readiness("c1"); r != podsync.ProbeFailure {
		t.Fatalf("500: %v", r)
	}
	// A redirect to another host is a warning: success.
	pod.Spec.Containers[0].ReadinessProbe.HTTPGet.Path = "/elsewhere"
	m.RemovePod(pod.UID)
	m.Update(pod, running("web", "c2", true, clk.Now(), "127.0.0.1"))
	<-changes // initial
	<-changes
	if r, _ := m.Readiness("c2"); r != podsync.ProbeSuccess {
		t.Fatalf("redirect off host: %v", r)
	}
}

// gRPC and TCP probes against servers on loopback.
func TestGRPCAndTCPProbes(t *testing.T) {
	t.Parallel() // waits out real network timeouts: they overlap
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(lis)
	defer srv.Stop()
	port := lis.Addr().(*net.TCPAddr).Port

	clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	changes := make(chan types.UID, 100)
	m := probes.New(nil, probes.WithClock(clk), probes.WithOnChange(func(uid types.UID) { changes <- uid }))
	defer m.Close()
	svc := "shop"
	hs.SetServingStatus(svc, healthpb.HealthCheckResponse_SERVING)
	c := corev1.Container{Name: "api",
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: int32(port), Service: &svc}},
			PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 2},
		LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}},
			PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 2}}
	pod := probePod(c)
	m.Update(pod, running("api", "c1", true, clk.Now(), "127.0.0.1"))
	deadline := time.After(10 * time.Second)
	for {
		r, _ := m.Readiness("c1")
		l, _ := m.Liveness("c1")
		if r == podsync.ProbeSuccess && l == podsync.ProbeSuccess {
			break
		}
		select {
		case <-changes:
		case <-deadline:
			t.Fatalf("readiness %v, liveness %v", r, l)
		}
	}
	hs.SetServingStatus(svc, healthpb.HealthCheckResponse_NOT_SERVING)
	srv.Stop() // the port closes too: TCP fails
	for !clk.HasWaiters() {
		goruntimeGosched()
	}
	clk.Step(time.Second)
	for {
		r, _ := m.Readiness("c1")
		l, _ := m.Liveness("c1")
		if r == podsync.ProbeFailure && l == podsync.ProbeFailure {
			break
		}
		select {
		case <-changes:
		case <-deadline:
			t.Fatalf("after stop: readiness %v, liveness %v", r, l)
		}
	}
}

func goruntimeGosched() { goruntime.Gosched() }

func readyStatus(s corev1.PodStatus) corev1.PodStatus {
	s.ContainerStatuses[0].Ready = true
	return s
}
