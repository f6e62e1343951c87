package podsync_test

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// WithBackOff takes delays, as images.WithBackOff does; WithSharedBackOff
// shares an instance and overrides the delays.
func TestBackOffOptions(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	f := fake.New()
	ims := images.NewManager(f)
	defer ims.Close()
	delays := func(b *podsync.BackOff) []time.Duration {
		var got []time.Duration
		for range 3 {
			b.Check("k", clk.Now().Add(-time.Hour))
			got = append(got, b.Delay("k"))
		}
		return got
	}
	for _, tt := range []struct {
		name string
		opts []podsync.Option
		want []time.Duration
	}{
		{"default", nil, []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second}},
		{"WithBackOff", []podsync.Option{podsync.WithBackOff(time.Second, 3*time.Second)}, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}},
	} {
		s := podsync.NewSyncer(f, ims, append([]podsync.Option{podsync.WithClock(clk)}, tt.opts...)...)
		if got := delays(s.BackOff()); len(got) != 3 || got[0] != tt.want[0] || got[1] != tt.want[1] || got[2] != tt.want[2] {
			t.Errorf("%s: delays %v, want %v", tt.name, got, tt.want)
		}
	}
	shared := podsync.NewBackOff(clk, time.Second, time.Minute)
	a := podsync.NewSyncer(f, ims, podsync.WithSharedBackOff(shared))
	b := podsync.NewSyncer(f, ims, podsync.WithBackOff(time.Hour, time.Hour), podsync.WithSharedBackOff(shared))
	if a.BackOff() != shared || b.BackOff() != shared {
		t.Fatal("WithSharedBackOff did not share the instance")
	}
}
