package mounts

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func owner(t *testing.T, p string) (uid, gid int, mode fs.FileMode) {
	t.Helper()
	info, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := info.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid), info.Mode()
}

// someGroup is a group the test may give files: any as root, its own
// otherwise.
func someGroup() int64 {
	if os.Geteuid() == 0 {
		return 4321
	}
	return int64(os.Getegid())
}

// kubelet's SetVolumeOwnership masks: 0660 on a read-write volume, 0440
// on a read-only one, directories also 0110 and setgid; links get the
// group but keep their mode (a chmod would reach the target).
func TestSetVolumeOwnership(t *testing.T) {
	for _, tt := range []struct {
		name              string
		readOnly          bool
		wantFile, wantDir fs.FileMode
	}{
		{"read-write", false, 0o660 | 0o600, fs.ModeDir | fs.ModeSetgid | 0o770 | 0o700},
		{"read-only", true, 0o440 | 0o600, fs.ModeDir | fs.ModeSetgid | 0o550 | 0o700},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(dir, "f"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("f", filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
			gid := someGroup()
			if err := SetVolumeOwnership(dir, gid, tt.readOnly); err != nil {
				t.Fatal(err)
			}
			if _, g, m := owner(t, filepath.Join(dir, "f")); g != int(gid) || m != tt.wantFile {
				t.Errorf("file: gid %d mode %v, want %d %v", g, m, gid, tt.wantFile)
			}
			if _, g, m := owner(t, dir); g != int(gid) || m != tt.wantDir {
				t.Errorf("dir: gid %d mode %v, want %d %v", g, m, gid, tt.wantDir)
			}
			if _, g, m := owner(t, filepath.Join(dir, "link")); g != int(gid) || m&fs.ModeSymlink == 0 {
				t.Errorf("link: gid %d mode %v", g, m)
			}
		})
	}
}

// A File's FsUser owns the file and its top-level link (kubelet's
// FileProjection.FsUser); WithSetPerms runs before the payload becomes
// visible and only when it is written; a mode change alone does not
// rewrite (kubelet compares contents).
func TestWriteAtomicOwnerAndSetPerms(t *testing.T) {
	uid := int64(os.Geteuid())
	if uid == 0 {
		uid = 1234
	}
	root := t.TempDir()
	dir := filepath.Join(root, "vol")
	calls := 0
	setPerms := WithSetPerms(func() error {
		calls++
		if _, err := os.Lstat(filepath.Join(dir, "token")); !os.IsNotExist(err) {
			t.Errorf("setPerms ran after the payload became visible: %v", err)
		}
		return nil
	})
	files := map[string]File{"token": {Data: []byte("t"), Mode: 0o600, FsUser: &uid}, "ca.crt": {Data: []byte("c"), Mode: 0o644}}
	if err := WriteAtomic(root, dir, files, setPerms); err != nil {
		t.Fatal(err)
	}
	if u, _, _ := owner(t, filepath.Join(dir, "..data", "token")); u != int(uid) {
		t.Errorf("token owner %d, want %d", u, uid)
	}
	if u, _, _ := owner(t, filepath.Join(dir, "token")); u != int(uid) {
		t.Errorf("token link owner %d, want %d", u, uid)
	}
	if u, _, _ := owner(t, filepath.Join(dir, "..data", "ca.crt")); u != os.Geteuid() {
		t.Errorf("ca.crt owner %d, want ours", u)
	}
	files["ca.crt"] = File{Data: []byte("c"), Mode: 0o600}
	if err := WriteAtomic(root, dir, files, setPerms); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("setPerms ran %d times, want once (the second payload has the same contents)", calls)
	}
}

// MakeVolumeDir leaves a 0777 directory whatever the umask and whatever
// mode an earlier directory had, and refuses a file in its place, a
// directory outside its root and a symlink on the way to it (the
// directory it points at is neither made nor chmod-ed).
func TestMakeVolumeDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "volumes", "kubernetes.io~empty-dir", "scratch")
	if err := MakeVolumeDir(root, dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := MakeVolumeDir(root, dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o777 {
		t.Fatalf("mode %v, %v; want 0777", fi.Mode(), err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := MakeVolumeDir(root, file); err == nil {
		t.Fatal("a file in the volume's place was accepted")
	}
	outside := t.TempDir()
	if err := os.Chmod(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := MakeVolumeDir(root, filepath.Join(outside, "x")); !errors.Is(err, ErrUnsafeVolumeDir) {
		t.Fatalf("a directory outside the root: %v, want ErrUnsafeVolumeDir", err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "pods")); err != nil {
		t.Fatal(err)
	}
	if err := MakeVolumeDir(root, filepath.Join(root, "pods", "uid", "volumes", "v")); !errors.Is(err, ErrUnsafeVolumeDir) {
		t.Fatalf("through a symlink: %v, want ErrUnsafeVolumeDir", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("made %v outside the root", entries)
	}
	if fi, err := os.Stat(outside); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("outside directory's mode %v, %v; want 0700 untouched", fi.Mode(), err)
	}
}

// MakeVolumeDir makes a missing root (an agent's first start), and takes
// an empty root as the working directory, as paths relative to it are.
func TestMakeVolumeDirNewRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "var", "lib", "podstart")
	dir := filepath.Join(root, "pods", "uid", "volumes", "kubernetes.io~empty-dir", "v")
	if err := MakeVolumeDir(root, dir); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	if err := MakeVolumeDir("", filepath.Join("pods", "uid", "v")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join("pods", "uid", "v")); err != nil || fi.Mode().Perm() != 0o777 {
		t.Fatalf("relative volume: %v, %v", fi, err)
	}
}
