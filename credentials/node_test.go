package credentials

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func isolate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "cwd"), 0o755)
	t.Chdir(filepath.Join(dir, "cwd"))
	t.Setenv("HOME", filepath.Join(dir, "home"))
	return dir
}

func TestNodeKeyringCache(t *testing.T) {
	dir := isolate(t)
	root := filepath.Join(dir, "root")
	write(t, root, "config.json", `{"auths":{"reg.io":{"username":"v1"}}}`)
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	k := NewNodeKeyring(root, WithClock(clk))
	lookup := func() []string { got, _ := k.Lookup("reg.io/x"); return users(got) }
	if got := lookup(); !reflect.DeepEqual(got, []string{"v1"}) {
		t.Fatalf("first lookup %v", got)
	}
	// Beyond kubelet: an edited file is read again within a second, not
	// after the 5 minute lifetime.
	write(t, root, "config.json", `{"auths":{"reg.io":{"username":"v2-longer"}}}`)
	if got := lookup(); !reflect.DeepEqual(got, []string{"v1"}) {
		t.Fatalf("re-read within the second: %v", got)
	}
	clk.Step(time.Second)
	if got := lookup(); !reflect.DeepEqual(got, []string{"v2-longer"}) {
		t.Fatalf("edited file not read again: %v", got)
	}
	// A removed file shows too.
	os.Remove(filepath.Join(root, "config.json"))
	clk.Step(time.Second)
	if got := lookup(); got != nil {
		t.Fatalf("after removal: %v", got)
	}
	if path, err := k.Source(); path != "" || !errors.Is(err, ErrNoDockerConfig) {
		t.Fatalf("Source = %q, %v", path, err)
	}
	// A file in a later search location appearing counts as a change.
	write(t, filepath.Join(dir, "home", ".docker"), "config.json", `{"auths":{"reg.io":{"username":"home"}}}`)
	clk.Step(time.Second)
	if got := lookup(); !reflect.DeepEqual(got, []string{"home"}) {
		t.Fatalf("new file in $HOME/.docker: %v", got)
	}
	write(t, root, "config.json", `{"auths":{"reg.io":{"username":"v3"}}}`)
	k.Invalidate()
	if got := lookup(); !reflect.DeepEqual(got, []string{"v3"}) {
		t.Fatalf("after Invalidate: %v", got)
	}
	if path, err := k.Source(); path != filepath.Join(root, "config.json") || err != nil {
		t.Fatalf("Source = %q, %v", path, err)
	}
	// The lifetime still applies: kubelet's re-read after 5 minutes.
	clk.Step(DefaultCacheLifetime)
	if got := lookup(); !reflect.DeepEqual(got, []string{"v3"}) {
		t.Fatalf("after the lifetime: %v", got)
	}
}

func TestNodeKeyringReportsUnusableFile(t *testing.T) {
	dir := isolate(t)
	root := filepath.Join(dir, "root")
	write(t, root, "config.json", `{"auths":{"reg.io":{"password":"hunter2"`)
	var got []error
	k := NewNodeKeyring(root, WithErrorHandler(func(_ string, err error) { got = append(got, err) }))
	if creds, found := k.Lookup("reg.io/x"); found || creds != nil {
		t.Fatalf("found %v", creds)
	}
	if len(got) != 1 || !errors.Is(got[0], ErrNoDockerConfig) {
		t.Fatalf("errors = %v", got)
	}
	var serr *SearchError
	if !errors.As(got[0], &serr) || len(serr.Skipped) != 1 || strings.Contains(serr.Skipped[0].Err.Error(), "hunter2") {
		t.Fatalf("skipped = %+v", serr)
	}
}

// helperScript writes a docker credential helper that answers for
// reg.io and the Docker Hub server with fixed credentials.
func helperScript(t *testing.T, dir, name, body string) {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	write(t, bin, "docker-credential-"+name, "#!/bin/sh\n"+body)
	os.Chmod(filepath.Join(bin, "docker-credential-"+name), 0o755)
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
}

func TestNodeKeyringHelpers(t *testing.T) {
	dir := isolate(t)
	root := filepath.Join(dir, "root")
	helperScript(t, dir, "test", `read server
case "$server" in
  reg.io) echo '{"ServerURL":"reg.io","Username":"helper-user","Secret":"helper-pass"}' ;;
  https://index.docker.io/v1/) echo '{"ServerURL":"hub","Username":"<token>","Secret":"hub-token"}' ;;
  *) echo "credentials not found in native keychain"; exit 1 ;;
esac
`)
	helperScript(t, dir, "hang", "read server\nexec sleep 30\n")
	write(t, root, "config.json", `{"auths":{"reg.io":{},"other.io":{"username":"file"}},"credsStore":"test","credHelpers":{"slow.io":"hang"}}`)

	// Without WithHelpers: kubelet's behaviour, the empty placeholder entry.
	plain := NewNodeKeyring(root)
	got, _ := plain.Lookup("reg.io/x")
	if len(got) != 1 || got[0].Username != "" {
		t.Fatalf("without helpers: %+v", got)
	}

	// The helpers that answer get a timeout no loaded machine reaches (a
	// shell script under -race beside CPU hogs took over 500 ms); only the
	// hung one below is meant to time out, and has a short timeout.
	var errs []error
	onErr := WithErrorHandler(func(_ string, err error) { errs = append(errs, err) })
	k := NewNodeKeyring(root, WithHelpers(time.Minute), onErr)
	got, _ = k.Lookup("reg.io/x")
	if len(got) != 1 || got[0].Username != "helper-user" || got[0].Password != "helper-pass" || got[0].Source != (Source{Kind: SourceHelper, Name: "test"}) {
		t.Fatalf("helper credential: %+v", got)
	}
	got, _ = k.Lookup("docker.io/library/nginx")
	if len(got) != 1 || got[0].IdentityToken != "hub-token" || got[0].Password != "" {
		t.Fatalf("identity token from helper: %+v", got)
	}
	// Not found in the helper: the file's own entries remain.
	got, _ = k.Lookup("other.io/x")
	if !reflect.DeepEqual(users(got), []string{"file"}) {
		t.Fatalf("other.io: %v", users(got))
	}
	// A hung helper is killed at the timeout and reported.
	short := NewNodeKeyring(root, WithHelpers(200*time.Millisecond), onErr)
	if got, found := short.Lookup("slow.io/x"); found {
		t.Fatalf("slow.io: %v", got)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "timed out") {
		t.Fatalf("errors = %v", errs)
	}
}
