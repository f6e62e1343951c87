package podsync_test

import (
	"fmt"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/podsync"
)

// TestRestartBackOffCollected: restart back-off entries of containers that
// are gone are dropped once stale (kubelet's back-off GC).
func TestRestartBackOffCollected(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	b := podsync.NewBackOff(clk, podsync.DefaultBackOffInitial, podsync.DefaultBackOffMax)
	for i := 0; i < 10_001; i++ {
		b.Check(fmt.Sprint(i), clk.Now())
	}
	clk.Step(2*podsync.DefaultBackOffMax + time.Second)
	b.Check("fresh", clk.Now())
	if n := len(b.Entries()); n != 1 {
		t.Fatalf("%d entries, want 1", n)
	}
}
