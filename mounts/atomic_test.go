package mounts

import (
	"encoding/base64"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// volDir is a volume directory under a new root, as a pod's is under the
// kubelet root dir.
func volDir(t testing.TB) (root, dir string) {
	t.Helper()
	root = t.TempDir()
	return root, filepath.Join(root, "pods", "uid", "volumes", "kubernetes.io~secret", "vol")
}

func mustWrite(t *testing.T, root, dir string, files map[string]File, opts ...AtomicOption) {
	t.Helper()
	if err := WriteAtomic(root, dir, files, opts...); err != nil {
		t.Fatal(err)
	}
}

func dataTarget(t *testing.T, dir string) string {
	t.Helper()
	s, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// visible reads the volume as a container does: every top-level entry
// that is not hidden, followed, down to the files. Foreign entries are
// the ones in skip.
func visible(t *testing.T, dir string, skip ...string) map[string]File {
	t.Helper()
	got := map[string]File{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") || slices.Contains(skip, e.Name()) {
			continue
		}
		if e.Type()&fs.ModeSymlink == 0 {
			t.Errorf("%s: visible entry %q is not a link", dir, e.Name())
			continue
		}
		if target, _ := os.Readlink(filepath.Join(dir, e.Name())); target != "..data/"+e.Name() {
			t.Errorf("%s: link %q -> %q", dir, e.Name(), target)
		}
		top := filepath.Join(dir, e.Name())
		if info, err := os.Stat(top); err == nil && info.IsDir() {
			top += "/" // has WalkDir follow the link
		}
		err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := os.Stat(p) // through the top-level link
			if err != nil || info.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			got[rel] = File{Data: b, Mode: info.Mode()}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// checkVolumeContents is kubelet's: what the links show is exactly the
// payload, paths cleaned, with its modes.
func checkVolumeContents(t *testing.T, dir string, files map[string]File, skip ...string) {
	t.Helper()
	want := map[string]File{}
	for k, f := range files {
		want[filepath.Clean(k)] = File{Data: f.Data, Mode: f.Mode}
		if f.Data == nil {
			want[filepath.Clean(k)] = File{Data: []byte{}, Mode: f.Mode}
		}
	}
	got := visible(t, dir, skip...)
	for k, f := range got {
		if f.Data == nil {
			got[k] = File{Data: []byte{}, Mode: f.Mode}
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s shows\n%v\nwant\n%v", dir, got, want)
	}
}

func TestWriteAtomic(t *testing.T) {
	root, dir := volDir(t)
	v1 := map[string]File{"a": {Data: []byte("1"), Mode: 0o644}, "sub/b": {Data: []byte("2"), Mode: 0o600}}
	mustWrite(t, root, dir, v1)
	first := dataTarget(t, dir)
	mustWrite(t, root, dir, v1)
	if dataTarget(t, dir) != first {
		t.Fatalf("unchanged payload rewritten: %q then %q", first, dataTarget(t, dir))
	}
	checkVolumeContents(t, dir, v1)
	if info, err := os.Stat(filepath.Join(dir, "..data")); err != nil || info.Mode().Perm() != 0o755 {
		t.Errorf("timestamped directory mode %v, %v; want 0755", info.Mode(), err)
	}
	v2 := map[string]File{"a": {Data: []byte("changed"), Mode: 0o644}}
	mustWrite(t, root, dir, v2)
	if dataTarget(t, dir) == first {
		t.Error("..data not swapped")
	}
	if _, err := os.Lstat(filepath.Join(dir, first)); !os.IsNotExist(err) {
		t.Errorf("old payload directory left: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Errorf("stale link sub left: %v", err)
	}
	checkVolumeContents(t, dir, v2)
	if _, err := os.Lstat(filepath.Join(dir, "..data_tmp")); !os.IsNotExist(err) {
		t.Errorf("..data_tmp left: %v", err)
	}
}

// Kubelet's TestValidatePath, TestValidatePayload and podstart's stricter
// rules (a cleaned path checked too, a NUL byte, conflicts).
func TestValidatePayload(t *testing.T) {
	for _, tc := range []struct {
		name  string
		paths []string
		want  []string // cleaned; nil: refused
	}{
		{"valid 1", []string{"i/am/well/behaved.txt"}, []string{"i/am/well/behaved.txt"}},
		{"valid 2", []string{"keepyourheaddownandfollowtherules.txt"}, []string{"keepyourheaddownandfollowtherules.txt"}},
		{"valid payload", []string{"foo", "bar"}, []string{"bar", "foo"}},
		{"dotfiles", []string{".dotfile", "a/.b", "...c"}, nil},
		{"dotfiles 2", []string{".dotfile", "a/.b", ".c.d"}, []string{".c.d", ".dotfile", "a/.b"}},
		{"unclean path is cleaned", []string{"foo////bar", "./baz", "a/./b/"}, []string{"a/b", "baz", "foo/bar"}},
		{"max path length", []string{strings.Repeat("a/", 2048) + "a"}, nil},
		{"long path within limits", []string{strings.Repeat("a/", 2047) + "a"}, []string{strings.Repeat("a/", 2047) + "a"}},
		{"max file length", []string{strings.Repeat("a", 256)}, nil},
		{"file length 255", []string{strings.Repeat("a", 255)}, []string{strings.Repeat("a", 255)}},
		{"absolute failure", []string{"/dev/null"}, nil},
		{"reserved path", []string{"..sneaky.txt"}, nil},
		{"reserved data dir", []string{"..data"}, nil},
		{"reserved after cleaning", []string{"./..data"}, nil},
		{"reserved after cleaning 2", []string{".//..x/y"}, nil},
		{"contains doubledot 1", []string{"hello/there/../../../../../../etc/passwd"}, nil},
		{"contains doubledot 2", []string{"hello/../etc/somethingbad"}, nil},
		{"doubledot alone", []string{".."}, nil},
		{"empty", []string{""}, nil},
		{"dot", []string{"."}, nil},
		{"dot slash", []string{"./"}, nil},
		{"NUL byte", []string{"a\x00b"}, nil},
		{"file and directory", []string{"foo/bar", "foo/bar/txt"}, nil},
		{"file and directory 2", []string{"a", "a/b/c"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]File{}
			for i, p := range tc.paths {
				files[p] = File{Data: []byte{byte(i)}, Mode: 0o644}
			}
			got, err := checkPayload(files)
			if tc.want == nil {
				if !errors.Is(err, ErrInvalidPayload) {
					t.Fatalf("err = %v, want ErrInvalidPayload", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.paths, tc.want) {
				t.Errorf("paths %q, want %q", got.paths, tc.want)
			}
		})
	}
	// Two spellings of one path: the same file is one entry, different
	// contents are refused (kubelet keeps one at random).
	if p, err := checkPayload(map[string]File{"a//b": {Data: []byte("x")}, "a/b": {Data: []byte("x")}}); err != nil || len(p.paths) != 1 {
		t.Errorf("same file twice: %v, %v", p.paths, err)
	}
	if _, err := checkPayload(map[string]File{"a//b": {Data: []byte("x")}, "a/b": {Data: []byte("y")}}); !errors.Is(err, ErrInvalidPayload) {
		t.Errorf("two files at one path: %v", err)
	}
}

// Bad paths are refused before anything is written.
func TestWriteAtomicRefusesPaths(t *testing.T) {
	for _, p := range []string{"../escape", "a/../../b", "a/../b", "/abs", "..data", "./..data", "..x/ok", "", strings.Repeat("x", 256), strings.Repeat("a/", 2049)} {
		root, dir := volDir(t)
		err := WriteAtomic(root, dir, map[string]File{"ok": {Data: []byte("1"), Mode: 0o644}, p: {Mode: 0o644}})
		if !errors.Is(err, ErrInvalidPayload) {
			t.Errorf("%.20q: %v", p, err)
		}
		if entries, _ := os.ReadDir(root); len(entries) != 0 {
			t.Errorf("%.20q: something was written", p)
		}
	}
}

// A mode with any bit outside 0777 is refused before anything is written:
// on old main a File of mode fs.FileMode(int32(-1)) or with ModeSetuid
// became a setuid (and setgid, sticky) file.
func TestWriteAtomicRefusesModes(t *testing.T) {
	for _, m := range []fs.FileMode{fs.ModeSetuid | 0o755, fs.ModeSetgid | 0o644, fs.ModeSticky | 0o644, fs.ModeDir | 0o755,
		fs.ModeSymlink | 0o777, fs.FileMode(0o4755), fs.FileMode(1 << 23), fs.FileMode(0xffffffff) /* int32(-1) */} {
		root, dir := volDir(t)
		err := WriteAtomic(root, dir, map[string]File{"ok": {Data: []byte("1"), Mode: 0o644}, "bad": {Data: []byte("x"), Mode: m}})
		if !errors.Is(err, ErrInvalidFileMode) {
			t.Errorf("mode %v: %v, want ErrInvalidFileMode", m, err)
		}
		if entries, _ := os.ReadDir(root); len(entries) != 0 {
			t.Errorf("mode %v: something was written", m)
		}
	}
	root, dir := volDir(t)
	mustWrite(t, root, dir, map[string]File{"all": {Data: []byte("1"), Mode: 0o777}, "none": {Data: []byte("2"), Mode: 0}})
	if info, err := os.Lstat(filepath.Join(dir, "..data", "all")); err != nil || info.Mode() != 0o777 {
		t.Errorf("0777: %v, %v", info.Mode(), err)
	}
}

// Kubelet's TestPathsToRemove: the previous payload's paths that the next
// one does not hold (files and directories), read from the directory
// ..data points to.
func TestPathsToRemove(t *testing.T) {
	f := func(s string) File { return File{Mode: 0o644, Data: []byte(s)} }
	for _, tc := range []struct {
		name               string
		payload1, payload2 map[string]File
		want               []string
	}{
		{"simple", map[string]File{"foo.txt": f("foo"), "bar.txt": f("bar")}, map[string]File{"foo.txt": f("foo")}, []string{"bar.txt"}},
		{"simple 2", map[string]File{"foo.txt": f("foo"), "zip/bar.txt": f("zip/b}ar")}, map[string]File{"foo.txt": f("foo")}, []string{"zip", "zip/bar.txt"}},
		{"subdirs 1", map[string]File{"foo.txt": f("foo"), "zip/zap/bar.txt": f("zip/bar")}, map[string]File{"foo.txt": f("foo")},
			[]string{"zip", "zip/zap", "zip/zap/bar.txt"}},
		{"subdirs 2", map[string]File{"foo.txt": f("foo"), "zip/1/2/3/4/bar.txt": f("zip/b}ar")}, map[string]File{"foo.txt": f("foo")},
			[]string{"zip", "zip/1", "zip/1/2", "zip/1/2/3", "zip/1/2/3/4", "zip/1/2/3/4/bar.txt"}},
		{"subdirs 3", map[string]File{"foo.txt": f("foo"), "zip/1/2/3/4/bar.txt": f("zip/b}ar"), "zap/a/b/c/bar.txt": f("zap/bar")}, map[string]File{"foo.txt": f("foo")},
			[]string{"zap", "zap/a", "zap/a/b", "zap/a/b/c", "zap/a/b/c/bar.txt", "zip", "zip/1", "zip/1/2", "zip/1/2/3", "zip/1/2/3/4", "zip/1/2/3/4/bar.txt"}},
		{"subdirs 4",
			map[string]File{"foo.txt": f("foo"), "zap/1/2/3/4/bar.txt": f("zip/bar"), "zap/1/2/c/bar.txt": f("zap/bar"), "zap/1/2/magic.txt": f("indigo")},
			map[string]File{"foo.txt": f("foo"), "zap/1/2/magic.txt": f("indigo")},
			[]string{"zap/1/2/3", "zap/1/2/3/4", "zap/1/2/3/4/bar.txt", "zap/1/2/c", "zap/1/2/c/bar.txt"}},
		{"subdirs 5",
			map[string]File{"foo.txt": f("foo"), "zap/1/2/3/4/bar.txt": f("zip/bar"), "zap/1/2/c/bar.txt": f("zap/bar")},
			map[string]File{"foo.txt": f("foo"), "zap/1/2/magic.txt": f("indigo")},
			[]string{"zap/1/2/3", "zap/1/2/3/4", "zap/1/2/3/4/bar.txt", "zap/1/2/c", "zap/1/2/c/bar.txt"}},
		{"prefix is not a directory", map[string]File{"zip": f("1"), "zipper/a": f("2")}, map[string]File{"zipper/a": f("2")}, []string{"zip"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, dir := volDir(t)
			mustWrite(t, root, dir, tc.payload1)
			vol, err := openVolumeDir(root, strings.TrimPrefix(dir, root+"/"), false)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(vol)
			old, err := readTree(vol, dataTarget(t, dir))
			if err != nil {
				t.Fatal(err)
			}
			p, err := checkPayload(tc.payload2)
			if err != nil {
				t.Fatal(err)
			}
			if got := pathsToRemove(old, p); !slices.Equal(got, tc.want) {
				t.Errorf("paths to remove %q, want %q", got, tc.want)
			}
		})
	}
}

// Kubelet's TestWriteOnce.
func TestWriteOnce(t *testing.T) {
	mystery, err := base64.StdEncoding.DecodeString("f0VMRgIBAQAAAAAAAAAAAAIAPgABAAAAeABAAAAAAABAAAAAAAAAAAAAAAAAAAAAAAAAAEAAOAAB" +
		"AAAAAAAAAAEAAAAFAAAAAAAAAAAAAAAAAEAAAAAAAAAAQAAAAAAAfQAAAAAAAAB9AAAAAAAAAAAA" + "IAAAAAAAsDyZDwU=")
	if err != nil || len(mystery) != 125 {
		t.Fatalf("decoding: %d bytes, %v", len(mystery), err)
	}
	f := func(mode fs.FileMode, s string) File { return File{Mode: mode, Data: []byte(s)} }
	for _, tc := range []struct {
		name    string
		payload map[string]File
		success bool
	}{
		{"invalid payload 1", map[string]File{"foo": f(0o644, "foo"), "..bar": f(0o644, "bar"), "binary.bin": {Mode: 0o644, Data: mystery}}, false},
		{"invalid payload 2", map[string]File{"foo/../bar": f(0o644, "foo")}, false},
		{"basic 1", map[string]File{"foo": f(0o644, "foo"), "bar": f(0o644, "bar")}, true},
		{"basic 2", map[string]File{"binary.bin": {Mode: 0o644, Data: mystery}, ".binary.bin": {Mode: 0o644, Data: mystery}}, true},
		{"basic mode 1", map[string]File{"foo": f(0o777, "foo"), "bar": f(0o400, "bar")}, true},
		{"dotfiles", map[string]File{"foo": f(0o644, "foo"), "bar": f(0o644, "bar"), ".dotfile": f(0o644, "dotfile"), ".dotfile.file": f(0o644, "dotfile.file")}, true},
		{"dotfiles mode", map[string]File{"foo": f(0o407, "foo"), "bar": f(0o440, "bar"), ".dotfile": f(0o777, "dotfile"), ".dotfile.file": f(0o666, "dotfile.file")}, true},
		{"subdirectories 1", map[string]File{"foo/bar.txt": f(0o644, "foo/bar"), "bar/zab.txt": f(0o644, "bar/zab.txt")}, true},
		{"subdirectories mode 1", map[string]File{"foo/bar.txt": f(0o400, "foo/bar"), "bar/zab.txt": f(0o644, "bar/zab.txt")}, true},
		{"subdirectories 2", map[string]File{"foo//bar.txt": f(0o644, "foo//bar"), "bar///bar/zab.txt": f(0o644, "bar/../bar/zab.txt")}, true},
		{"subdirectories 3", map[string]File{"foo/bar.txt": f(0o644, "foo/bar"), "bar/zab.txt": f(0o644, "bar/zab.txt"),
			"foo/blaz/bar.txt": f(0o644, "foo/blaz/bar"), "bar/zib/zab.txt": f(0o644, "bar/zib/zab.txt")}, true},
		{"kitchen sink", map[string]File{"foo.log": f(0o644, "foo"), "bar.zap": f(0o644, "bar"), ".dotfile": f(0o644, "dotfile"),
			"foo/bar.txt": f(0o644, "foo/bar"), "bar/zab.txt": f(0o644, "bar/zab.txt"), "foo/blaz/bar.txt": f(0o644, "foo/blaz/bar"),
			"bar/zib/zab.txt": f(0o400, "bar/zib/zab.txt"), "1/2/3/4/5/6/7/8/9/10/.dotfile.lib": f(0o777, "1-2-3-dotfile")}, true},
		{"empty payload", map[string]File{}, true},
		{"empty file", map[string]File{"empty": {Mode: 0o644}}, true},
		{"setuid", map[string]File{"foo": f(0o4755, "foo")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, dir := volDir(t)
			err := WriteAtomic(root, dir, tc.payload)
			if (err == nil) != tc.success {
				t.Fatalf("err = %v, want success %v", err, tc.success)
			}
			if err == nil {
				checkVolumeContents(t, dir, tc.payload)
			}
		})
	}
}

// Kubelet's TestUpdate: a second payload replaces the first (or, the
// same, is not written).
func TestUpdate(t *testing.T) {
	f := func(mode fs.FileMode, s string) File { return File{Mode: mode, Data: []byte(s)} }
	two := func() map[string]File {
		return map[string]File{"foo/bar.txt": f(0o644, "foo"), "bar/zab.txt": f(0o644, "bar")}
	}
	with := func(m map[string]File, kv ...any) map[string]File {
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
			} else {
				m[kv[i].(string)] = kv[i+1].(File)
			}
		}
		return m
	}
	for _, tc := range []struct {
		name        string
		first, next map[string]File
		shouldWrite bool
	}{
		{"update", map[string]File{"foo": f(0o644, "foo"), "bar": f(0o644, "bar")}, map[string]File{"foo": f(0o644, "foo2"), "bar": f(0o640, "bar2")}, true},
		{"no update", map[string]File{"foo": f(0o644, "foo"), "bar": f(0o644, "bar")}, map[string]File{"foo": f(0o644, "foo"), "bar": f(0o644, "bar")}, false},
		{"no update 2", two(), two(), false},
		{"mode only is no update", map[string]File{"foo": f(0o644, "foo")}, map[string]File{"foo": f(0o600, "foo")}, false},
		{"add 1", two(), with(two(), "blu/zip.txt", f(0o644, "zip")), true},
		{"add 2", two(), with(two(), "blu/two/2/3/4/5/zip.txt", f(0o644, "zip")), true},
		{"add 3", two(), with(two(), "bar/2/3/4/5/zip.txt", f(0o644, "zip")), true},
		{"delete 1", two(), with(two(), "bar/zab.txt", nil), true},
		{"delete 2", map[string]File{"foo/bar.txt": f(0o644, "foo"), "bar/1/2/3/zab.txt": f(0o644, "bar")}, map[string]File{"foo/bar.txt": f(0o644, "foo")}, true},
		{"delete 3", map[string]File{"foo/bar.txt": f(0o644, "foo"), "bar/1/2/sip.txt": f(0o644, "sip"), "bar/1/2/3/zab.txt": f(0o644, "bar")},
			map[string]File{"foo/bar.txt": f(0o644, "foo"), "bar/1/2/sip.txt": f(0o644, "sip")}, true},
		{"delete 4", map[string]File{"foo/bar.txt": f(0o644, "foo"), "bar/1/2/sip.txt": f(0o644, "sip"), "bar/1/2/3/4/5/6zab.txt": f(0o644, "bar")},
			map[string]File{"foo/bar.txt": f(0o644, "foo"), "bar/1/2/sip.txt": f(0o644, "sip")}, true},
		{"delete all", map[string]File{"foo/bar.txt": f(0o644, "foo"), "bar/1/2/sip.txt": f(0o644, "sip"), "bar/1/2/3/4/5/6zab.txt": f(0o644, "bar")},
			map[string]File{}, true},
		{"add and delete 1", map[string]File{"foo/bar.txt": f(0o644, "foo")}, map[string]File{"bar/baz.txt": f(0o644, "baz")}, true},
		{"file becomes directory", map[string]File{"foo": f(0o644, "foo")}, map[string]File{"foo/bar": f(0o644, "foo")}, true},
		{"directory becomes file", map[string]File{"foo/bar": f(0o644, "foo")}, map[string]File{"foo": f(0o644, "foo")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, dir := volDir(t)
			mustWrite(t, root, dir, tc.first)
			checkVolumeContents(t, dir, tc.first)
			before := dataTarget(t, dir)
			mustWrite(t, root, dir, tc.next)
			if wrote := dataTarget(t, dir) != before; wrote != tc.shouldWrite {
				t.Errorf("wrote %v, want %v", wrote, tc.shouldWrite)
			}
			if tc.shouldWrite {
				checkVolumeContents(t, dir, tc.next)
			} else {
				checkVolumeContents(t, dir, tc.first)
			}
			entries, _ := os.ReadDir(dir)
			if names := hidden(entryNames(entries)); len(names) != 2 {
				t.Errorf("hidden entries %q, want ..data and one timestamped directory", names)
			}
		})
	}
}

func hidden(names []string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, "..") {
			out = append(out, n)
		}
	}
	return out
}

// Kubelet's TestMultipleUpdates.
func TestMultipleUpdates(t *testing.T) {
	f := func(mode fs.FileMode, s string) File { return File{Mode: mode, Data: []byte(s)} }
	for _, tc := range []struct {
		name     string
		payloads []map[string]File
	}{
		{"update 1", []map[string]File{
			{"foo": f(0o644, "foo"), "bar": f(0o644, "bar")},
			{"foo": f(0o400, "foo2"), "bar": f(0o400, "bar2")},
			{"foo": f(0o600, "foo3"), "bar": f(0o600, "bar3")},
		}},
		{"update 2", []map[string]File{
			{"foo/bar.txt": f(0o644, "foo/bar"), "bar/zab.txt": f(0o644, "bar/zab.txt")},
			{"foo/bar.txt": f(0o644, "foo/bar2"), "bar/zab.txt": f(0o400, "bar/zab.txt2")},
		}},
		{"clear sentinel", []map[string]File{
			{"foo": f(0o644, "foo"), "bar": f(0o644, "bar")},
			{"foo": f(0o644, "foo2"), "bar": f(0o644, "bar2")},
			{"foo": f(0o644, "foo3"), "bar": f(0o644, "bar3")},
			{"foo": f(0o644, "foo4"), "bar": f(0o644, "bar4")},
		}},
		{"subdirectories 2", []map[string]File{
			{"foo/bar.txt": f(0o644, "foo/bar"), "bar/zab.txt": f(0o644, "bar/zab.txt"), "foo/blaz/bar.txt": f(0o644, "foo/blaz/bar"), "bar/zib/zab.txt": f(0o644, "bar/zib/zab.txt")},
			{"foo/bar.txt": f(0o644, "foo/bar2"), "bar/zab.txt": f(0o644, "bar/zab.txt2"), "foo/blaz/bar.txt": f(0o644, "foo/blaz/bar2"), "bar/zib/zab.txt": f(0o644, "bar/zib/zab.txt2")},
		}},
		{"add 1", []map[string]File{
			{"foo/bar.txt": f(0o644, "foo/bar"), "bar//zab.txt": f(0o644, "bar/zab.txt"), "foo/blaz/bar.txt": f(0o644, "foo/blaz/bar"), "bar/zib////zib/zab.txt": f(0o644, "bar/zib/zab.txt")},
			{"foo/bar.txt": f(0o644, "foo/bar2"), "bar/zab.txt": f(0o644, "bar/zab.txt2"), "foo/blaz/bar.txt": f(0o644, "foo/blaz/bar2"), "bar/zib/zab.txt": f(0o644, "bar/zib/zab.txt2"),
				"add/new/keys.txt": f(0o644, "addNewKeys")},
		}},
		{"add 2", []map[string]File{
			{"foo/bar.txt": f(0o644, "foo/bar2"), "bar/zab.txt": f(0o644, "bar/zab.txt2"), "foo/blaz/bar.txt": f(0o644, "foo/blaz/bar2"), "bar/zib/zab.txt": f(0o644, "bar/zib/zab.txt2"),
				"add/new/keys.txt": f(0o644, "addNewKeys")},
			{"foo/bar.txt": f(0o644, "foo/bar2"), "bar/zab.txt": f(0o644, "bar/zab.txt2"), "foo/blaz/bar.txt": f(0o644, "foo/blaz/bar2"), "bar/zib/zab.txt": f(0o644, "bar/zib/zab.txt2"),
				"add/new/keys.txt": f(0o644, "addNewKeys"), "add/new/keys2.txt": f(0o644, "addNewKeys2"), "add/new/keys3.txt": f(0o644, "addNewKeys3")},
		}},
		{"remove 1", []map[string]File{
			{"foo/bar.txt": f(0o644, "foo/bar"), "bar//zab.txt": f(0o644, "bar/zab.txt"), "foo/blaz/bar.txt": f(0o644, "foo/blaz/bar"), "zip/zap/zup/fop.txt": f(0o644, "zip/zap/zup/fop.txt")},
			{"foo/bar.txt": f(0o644, "foo/bar2"), "bar/zab.txt": f(0o644, "bar/zab.txt2")},
			{"foo/bar.txt": f(0o644, "foo/bar")},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, dir := volDir(t)
			for _, p := range tc.payloads {
				mustWrite(t, root, dir, p)
				checkVolumeContents(t, dir, p)
			}
		})
	}
}

// Kubelet's TestCreateUserVisibleFiles: one link per top-level name, into
// ..data.
func TestCreateUserVisibleFiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload map[string]File
		want    map[string]string
	}{
		{"simple path", map[string]File{"foo": {}, "bar": {}}, map[string]string{"foo": "..data/foo", "bar": "..data/bar"}},
		{"simple nested path", map[string]File{"foo/bar/txt": {}, "bar/txt": {}}, map[string]string{"foo": "..data/foo", "bar": "..data/bar"}},
		{"unclean nested path", map[string]File{"./bar": {}, "foo///bar": {}}, map[string]string{"bar": "..data/bar", "foo": "..data/foo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, dir := volDir(t)
			mustWrite(t, root, dir, tc.payload)
			got := map[string]string{}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if !strings.HasPrefix(e.Name(), "..") {
					got[e.Name()], _ = os.Readlink(filepath.Join(dir, e.Name()))
				}
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("links %v, want %v", got, tc.want)
			}
		})
	}
}

// Kubelet's TestSetPerms: the hook runs once per write with the new
// directory in place and not yet visible; its error fails the write and
// the previous payload stays, with no new directory left behind.
func TestSetPerms(t *testing.T) {
	root, dir := volDir(t)
	calls := 0
	p1 := map[string]File{"foo/bar.txt": {Mode: 0o644, Data: []byte("foo")}, "bar/zab.txt": {Mode: 0o644, Data: []byte("bar")}}
	mustWrite(t, root, dir, p1, WithSetPerms(func() error {
		calls++
		entries, _ := os.ReadDir(dir)
		if names := entryNames(entries); len(names) != 1 || !isTimestampDir(names[0]) {
			t.Errorf("entries during setPerms %q, want only the new timestamped directory", names)
		}
		return nil
	}))
	if calls != 1 {
		t.Fatalf("setPerms called %d times", calls)
	}
	p2 := map[string]File{"foo/bar.txt": {Mode: 0o644, Data: []byte("foo2")}}
	err := WriteAtomic(root, dir, p2, WithSetPerms(func() error { return errors.New("error in setPerms") }))
	if err == nil || !strings.Contains(err.Error(), "error in setPerms") {
		t.Fatalf("err = %v", err)
	}
	checkVolumeContents(t, dir, p1)
	entries, _ := os.ReadDir(dir)
	if names := hidden(entryNames(entries)); len(names) != 2 {
		t.Errorf("hidden entries %q after a failed write, want ..data and one timestamped directory", names)
	}
}

func entryNames(entries []os.DirEntry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// Kubelet's TestWriteAgainAfterUnexpectedExit: links lost after ..data
// was swapped are made again by the next write of the same payload.
func TestWriteAgainAfterUnexpectedExit(t *testing.T) {
	root, dir := volDir(t)
	p := map[string]File{"foo": {Mode: 0o644, Data: []byte("foo")}, "bar": {Mode: 0o644, Data: []byte("bar")}}
	mustWrite(t, root, dir, p)
	for name := range p {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, root, dir, p)
	checkVolumeContents(t, dir, p)
}

// Only the previous payload's names are removed: a file the writer did
// not make stays. On old main every name not in the new payload was
// deleted from the volume directory.
func TestWriteAtomicKeepsForeignFiles(t *testing.T) {
	root, dir := volDir(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"foreign", "old"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("..data/gone", filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	p1 := map[string]File{"a": {Data: []byte("1"), Mode: 0o644}, "sub/b": {Data: []byte("2"), Mode: 0o644}}
	mustWrite(t, root, dir, p1)
	// "old" was never the writer's, even though it is gone from the
	// payload now and was never in it.
	p2 := map[string]File{"c": {Data: []byte("3"), Mode: 0o644}}
	mustWrite(t, root, dir, p2)
	checkVolumeContents(t, dir, p2, "foreign", "old", "dangling")
	for _, name := range []string{"foreign", "old"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != "mine" {
			t.Errorf("%s: %q, %v", name, b, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "dangling")); err != nil {
		t.Errorf("dangling link of someone else's removed: %v", err)
	}
	// A payload name taken by a foreign file is refused before anything
	// is written; kubelet leaves the payload's file hidden behind it.
	before := dataTarget(t, dir)
	err := WriteAtomic(root, dir, map[string]File{"foreign": {Data: []byte("x"), Mode: 0o644}})
	if !errors.Is(err, ErrForeignEntry) {
		t.Fatalf("err = %v, want ErrForeignEntry", err)
	}
	if dataTarget(t, dir) != before {
		t.Error("..data swapped by a refused write")
	}
	checkVolumeContents(t, dir, p2, "foreign", "old", "dangling")
}

// snapshot is every path under dir with its type, mode and content, to
// show that nothing changed there.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := info.Mode().String()
		switch {
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			v += " -> " + target
		}
		out[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A volume directory that is a symlink, or has one above it (below the
// root), is refused and nothing is written or removed where it points.
// On old main the payload went through the link and the target's other
// files were deleted. Both ways of resolving (openat2, and the walk with
// O_NOFOLLOW used without it) are run.
func TestWriteAtomicRefusesSymlinks(t *testing.T) {
	for _, walk := range []bool{false, true} {
		for _, tc := range []struct {
			name  string
			setup func(t *testing.T, root, outside string) (dir string)
		}{
			{"volume dir is a symlink", func(t *testing.T, root, outside string) string {
				mkdir(t, filepath.Join(root, "pods", "uid", "volumes", "p"))
				symlink(t, outside, filepath.Join(root, "pods", "uid", "volumes", "p", "vol"))
				return filepath.Join(root, "pods", "uid", "volumes", "p", "vol")
			}},
			{"relative symlink inside the root", func(t *testing.T, root, outside string) string {
				mkdir(t, filepath.Join(root, "pods", "uid", "volumes", "p", "real"))
				symlink(t, "real", filepath.Join(root, "pods", "uid", "volumes", "p", "vol"))
				return filepath.Join(root, "pods", "uid", "volumes", "p", "vol")
			}},
			{"parent is a symlink", func(t *testing.T, root, outside string) string {
				mkdir(t, filepath.Join(root, "pods", "uid"))
				symlink(t, outside, filepath.Join(root, "pods", "uid", "volumes"))
				return filepath.Join(root, "pods", "uid", "volumes", "vol")
			}},
			{"missing dir under a symlinked parent", func(t *testing.T, root, outside string) string {
				mkdir(t, filepath.Join(root, "pods"))
				symlink(t, outside, filepath.Join(root, "pods", "uid"))
				return filepath.Join(root, "pods", "uid", "volumes", "p", "vol")
			}},
			{"parent is a file", func(t *testing.T, root, outside string) string {
				mkdir(t, filepath.Join(root, "pods"))
				if err := os.WriteFile(filepath.Join(root, "pods", "uid"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
				return filepath.Join(root, "pods", "uid", "vol")
			}},
			{"not beneath the root", func(t *testing.T, root, outside string) string {
				return filepath.Join(root, "..", filepath.Base(outside))
			}},
			{"dot-dot in the dir", func(t *testing.T, root, outside string) string {
				return root + "/pods/../../" + filepath.Base(outside)
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if walk {
					noOpenat2.Store(true)
					defer noOpenat2.Store(false)
				}
				base := t.TempDir()
				root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
				mkdir(t, root)
				mkdir(t, outside)
				if err := os.WriteFile(filepath.Join(outside, "precious"), []byte("keep"), 0o600); err != nil {
					t.Fatal(err)
				}
				dir := tc.setup(t, root, outside)
				before := snapshot(t, outside)
				err := WriteAtomic(root, dir, map[string]File{"precious": {Data: []byte("overwritten"), Mode: 0o644}, "new": {Data: []byte("x"), Mode: 0o644}})
				if !errors.Is(err, ErrUnsafeVolumeDir) {
					t.Fatalf("err = %v, want ErrUnsafeVolumeDir", err)
				}
				if after := snapshot(t, outside); !maps.Equal(before, after) {
					t.Fatalf("outside changed:\n%v\n%v", before, after)
				}
				if err := RemoveBeneath(root, dir); !errors.Is(err, ErrUnsafeVolumeDir) && tc.name != "volume dir is a symlink" && tc.name != "relative symlink inside the root" {
					t.Errorf("RemoveBeneath: %v, want ErrUnsafeVolumeDir", err)
				}
				if after := snapshot(t, outside); !maps.Equal(before, after) {
					t.Fatalf("outside changed by RemoveBeneath:\n%v\n%v", before, after)
				}
			})
		}
	}
}

func mkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// Inside the volume directory nothing is written, read or removed through
// a symlink someone else put there.
func TestWriteAtomicInsideSymlinks(t *testing.T) {
	p1 := map[string]File{"a": {Data: []byte("1"), Mode: 0o644}, "sub/b": {Data: []byte("2"), Mode: 0o644}}
	p2 := map[string]File{"a": {Data: []byte("one"), Mode: 0o644}, "sub/b": {Data: []byte("two"), Mode: 0o644}}
	for _, tc := range []struct {
		name    string
		tamper  func(t *testing.T, dir, outside string)
		wantErr error // nil: p2 is written
	}{
		{"a top-level name is a link out", func(t *testing.T, dir, outside string) {
			must(t, os.Remove(filepath.Join(dir, "a")))
			symlink(t, filepath.Join(outside, "precious"), filepath.Join(dir, "a"))
		}, ErrForeignEntry},
		{"..data points out", func(t *testing.T, dir, outside string) {
			must(t, os.Remove(filepath.Join(dir, "..data")))
			symlink(t, outside, filepath.Join(dir, "..data"))
		}, ErrForeignEntry},
		{"..data points to the parent", func(t *testing.T, dir, outside string) {
			must(t, os.Remove(filepath.Join(dir, "..data")))
			symlink(t, "..", filepath.Join(dir, "..data"))
		}, ErrForeignEntry},
		{"..data is a directory", func(t *testing.T, dir, outside string) {
			must(t, os.Remove(filepath.Join(dir, "..data")))
			mkdir(t, filepath.Join(dir, "..data"))
		}, ErrForeignEntry},
		{"..data_tmp is a link out", func(t *testing.T, dir, outside string) {
			symlink(t, outside, filepath.Join(dir, "..data_tmp"))
		}, nil},
		{"the old payload's directory is a link out", func(t *testing.T, dir, outside string) {
			ts := filepath.Join(dir, dataTarget(t, dir), "sub")
			must(t, os.RemoveAll(ts))
			symlink(t, outside, ts)
		}, nil},
		{"the old payload's file is a link out", func(t *testing.T, dir, outside string) {
			f := filepath.Join(dir, dataTarget(t, dir), "a")
			must(t, os.Remove(f))
			symlink(t, filepath.Join(outside, "precious"), f)
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
			dir := filepath.Join(root, "vol")
			mkdir(t, outside)
			must(t, os.WriteFile(filepath.Join(outside, "precious"), []byte("keep"), 0o600))
			mkdir(t, root)
			mustWrite(t, root, dir, p1)
			tc.tamper(t, dir, outside)
			before := snapshot(t, outside)
			err := WriteAtomic(root, dir, p2)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if after := snapshot(t, outside); !maps.Equal(before, after) {
				t.Fatalf("outside changed:\n%v\n%v", before, after)
			}
			if tc.wantErr == nil {
				checkVolumeContents(t, dir, p2)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// RemoveBeneath removes a volume directory and what it holds without
// following the links in it, and removes a link at the volume's place
// rather than what it points to.
func TestRemoveBeneath(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	mkdir(t, outside)
	must(t, os.WriteFile(filepath.Join(outside, "precious"), []byte("keep"), 0o600))
	dir := filepath.Join(root, "pods", "vol")
	mkdir(t, root)
	mustWrite(t, root, dir, map[string]File{"a/b/c": {Data: []byte("1"), Mode: 0o400}})
	symlink(t, outside, filepath.Join(dir, "out"))
	before := snapshot(t, outside)
	if err := RemoveBeneath(root, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("dir left: %v", err)
	}
	symlink(t, outside, dir)
	must(t, RemoveBeneath(root, dir))
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("link left: %v", err)
	}
	if err := RemoveBeneath(root, filepath.Join(root, "pods", "missing")); err != nil {
		t.Errorf("missing: %v", err)
	}
	if err := RemoveBeneath(root, root); !errors.Is(err, ErrUnsafeVolumeDir) {
		t.Errorf("the root itself: %v", err)
	}
	if after := snapshot(t, outside); !maps.Equal(before, after) {
		t.Fatalf("outside changed:\n%v\n%v", before, after)
	}
}
