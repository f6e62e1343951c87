package probes

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podstart/podstart/runtime"
)

// silentListener accepts connections and never answers on them (nor
// closes them until the test ends): a server that hangs.
func silentListener(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return int32(l.Addr().(*net.TCPAddr).Port)
}

// runUndefaulted runs one probe of spec (timeoutSeconds 0, as in a pod
// nobody defaulted) through the worker's dispatch. The probe's own ctx
// never ends, so only the probe's timeout can end it; the test's deadline
// fails the test (rather than hanging it) should that timeout not work.
func runUndefaulted(t *testing.T, m *Manager, spec *corev1.Probe) outcome {
	t.Helper()
	probeCtx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop) // ends a probe left hanging, once the test has failed
	w := &worker{m: m, spec: spec, ctx: probeCtx, containerID: "c1",
		container: corev1.Container{Name: "app"}}
	deadline, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type result struct {
		out outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := w.run1(&corev1.Pod{}, "127.0.0.1")
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.out
	case <-deadline.Done():
		t.Fatal("a probe with timeoutSeconds 0 did not return: no timeout applied")
		return outcome{}
	}
}

// timeoutSeconds 0 is the API server's default of 1s: an HTTP probe of a
// server that accepts and never answers fails on that timeout, in
// net/http's words for a client timeout, as kubelet's.
func TestHTTPProbeZeroTimeoutIsOneSecond(t *testing.T) {
	t.Parallel() // waits out real network timeouts: they overlap
	port := silentListener(t)
	m := &Manager{http: defaultHTTPClient()}
	spec := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(port)}}}
	out := runUndefaulted(t, m, spec)
	if out.result != resultFailure || !strings.Contains(out.output, "Client.Timeout exceeded while awaiting headers") {
		t.Errorf("HTTP probe of a silent server = %v %q, want a failure on the client timeout", out.result, out.output)
	}
}

// A gRPC probe with timeoutSeconds 0 waits 1s, not 0 (which failed every
// probe at once), and says so in kubelet's words.
func TestGRPCProbeZeroTimeoutIsOneSecond(t *testing.T) {
	t.Parallel() // waits out real network timeouts: they overlap
	port := silentListener(t)
	spec := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: port}}}
	out := runUndefaulted(t, &Manager{}, spec)
	if out.result != resultFailure || !strings.HasPrefix(out.output, "timeout: ") || !strings.Contains(out.output, " within 1s") {
		t.Errorf("gRPC probe of a silent server = %v %q, want a timeout failure within 1s", out.result, out.output)
	}
}

// execTimeout records the timeout an exec probe asks the runtime for.
type execTimeout struct {
	runtime.ContainerManager
	got time.Duration
}

func (e *execTimeout) ExecSync(_ context.Context, _ string, _ []string, timeout time.Duration) ([]byte, []byte, error) {
	e.got = timeout
	return nil, nil, nil
}

// An exec probe with timeoutSeconds 0 asks the runtime for 1s: to CRI, 0
// is no timeout at all.
func TestExecProbeZeroTimeoutIsOneSecond(t *testing.T) {
	rt := &execTimeout{}
	spec := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	for _, secs := range []int32{0, -3} {
		spec.TimeoutSeconds = secs
		runUndefaulted(t, &Manager{rt: rt}, spec)
		if rt.got != time.Second {
			t.Errorf("timeoutSeconds %d: ExecSync timeout %v, want 1s", secs, rt.got)
		}
	}
}

func TestProbeTimeout(t *testing.T) {
	for secs, want := range map[int32]time.Duration{-1: time.Second, 0: time.Second, 1: time.Second, 7: 7 * time.Second} {
		if got := probeTimeout(&corev1.Probe{TimeoutSeconds: secs}); got != want {
			t.Errorf("probeTimeout(%d) = %v, want %v", secs, got, want)
		}
	}
}
