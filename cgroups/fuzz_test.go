package cgroups

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzNames: a name's cgroupfs form parses back to it, its systemd form
// (when it has one) parses back to its last component's pieces, and the
// parsers never panic.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"", "/", "/kubepods/burstable/pod1-2", "kubepods.slice", "/a-b.slice/a-b-c_d.slice", "//x//", "-.slice", "a\x00b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := ParseCgroupfs(s)
		_ = ParseSystemd(s)
		// path.Join (kubelet's ToCgroupfs too) drops "." and ".."
		// components: only names without them round-trip.
		clean := !slices.ContainsFunc(n, func(c string) bool { return c == "" || c == "." || c == ".." })
		if clean {
			if back := ParseCgroupfs(n.Cgroupfs()); !slices.Equal(back, n) {
				t.Errorf("ParseCgroupfs(%q) = %q; its Cgroupfs %q parses to %q", s, []string(n), n.Cgroupfs(), []string(back))
			}
		}
		if sys, err := n.Systemd(); err == nil && len(n) > 0 && clean && !strings.ContainsAny(s, "_") {
			// ParseSystemd reads only the last slice: all the
			// components, split at the dashes they had.
			back := ParseSystemd(sys)
			if len(back) == 0 || strings.Join(back, "-") != strings.Join(n, "-") {
				t.Errorf("Systemd(%q) = %q parses to %q", []string(n), sys, []string(back))
			}
		}
	})
}

// FuzzOSFSPath: no path given to an OSFS leaves its root.
func FuzzOSFSPath(f *testing.F) {
	for _, s := range []string{"", "cpu/kubepods", "../etc", "a/../../b", "/abs", "a//b", "a/./b", "..", "a/b/"} {
		f.Add(s)
	}
	root := "/sys/fs/cgroup"
	o := NewOSFS(root)
	f.Fuzz(func(t *testing.T, s string) {
		p, err := o.path(s)
		if err != nil {
			return
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			t.Errorf("path(%q) = %q, outside %s", s, p, root)
		}
	})
}
