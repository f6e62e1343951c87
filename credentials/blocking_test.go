package credentials

import (
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// bound is how long a lookup that must not block may take before the test
// declares it blocked (a failure bound, not synchronisation).
const bound = 20 * time.Second

func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(bound):
		t.Fatalf("%s blocked for %s", what, bound)
	}
}

// TestFIFOConfigDoesNotBlock: a config.json that is a FIFO with no writer
// is skipped as not a regular file; the lookup does not block, and
// neither do the other lookups.
func TestFIFOConfigDoesNotBlock(t *testing.T) {
	dir := isolate(t)
	root := filepath.Join(dir, "root")
	os.MkdirAll(root, 0o755)
	if err := mkfifo(filepath.Join(root, "config.json")); err != nil {
		t.Fatal(err)
	}
	write(t, root, ".dockercfg", `{"reg.io":{"username":"cfg"}}`)
	var errs []error
	k := NewNodeKeyring(root, WithErrorHandler(func(_ string, err error) { errs = append(errs, err) }))
	var got []AuthConfig
	within(t, "lookup with a FIFO config.json", func() { got, _ = k.Lookup("reg.io/app") })
	if len(got) != 1 || got[0].Username != "cfg" {
		t.Fatalf("got %v, want the .dockercfg entry", got)
	}
	_, _, err := ReadDockerConfigJSONFile([]string{root})
	if err == nil || !strings.Contains(fmt.Sprint(err.(*SearchError).Skipped), "not a regular file") {
		t.Fatalf("FIFO not reported as skipped: %v", err)
	}
}

// TestHelpersRunOutsideLock: while one registry's helper hangs, lookups
// of other registries answer.
func TestHelpersRunOutsideLock(t *testing.T) {
	dir := isolate(t)
	root := filepath.Join(dir, "root")
	gate := filepath.Join(dir, "gate")
	if err := mkfifo(gate); err != nil {
		t.Fatal(err)
	}
	helperScript(t, dir, "gated", fmt.Sprintf(`read server
case "$server" in
  slow.io) touch %s; read x < %s ;;
esac
echo '{"ServerURL":"x","Username":"u-'"$server"'","Secret":"s"}'
`, filepath.Join(dir, "started"), gate))
	write(t, root, "config.json", `{"credsStore":"gated"}`)
	k := NewNodeKeyring(root, WithHelpers(time.Minute))
	var wg sync.WaitGroup
	wg.Add(1)
	var slow []AuthConfig
	go func() { defer wg.Done(); slow, _ = k.Lookup("slow.io/app") }()
	within(t, "slow helper start", func() {
		for {
			if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
				return
			}
			goruntime.Gosched()
		}
	})
	for i := 0; i < 4; i++ {
		host := fmt.Sprintf("fast%d.io", i)
		within(t, "lookup of "+host+" while another helper hangs", func() {
			got, _ := k.Lookup(host + "/app")
			if len(got) != 1 || got[0].Username != "u-"+host {
				t.Errorf("%s: %v", host, got)
			}
		})
	}
	f, err := os.OpenFile(gate, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("go\n")
	f.Close()
	wg.Wait()
	if len(slow) != 1 || slow[0].Username != "u-slow.io" {
		t.Fatalf("slow: %v", slow)
	}
}

// starred returns word with 0, 1 or 2 stars inserted at each position.
func starred(word string) []string {
	out := []string{""}
	for i := 0; i <= len(word); i++ {
		var next []string
		for _, p := range out {
			for stars := 0; stars < 3; stars++ {
				q := p + strings.Repeat("*", stars)
				if i < len(word) {
					q += word[i : i+1]
				}
				next = append(next, q)
			}
		}
		out = next
	}
	return out
}

// allMatchingConfig has n keys that all match "registry.io/app", built to
// be the worst case for an insertion sort: half are "*…registry….io" (a
// glob first label, a literal "io": visited first, sorted last), half
// "registry-ish.i*o" (a glob last label: visited last, sorted first).
func allMatchingConfig(n int) DockerConfig {
	var first, last []string
	for _, v := range starred("registry") {
		if strings.HasPrefix(v, "*") {
			first = append(first, v+".io")
		} else {
			for _, w := range starred("io") {
				if w != "io" {
					last = append(last, v+"."+w)
				}
			}
		}
	}
	cfg := DockerConfig{}
	for i := 0; len(cfg) < n; i++ {
		for _, k := range []string{first[i%len(first)], last[i%len(last)]} {
			if len(cfg) < n {
				cfg[k] = DockerConfigEntry{Username: k}
			}
		}
	}
	return cfg
}

// TestManyMatchingKeys: 26,000 keys that all match one image are all
// returned, in kubelet's order (the oracle's), and a lookup does about
// linearly more work than with 1,000 such keys: entries checked plus sort
// comparisons, counted (no clock, so load cannot fail it). n log n grows
// 26 × log(26,000)/log(1,000) ≈ 38×; quadratic would be 676×: the test
// allows 60×, and each lookup at most 2·m·log2(m) + m operations for its m
// matches. BenchmarkLookupAllMatching times the same lookups.
func TestManyMatchingKeys(t *testing.T) {
	ops := func(k *BasicKeyring) int {
		n := 0
		got, _ := k.idx.Load().lookupCounted("registry.io/app", &n)
		if bound := 2*len(got)*bits.Len(uint(len(got))) + len(got); n > bound {
			t.Errorf("%d matches took %d operations, over 2·m·log2(m) + m = %d", len(got), n, bound)
		}
		return n
	}
	var small BasicKeyring
	small.Add(allMatchingConfig(1_000))
	cfg := allMatchingConfig(26_000)
	var k BasicKeyring
	k.Add(cfg)
	var o oracleKeyring
	o.add(cfg)
	got, _ := k.Lookup("registry.io/app")
	want, _ := o.lookup("registry.io/app")
	if len(got) != 26_000 || strings.Join(users(got), ",") != strings.Join(users(want), ",") {
		t.Fatalf("%d results, oracle %d, or a different order", len(got), len(want))
	}
	s, l := ops(&small), ops(&k)
	t.Logf("one lookup: %d operations with 1,000 matches, %d with 26,000 (%.1f×)", s, l, float64(l)/float64(s))
	if l > 60*s {
		t.Fatalf("26,000 matches cost %.0f× 1,000 matches: not n log n", float64(l)/float64(s))
	}
}

func BenchmarkLookupAllMatching(b *testing.B) {
	for _, n := range []int{1_000, 26_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var k BasicKeyring
			k.Add(allMatchingConfig(n))
			b.ReportAllocs()
			for b.Loop() {
				if got, _ := k.Lookup("registry.io/app"); len(got) != n {
					b.Fatal(len(got))
				}
			}
		})
	}
}
