package cluster

import (
	"context"
	"os"
	"testing"
	"time"
)

// StartT starts a cluster for a test in a directory of its own
// (t.TempDir()) and stops it when the test ends. Without the binaries it
// skips the test, or fails it when PODSTART_E2E_REQUIRED=1, as the e2e tier
// does with its environment. Start gets two minutes.
func StartT(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if _, _, err := Binaries(opts.BinDir); err != nil {
		if os.Getenv("PODSTART_E2E_REQUIRED") == "1" {
			t.Fatalf("PODSTART_E2E_REQUIRED=1 but %v", err)
		}
		t.Skipf("the cluster tier needs its binaries: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	// Registered after t.TempDir's removal, so it runs before it.
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}
