package mounts

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// FuzzSubPath: whatever the subPath, it is refused or it resolves inside
// the volume, and nothing is ever created outside it.
func FuzzSubPath(f *testing.F) {
	for _, s := range []string{"a/b", "../x", "to-root/etc", "inside-link/x", "/abs", "a\x00b", "chain1/secret", "inside/up-two/x", ".", "a//b/./c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sub string) {
		vol, outside := escapeTree(t)
		var d OSDisk
		if ValidateSubPath(sub) != nil {
			return
		}
		if err := d.MakeSubPathDir(vol, sub); err != nil {
			return
		}
		got, err := d.ResolveSubPath(vol, sub)
		if err == nil && !within(vol, got) {
			t.Fatalf("%q resolved outside the volume: %q", sub, got)
		}
		entries, _ := os.ReadDir(outside)
		if len(entries) != 1 {
			t.Fatalf("%q created something outside the volume", sub)
		}
	})
}

// FuzzHostsFile: host aliases never add lines or fields beyond their own.
func FuzzHostsFile(f *testing.F) {
	f.Add("10.0.0.1", "foo", "bar")
	f.Add("10.0.0.1\n1.2.3.4", "x y", "z")
	f.Add("fd00::1", "a\tb", "#c")
	f.Fuzz(func(t *testing.T, ip, h1, h2 string) {
		aliases := []corev1.HostAlias{{IP: ip, Hostnames: []string{h1, h2}}}
		got, err := HostsFileContent("web", "", []string{"10.0.0.5"}, aliases)
		if err != nil {
			if !errors.Is(err, ErrInvalidHostAlias) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
		// 7 header lines, 1 pod IP, blank, alias header, 1 alias line.
		if len(lines) != 11 {
			t.Fatalf("%d lines for one alias: %q", len(lines), got)
		}
		if fields := bytes.Split([]byte(lines[10]), []byte("\t")); len(fields) != 3 {
			t.Fatalf("alias line has %d fields: %q", len(fields), lines[10])
		}
	})
}

// FuzzParseMountInfo: any input parses without panicking, every entry has
// a path, and a line built from a path with mountinfo's escapes gives the
// path back.
func FuzzParseMountInfo(f *testing.F) {
	for _, s := range []string{"22 1 8:1 / / rw - ext4 /dev/sda1 rw\n", `1 2 3 / /a\040b rw - tmpfs x rw`, `1 2 3 / \134\ - `, "", "\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseMountInfo(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, mp := range got {
			if mp.Path == "" {
				t.Fatalf("empty path from %q", in)
			}
		}
		if strings.ContainsAny(in, " \t\n\\") || in == "" {
			return
		}
		esc := strings.NewReplacer(`\`, `\134`).Replace(in)
		back, err := ParseMountInfo(strings.NewReader("1 2 3 / " + esc + " rw - tmpfs tmpfs rw\n"))
		if err != nil || len(back) != 1 || back[0].Path != in || back[0].FSType != "tmpfs" {
			t.Fatalf("%q: got %v, %v", in, back, err)
		}
	})
}
