package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/runtime"
)

// chaosKillEnv names the chaos tier's kill hook (test/chaos), a test-only
// environment variable: "STAGE:N" makes the agent SIGKILL itself at the
// N-th (from 1) moment of STAGE after its start, so that a crash lands at
// a point a random kill reaches only by chance. STAGE is one of
// TraceEvent's stages ("step:sandbox": a sandbox made, its containers not
// yet; "step:kill": a container killed, the rest of its pod not yet;
// "step:create", "volumes", ...) or one of:
//
//   - "pull": a CRI PullImage call in flight (the kill comes when it
//     returns or 50 ms after it was sent, whichever is first);
//   - "tmpfs": a volume's tmpfs just mounted (a Secret, ConfigMap,
//     downward API or projected volume's, before its payload is written;
//     or a Memory emptyDir's).
//
// Unset, nothing changes. It is read once, at the start; a malformed value
// stops the agent with an error.
const chaosKillEnv = "PODSTART_CHAOS_KILL_AT"

// killPoint is a parsed chaosKillEnv.
type killPoint struct {
	stage string
	n     int64
	seen  atomic.Int64
}

func parseKillPoint(s string) (*killPoint, error) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return nil, fmt.Errorf("%s=%q: want STAGE:N", chaosKillEnv, s)
	}
	n, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil || n < 1 {
		return nil, fmt.Errorf("%s=%q: N must be a positive integer", chaosKillEnv, s)
	}
	return &killPoint{stage: s[:i], n: n}, nil
}

// hit counts one moment of stage and kills the process at the N-th.
func (k *killPoint) hit(stage string) {
	if k == nil || stage != k.stage || k.seen.Add(1) != k.n {
		return
	}
	fmt.Fprintf(os.Stderr, "nodeagent: %s=%s:%d reached: SIGKILL\n", chaosKillEnv, k.stage, k.n)
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way; nothing more happens here
}

// trace is a Config.Trace that counts stages.
func (k *killPoint) trace(ev TraceEvent) { k.hit(ev.Stage) }

// chaosRuntime is the CRI client with PullImage counted for the "pull"
// stage; every other method is the client's.
type chaosRuntime struct {
	*runtime.Client
	k *killPoint
}

func (r chaosRuntime) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	if r.k.stage != "pull" {
		return r.Client.PullImage(ctx, image, auth, sandbox)
	}
	type result struct {
		ref string
		err error
	}
	done := make(chan result, 1)
	go func() {
		ref, err := r.Client.PullImage(ctx, image, auth, sandbox)
		done <- result{ref, err}
	}()
	t := time.NewTimer(50 * time.Millisecond)
	defer t.Stop()
	select {
	case res := <-done:
		r.k.hit("pull")
		return res.ref, res.err
	case <-t.C:
	}
	r.k.hit("pull")
	res := <-done
	return res.ref, res.err
}

// chaosMounter is the host's mounter with MountTmpfs counted for the
// "tmpfs" stage.
type chaosMounter struct {
	*mounts.HostMounter
	k *killPoint
}

func (m chaosMounter) MountTmpfs(dir string, size int64) error {
	err := m.HostMounter.MountTmpfs(dir, size)
	if err == nil {
		m.k.hit("tmpfs")
	}
	return err
}

// chaosKill reads chaosKillEnv: nil when unset.
func chaosKill() (*killPoint, error) {
	v, ok := os.LookupEnv(chaosKillEnv)
	if !ok || v == "" {
		return nil, nil
	}
	return parseKillPoint(v)
}

// pprofEnv names a test-only environment variable of the chaos tier's
// soak (test/chaos): a loopback address ("127.0.0.1:PORT") where the agent
// serves net/http/pprof's /debug/pprof/ (its goroutines, heap), without
// authentication; /debug/pprof/profile is the CPU profile (the bench
// tier's breakdown by component). Unset, nothing is served; an address that is not
// loopback stops the agent with an error.
const pprofEnv = "PODSTART_PPROF_ADDR"

// servePprof serves /debug/pprof/ on the address pprofEnv names, if any,
// until ctx ends.
func servePprof(ctx context.Context) error {
	addr := os.Getenv(pprofEnv)
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s=%q: want a loopback address, 127.0.0.1:PORT", pprofEnv, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	// The CPU profile is not one of runtime/pprof's named profiles that
	// Index serves: the bench tier reads the agent's CPU profile here.
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	return nil
}
