package podsync

import (
	"os"
	"path/filepath"
	"testing"
)

// Only files whose names start with <digits>.log count, as kubelet's
// ^(\d+)\.log(\..*)? (rotated logs included); not directories, signs or
// other names.
func TestRestartCountFromLogs(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"0.log", "3.log", "+9.log", "-7.log", "12.log.20261124-100000", "x.log", ".log", "7log"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "20.log"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := restartCountFromLogs(dir); got != 13 {
		t.Fatalf("restart count %d, want 13 (12.log.<date> is the largest)", got)
	}
}
