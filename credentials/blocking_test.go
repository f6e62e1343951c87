package credentials

import (
	"fmt"
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
