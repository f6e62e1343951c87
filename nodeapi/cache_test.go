package nodeapi

import (
	"fmt"
	"testing"
	"time"
)

// TestTTLCacheSemantics: an answer is a hit until its expiry (inclusive)
// and a miss after; a put of a cached key replaces it; a full cache drops
// the expired first, then the entry nearest its expiry, whatever the
// order the entries came in (two TTLs, as Reviews has); and it never
// holds more than maxCached.
func TestTTLCacheSemantics(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var c ttlCache[int]
	c.put("a", 1, t0, t0.Add(time.Minute))
	if v, hit := c.get("a", t0.Add(time.Minute)); !hit || v != 1 {
		t.Errorf("at expiry: %d, %v; want a hit", v, hit)
	}
	if _, hit := c.get("a", t0.Add(time.Minute+1)); hit {
		t.Error("after expiry: a hit")
	}
	if len(c.m) != 0 {
		t.Errorf("an expired miss left %d entries", len(c.m))
	}
	c.put("a", 1, t0, t0.Add(time.Minute))
	c.put("a", 2, t0, t0.Add(5*time.Minute))
	if v, hit := c.get("a", t0.Add(2*time.Minute)); !hit || v != 2 {
		t.Errorf("replaced answer: %d, %v; want 2", v, hit)
	}
	if len(c.m) != 1 {
		t.Errorf("a replaced key holds %d entries", len(c.m))
	}

	// Full, with long-lived entries first and short-lived ones after: the
	// short ones expire first and go first.
	var f ttlCache[int]
	long, short := 5*time.Minute, 30*time.Second
	for i := range maxCached / 2 {
		f.put(fmt.Sprintf("long-%d", i), i, t0, t0.Add(long))
	}
	for i := range maxCached / 2 {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		f.put(fmt.Sprintf("short-%d", i), i, now, now.Add(short))
	}
	if len(f.m) != maxCached {
		t.Fatalf("%d cached, want %d", len(f.m), maxCached)
	}
	now := t0.Add(10 * time.Second)
	f.put("new-0", 0, now, now.Add(short))
	if _, hit := f.get("short-0", now); hit {
		t.Error("the entry nearest its expiry (short-0) was kept")
	}
	if _, hit := f.get("long-0", now); !hit {
		t.Error("long-0, far from its expiry, was dropped")
	}
	if len(f.m) != maxCached {
		t.Errorf("%d cached, want %d", len(f.m), maxCached)
	}
	// Later, the first 100 short ones have expired: a put drops all the
	// expired, not one answer that is still good.
	now = t0.Add(short + 100*time.Millisecond)
	f.put("new-1", 1, now, now.Add(short))
	if _, hit := f.get("short-200", now); !hit {
		t.Error("short-200, not expired, was dropped")
	}
	if _, hit := f.get("long-1", now); !hit {
		t.Error("long-1, not expired, was dropped")
	}
	// short-1 to short-99 expired (short-0 went before): 99 gone, one new.
	if n := len(f.m); n != maxCached-98 {
		t.Errorf("%d cached after the expired went, want %d", n, maxCached-98)
	}
	// A clock that went back still keeps each list in expiry order.
	var b ttlCache[int]
	b.put("late", 0, t0.Add(time.Hour), t0.Add(time.Hour+time.Minute))
	b.put("early", 0, t0, t0.Add(time.Minute))
	if front := b.byTTL[time.Minute].Front().Value.(*ttlEntry[int]).key; front != "early" {
		t.Errorf("front of the list %q, want early", front)
	}
}
