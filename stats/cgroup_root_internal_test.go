package stats

import (
	"os"
	"path/filepath"
	"testing"
)

// A pod's cgroup is found under kubelet's --cgroup-root too.
func TestPodCgroupUnderRoot(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"memory/memory.limit_in_bytes"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte("max"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "memory/agent/kubepods/burstable/pod1234"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := &Provider{cgroupDir: dir}
	l := p.cgroupLayout()
	if got := l.podCgroupUnder("/agent", "1234"); got != "agent/kubepods/burstable/pod1234" {
		t.Errorf("under /agent: %q", got)
	}
	if got := l.podCgroup("1234"); got != "" {
		t.Errorf("at the top: %q, want none", got)
	}
}
