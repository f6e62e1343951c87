package mounts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteAtomic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	target := func() string {
		t.Helper()
		s, err := os.Readlink(filepath.Join(dir, "..data"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	v1 := map[string]File{"a": {Data: []byte("1"), Mode: 0o644}, "sub/b": {Data: []byte("2"), Mode: 0o600}}
	if err := WriteAtomic(dir, v1); err != nil {
		t.Fatal(err)
	}
	first := target()
	if err := WriteAtomic(dir, v1); err != nil || target() != first {
		t.Fatalf("unchanged payload rewritten: %q then %q (%v)", first, target(), err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "sub", "b")); err != nil || string(b) != "2" {
		t.Errorf("sub/b = %q, %v", b, err)
	}
	if info, err := os.Stat(filepath.Join(dir, "sub", "b")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("sub/b mode %v, %v", info.Mode(), err)
	}
	if err := WriteAtomic(dir, map[string]File{"a": {Data: []byte("changed"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	if target() == first {
		t.Error("..data not swapped")
	}
	if _, err := os.Lstat(filepath.Join(dir, first)); !os.IsNotExist(err) {
		t.Errorf("old payload directory left: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Errorf("stale link sub left: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a")); string(b) != "changed" {
		t.Errorf("a = %q", b)
	}
}

// Kubelet's AtomicWriter path rules (validatePath): refused before
// anything is written.
func TestWriteAtomicRefusesPaths(t *testing.T) {
	for _, p := range []string{"../escape", "a/../../b", "a/../b", "/abs", "..data", strings.Repeat("x", 256), strings.Repeat("a/", 2049)} {
		dir := filepath.Join(t.TempDir(), "vol")
		err := WriteAtomic(dir, map[string]File{"ok": {Data: []byte("1"), Mode: 0o644}, p: {Mode: 0o644}})
		if !errors.Is(err, ErrInvalidPayload) {
			t.Errorf("%.20q: %v", p, err)
		}
		if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
			t.Errorf("%.20q: something was written", p)
		}
	}
	if err := WriteAtomic(filepath.Join(t.TempDir(), "vol"), map[string]File{"..x/ok": {Mode: 0o644}}); !errors.Is(err, ErrInvalidPayload) {
		t.Errorf("..x/ok: %v", err)
	}
}
