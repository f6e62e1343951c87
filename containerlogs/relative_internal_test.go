package containerlogs

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzRelative: any path either is refused with ErrOutsideLogsDir or names
// a file strictly inside the logs dir, and the same file.
func FuzzRelative(f *testing.F) {
	for _, s := range []string{
		"/var/log/pods/ns_p_u/app/0.log", "/var/log/pods", "/var/log/pods/", "/var/log/pods/..", "/var/log/pods/../pods/x",
		"/var/log/podsx/a", "relative/0.log", "", "/", "/var/log/pods/./a/../../etc/passwd", "/var/log/pods//a//b",
	} {
		f.Add(s)
	}
	m := &Manager{dir: "/var/log/pods"}
	f.Fuzz(func(t *testing.T, path string) {
		rel, err := m.relative(path)
		if err != nil {
			if !errors.Is(err, ErrOutsideLogsDir) {
				t.Fatalf("%q: %v, want ErrOutsideLogsDir", path, err)
			}
			return
		}
		if !filepath.IsLocal(rel) || rel == "." {
			t.Fatalf("%q: rel %q is not inside", path, rel)
		}
		if got := filepath.Join(m.dir, rel); got != filepath.Clean(path) {
			t.Fatalf("%q: rel %q names %q", path, rel, got)
		}
		if !strings.HasPrefix(filepath.Clean(path), m.dir+"/") {
			t.Fatalf("%q accepted outside %q", path, m.dir)
		}
	})
}
