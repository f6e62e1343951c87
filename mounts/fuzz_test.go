package mounts

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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

// parseFuzzPayload turns lines "path|octal mode" (mode optional, default
// 0644; any uint32 accepted, so setuid and type bits too) into a payload
// whose contents differ per line and per gen.
func parseFuzzPayload(spec string, gen byte) map[string]File {
	files := map[string]File{}
	for i, line := range strings.Split(spec, "\n") {
		if i >= 16 {
			break
		}
		p, m, _ := strings.Cut(line, "|")
		mode := fs.FileMode(0o644)
		if v, err := strconv.ParseUint(m, 8, 32); err == nil {
			mode = fs.FileMode(v)
		}
		files[p] = File{Data: []byte{gen, byte(i), 'x'}, Mode: mode}
	}
	return files
}

// FuzzWriteAtomic: two successive payloads of hostile paths and modes
// written into a volume directory under a root that also holds a
// sentinel file and a directory outside the volume, and, in the volume,
// a foreign file and a foreign link pointing out. Whatever the payloads:
// each write succeeds or fails with one of WriteAtomic's errors; nothing
// outside the volume directory changes; the foreign file and link stay;
// after a success the top-level links show exactly the payload (cleaned
// paths, contents, modes within 0777) and the volume holds only ..data
// and one timestamped directory besides; after a failure the previous
// payload is still what shows; no file anywhere is setuid or setgid.
// With linked set, the volume directory is a symlink to the outside
// directory and every write must fail.
func FuzzWriteAtomic(f *testing.F) {
	f.Add("a\nsub/b|600", "a|400\nc/d/e", false)
	f.Add("../escape\nok", "ok", false)
	f.Add("./..data|644", "..data_tmp\nx", false)
	f.Add("foreign", "escape/x", false)
	f.Add("a|4755", "a|37777777777", false)
	f.Add("a//b\na/b|600", "a/b/c\na", false)
	f.Add("x|20000000777\n.|644", "/abs\n\x00", false)
	f.Add("a\nb/c", "a\nb/c", true)
	f.Add("same|644\nsub/dir/f", "same|600\nsub/dir/f", false)
	f.Fuzz(func(t *testing.T, spec1, spec2 string, linked bool) {
		base := t.TempDir()
		root := filepath.Join(base, "root")
		outside := filepath.Join(root, "outside")
		vol := filepath.Join(root, "pods", "uid", "vol")
		for _, d := range []string{outside, vol} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(root, "sentinel"), []byte("sentinel"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(outside, "precious"), []byte("keep"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(vol, "foreign"), []byte("mine"), 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../../../outside", filepath.Join(vol, "escape")); err != nil {
			t.Fatal(err)
		}
		dir := vol
		if linked {
			dir = filepath.Join(root, "pods", "uid", "linked")
			if err := os.Symlink("../../outside", dir); err != nil {
				t.Fatal(err)
			}
		}
		outsideBefore := snapshot(t, outside)
		foreign := map[string]string{}
		for _, name := range []string{"foreign", "escape"} {
			p := filepath.Join(vol, name)
			foreign[p] = snapshot(t, p)[p]
		}
		var shown map[string]File // what the volume shows; nil: nothing yet
		for gen, spec := range []string{spec1, spec2} {
			files := parseFuzzPayload(spec, byte(gen))
			err := WriteAtomic(root, dir, files)
			if err != nil && !errors.Is(err, ErrInvalidPayload) && !errors.Is(err, ErrInvalidFileMode) &&
				!errors.Is(err, ErrForeignEntry) && !errors.Is(err, ErrUnsafeVolumeDir) {
				t.Fatalf("payload %q: unexpected error: %v", spec, err)
			}
			if linked && err == nil {
				t.Fatalf("payload %q written through a linked volume directory", spec)
			}
			for _, fl := range files {
				if err == nil && fl.Mode&^fs.ModePerm != 0 {
					t.Fatalf("payload %q: mode %v accepted", spec, fl.Mode)
				}
			}
			if after := snapshot(t, outside); !maps.Equal(outsideBefore, after) {
				t.Fatalf("payload %q changed the outside directory:\n%v\n%v", spec, outsideBefore, after)
			}
			if b, rerr := os.ReadFile(filepath.Join(root, "sentinel")); rerr != nil || string(b) != "sentinel" {
				t.Fatalf("payload %q: sentinel %q, %v", spec, b, rerr)
			}
			rootEntries, _ := os.ReadDir(root)
			if names := entryNames(rootEntries); !slices.Equal(names, []string{"outside", "pods", "sentinel"}) {
				t.Fatalf("payload %q: root holds %q", spec, names)
			}
			for p, want := range foreign {
				if got := snapshot(t, p)[p]; got != want {
					t.Fatalf("payload %q: foreign %s is %q, was %q", spec, p, got, want)
				}
			}
			if linked {
				continue
			}
			if err == nil {
				shown = files
			}
			if shown != nil {
				checkVolumeContents(t, vol, shown, "foreign", "escape")
				entries, _ := os.ReadDir(vol)
				if h := hidden(entryNames(entries)); len(h) != 2 || !slices.Contains(h, "..data") {
					t.Fatalf("payload %q: hidden entries %q", spec, h)
				}
			}
			if t.Failed() {
				t.FailNow()
			}
		}
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if info, ierr := d.Info(); ierr == nil && info.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 && !info.IsDir() {
				t.Fatalf("%s is %v", p, info.Mode())
			}
			return nil
		})
	})
}
