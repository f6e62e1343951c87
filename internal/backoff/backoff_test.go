package backoff

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func TestBackoffDoublesAndCaps(t *testing.T) {
	t.Parallel()
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	b := New(clk, 10*time.Second, 300*time.Second, nil)
	var got []time.Duration
	for i := 0; i < 7; i++ {
		b.Next("k", clk.Now())
		got = append(got, b.Get("k"))
		clk.Step(time.Second)
	}
	want := []time.Duration{10, 20, 40, 80, 160, 300, 300}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("delays %v", got)
		}
	}
}

func TestInBackOffSinceAndExpiry(t *testing.T) {
	t.Parallel()
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	b := New(clk, 10*time.Second, 300*time.Second, nil)
	event := clk.Now()
	if b.IsInBackOffSince("k", event) {
		t.Fatal("unknown key in back-off")
	}
	b.Next("k", event)
	clk.Step(9 * time.Second)
	if !b.IsInBackOffSince("k", event) {
		t.Fatal("not in back-off after 9s of 10s")
	}
	clk.Step(time.Second)
	if b.IsInBackOffSince("k", event) {
		t.Fatal("still in back-off after 10s")
	}
	// Stale after 2×max: the next delay restarts from the initial one.
	b.Next("k", clk.Now())
	clk.Step(601 * time.Second)
	b.Next("k", clk.Now())
	if d := b.Get("k"); d != 10*time.Second {
		t.Fatalf("after expiry delay %v", d)
	}
	clk.Step(601 * time.Second)
	b.GC()
	if len(b.Snapshot()) != 0 {
		t.Fatal("GC kept a stale entry")
	}
	b.Next("x", clk.Now())
	b.Reset("x")
	if b.Get("x") != 0 {
		t.Fatal("Reset kept the entry")
	}
}
