package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestSmoke runs the tier for a few pods with a short window: podstart's
// side always, kubelet's when its binary is there. It needs root and
// PODSTART_BENCH=1 (it builds and runs processes, makes cgroups); without
// them it skips at once.
func TestSmoke(t *testing.T) {
	if os.Getenv("PODSTART_BENCH") != "1" {
		t.Skip("PODSTART_BENCH=1 runs the bench tier's smoke test (root; see README.md)")
	}
	if os.Getuid() != 0 {
		t.Skip("the bench tier needs root")
	}
	c := config{dir: t.TempDir(), kubelet: "/tmp/podstart-e2e/bin/kubelet", image: "docker.io/library/busybox:1.35",
		window: 5 * time.Second, settle: time.Second, timeout: 2 * time.Minute, podCgroups: true, cgroupPrefix: "/podstart-bench-smoke", nodeIP: hostIP()}
	c.bin = filepath.Join(c.dir, "bin")
	for _, cmd := range []string{"fakecri", "podagent"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(c.bin, cmd), "github.com/podstart/podstart/bench/cmd/"+cmd).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", cmd, err, out)
		}
	}
	sides := []string{"podstart"}
	if _, err := os.Stat(c.kubelet); err == nil {
		sides = append(sides, "kubelet")
	}
	for _, side := range sides {
		r, err := run(context.Background(), c, side, 3)
		if err != nil {
			t.Fatalf("%s: %v", side, err)
		}
		t.Logf("%s: %+v", side, r)
		if r.rssMiB <= 0 || r.callsMin <= 0 || r.byMethod["ListPodSandbox"] <= 0 {
			t.Errorf("%s: %+v: no RSS or no relist measured", side, r)
		}
	}
}
