package hostinfo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestHostFacts(t *testing.T) {
	if n := NumCPUs(); n <= 0 {
		t.Errorf("NumCPUs() = %d", n)
	}
	if _, err := os.Stat("/proc/meminfo"); err == nil {
		if m := Meminfo("MemTotal:"); m <= 0 || m%1024 != 0 {
			t.Errorf("MemTotal %d bytes", m)
		}
	}
	if m := Meminfo("NoSuchKey:"); m != 0 {
		t.Errorf("a missing key gave %d", m)
	}
	dir := t.TempDir()
	fs := FSCapacity(dir)
	if fs <= 0 {
		t.Fatalf("FSCapacity(%s) = %d", dir, fs)
	}
	// A directory not made yet is measured on its nearest parent.
	if got := FSCapacity(filepath.Join(dir, "not", "yet")); got != fs {
		t.Errorf("FSCapacity of a missing dir %d, want its parent's %d", got, fs)
	}
}
