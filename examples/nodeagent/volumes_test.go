package main

import (
	"os"
	"path/filepath"
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
	v1 := map[string]file{"a": {[]byte("1"), 0o644}, "sub/b": {[]byte("2"), 0o600}}
	if err := writeAtomic(dir, v1); err != nil {
		t.Fatal(err)
	}
	first := target()
	if err := writeAtomic(dir, v1); err != nil || target() != first {
		t.Fatalf("unchanged payload rewritten: %q then %q (%v)", first, target(), err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "sub", "b")); err != nil || string(b) != "2" {
		t.Errorf("sub/b = %q, %v", b, err)
	}
	if err := writeAtomic(dir, map[string]file{"a": {[]byte("changed"), 0o644}}); err != nil {
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
	if err := writeAtomic(dir, map[string]file{"../escape": {nil, 0o644}}); err == nil {
		t.Error("a path out of the volume was written")
	}
}
