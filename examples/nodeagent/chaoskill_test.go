package main

import (
	"io"
	"net"
	"net/http"
	"testing"
)

func TestParseKillPoint(t *testing.T) {
	for _, c := range []struct {
		in    string
		stage string
		n     int64
	}{
		{"step:sandbox:3", "step:sandbox", 3},
		{"pull:1", "pull", 1},
		{"tmpfs:12", "tmpfs", 12},
	} {
		k, err := parseKillPoint(c.in)
		if err != nil || k.stage != c.stage || k.n != c.n {
			t.Errorf("parseKillPoint(%q) = %+v, %v; want stage %q, n %d", c.in, k, err, c.stage, c.n)
		}
	}
	for _, bad := range []string{"", "pull", ":3", "pull:0", "pull:-1", "pull:x", "step:sandbox"} {
		if k, err := parseKillPoint(bad); err == nil {
			t.Errorf("parseKillPoint(%q) = %+v, want an error", bad, k)
		}
	}
}

// Moments of other stages, and of the stage before its N-th, do not kill:
// the test process is still here to check the count.
func TestKillPointCounts(t *testing.T) {
	k := &killPoint{stage: "step:create", n: 3}
	k.trace(TraceEvent{Stage: "step:sandbox"})
	k.trace(TraceEvent{Stage: "step:create"})
	k.trace(TraceEvent{Stage: "step:create"})
	k.trace(TraceEvent{Stage: "volumes"})
	if got := k.seen.Load(); got != 2 {
		t.Fatalf("counted %d moments of step:create, want 2", got)
	}
	var none *killPoint
	none.hit("pull") // no hook: nothing happens
}

func TestServePprofRefusesNonLoopback(t *testing.T) {
	t.Setenv(pprofEnv, "0.0.0.0:0")
	if err := servePprof(t.Context()); err == nil {
		t.Fatal("served pprof on 0.0.0.0")
	}
	t.Setenv(pprofEnv, "")
	if err := servePprof(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// The CPU profile is served beside the named profiles (the bench tier
// reads it): Index alone answers "Unknown profile" for it.
func TestServePprofCPUProfile(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv(pprofEnv, addr)
	if err := servePprof(t.Context()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/profile?seconds=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	// A CPU profile is gzipped protobuf.
	if resp.StatusCode != http.StatusOK || len(body) < 2 || body[0] != 0x1f || body[1] != 0x8b {
		t.Fatalf("GET /debug/pprof/profile: %s, %q", resp.Status, body[:min(len(body), 80)])
	}
}
