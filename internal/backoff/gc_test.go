package backoff

import (
	"fmt"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// TestNextCollectsStaleEntries: entries not updated for twice the maximum
// are dropped as later events arrive, without anyone calling GC.
func TestNextCollectsStaleEntries(t *testing.T) {
	t.Parallel()
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	b := New(clk, 10*time.Second, 300*time.Second, nil)
	for i := 0; i < 10_001; i++ {
		b.Next(fmt.Sprint(i), clk.Now())
	}
	clk.Step(600*time.Second + time.Second)
	b.Next("fresh", clk.Now())
	if n := len(b.Snapshot()); n != 1 {
		t.Fatalf("%d entries after 2×max, want 1", n)
	}
}
