package mounts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// escapeTree builds <dir>/volume (the volume root) next to <dir>/outside
// (must never be reached), with links of every kind inside the volume.
func escapeTree(t *testing.T) (vol, outside string) {
	t.Helper()
	dir := t.TempDir()
	vol, outside = filepath.Join(dir, "volume"), filepath.Join(dir, "outside")
	for _, d := range []string{vol + "/inside/deep", outside + "/secret"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(outside+"/secret/key", []byte("x"), 0o600)
	links := map[string]string{
		"to-root":       "/",
		"to-outside":    outside,
		"to-parent":     "..",
		"to-etc":        "/etc",
		"relative-out":  "../outside/secret",
		"chain1":        "chain2",
		"chain2":        "../outside",
		"dangling-out":  outside + "/does-not-exist",
		"inside-link":   "inside/deep",
		"inside/up-two": "../../outside",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(vol, name)); err != nil {
			t.Fatal(err)
		}
	}
	return vol, outside
}

func TestSubPathEscapesFail(t *testing.T) {
	t.Parallel()
	vol, outside := escapeTree(t)
	attempts := []string{
		"to-root",
		"to-root/etc",
		"to-outside",
		"to-outside/secret/key",
		"to-parent",
		"to-parent/outside",
		"to-etc",
		"relative-out",
		"relative-out/key",
		"chain1",
		"chain1/secret",
		"dangling-out",
		"dangling-out/new-dir",
		"inside/up-two",
		"inside/up-two/secret",
		"to-outside/newdir/created",
	}
	for _, sub := range attempts {
		t.Run(sub, func(t *testing.T) {
			p, c := pod(corev1.VolumeMount{Name: "v", MountPath: "/d", SubPath: sub})
			got, err := Make(context.Background(), Request{Pod: p, Container: c, Volumes: VolumeMap{"v": {HostPath: vol}}})
			if err == nil {
				t.Fatalf("escape %q succeeded: %+v", sub, got)
			}
			if !errors.Is(err, ErrSubPath) {
				t.Fatalf("escape %q: %v is not ErrSubPath", sub, err)
			}
			// Nothing was created outside the volume.
			entries, _ := os.ReadDir(outside)
			if len(entries) != 1 || entries[0].Name() != "secret" {
				t.Fatalf("escape %q created %v outside the volume", sub, entries)
			}
		})
	}
}

func TestSubPathInsideLinksAndCreation(t *testing.T) {
	t.Parallel()
	vol, _ := escapeTree(t)
	if err := os.Chmod(vol, 0o775|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ sub, want string }{
		{"inside", vol + "/inside"},
		{"inside-link", vol + "/inside/deep"},
		{"inside-link/new/dirs", vol + "/inside/deep/new/dirs"},
		{"fresh/a/b", vol + "/fresh/a/b"},
		{"./inside//deep/", vol + "/inside/deep"},
	}
	for _, tt := range tests {
		p, c := pod(corev1.VolumeMount{Name: "v", MountPath: "/d", SubPath: tt.sub})
		got, err := Make(context.Background(), Request{Pod: p, Container: c, Volumes: VolumeMap{"v": {HostPath: vol}}})
		if err != nil {
			t.Fatalf("%q: %v", tt.sub, err)
		}
		want, _ := filepath.EvalSymlinks(tt.want)
		if got[0].HostPath != want {
			t.Fatalf("%q: host path %q, want %q", tt.sub, got[0].HostPath, want)
		}
	}
	// Created directories carry the volume root's bits, setgid included,
	// whatever the umask.
	for _, d := range []string{"fresh", "fresh/a", "fresh/a/b"} {
		fi, err := os.Stat(filepath.Join(vol, d))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o775 || fi.Mode()&os.ModeSetgid == 0 {
			t.Errorf("%s mode %v, want drwxrwsr-x", d, fi.Mode())
		}
	}
	// A subPath naming an existing file is fine (file mounts).
	os.WriteFile(filepath.Join(vol, "inside", "f"), nil, 0o644)
	if _, err := (OSDisk{}).ResolveSubPath(vol, "inside/f"); err != nil {
		t.Fatal(err)
	}
}

// TestSubPathSwappedForSymlink replaces a checked directory with a symlink
// to outside the volume between the check and the open.
func TestSubPathSwappedForSymlink(t *testing.T) {
	t.Parallel()
	for _, link := range []string{"outside", "/inside", "../../../outside/secret", "/"} {
		vol, outside := escapeTree(t)
		if link == "outside" {
			link = outside + "/secret"
		}
		target := filepath.Join(vol, "inside", "deep")
		disk := OSDisk{betweenCheckAndOpen: func() {
			if err := os.Rename(target, target+".moved"); err != nil {
				t.Error(err)
			}
			if err := os.Symlink(link, target); err != nil {
				t.Error(err)
			}
		}}
		got, err := disk.ResolveSubPath(vol, "inside/deep")
		if !errors.Is(err, ErrSubPathEscape) || got != "" {
			t.Fatalf("swap to %q not detected: %q, %v", link, got, err)
		}
		if strings.HasPrefix(got, outside) {
			t.Fatalf("resolved outside: %q", got)
		}
	}
}

func TestOSDiskFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var d OSDisk
	name := filepath.Join(dir, "pod", "etc-hosts")
	if err := d.WriteFile(name, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(name); fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", fi.Mode())
	}
	a, err := d.CreateTerminationFile(filepath.Join(dir, "pod", "containers", "app"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := d.CreateTerminationFile(filepath.Join(dir, "pod", "containers", "app"))
	if a == b || len(filepath.Base(a)) != 8 {
		t.Fatalf("termination files %q %q", a, b)
	}
	if fi, _ := os.Stat(a); fi.Mode().Perm() != 0o666 {
		t.Fatalf("mode %v", fi.Mode())
	}
}

func TestWriteFileRestoresChangedHostsFile(t *testing.T) {
	t.Parallel()
	name := filepath.Join(t.TempDir(), "etc-hosts")
	var d OSDisk
	for _, tamper := range []func(){
		func() {},
		func() { os.WriteFile(name, []byte("evil\n"), 0o644) },
		func() { os.Chmod(name, 0o666) },
	} {
		if err := d.WriteFile(name, []byte("managed\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		tamper()
		if err := d.WriteFile(name, []byte("managed\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(name)
		fi, _ := os.Stat(name)
		if string(got) != "managed\n" || fi.Mode().Perm() != 0o644 {
			t.Fatalf("file %q mode %v", got, fi.Mode())
		}
	}
}

// TestWriteFileRestoresHostileHostsFile: the hosts file is mounted into
// containers, which may grow it, empty it or make it a FIFO-sized lie; the
// next write restores exactly what it should hold, reading at most that
// many bytes of what is there (holds), and leaves a matching file alone.
func TestWriteFileRestoresHostileHostsFile(t *testing.T) {
	data := []byte("127.0.0.1\tlocalhost\n")
	for _, tc := range []struct {
		name  string
		setup func(p string) error
	}{
		{"grown to 64 MiB", func(p string) error {
			if err := os.WriteFile(p, data, 0o644); err != nil {
				return err
			}
			return os.Truncate(p, 64<<20)
		}},
		{"emptied", func(p string) error { return os.WriteFile(p, nil, 0o644) }},
		{"same size, other bytes", func(p string) error { return os.WriteFile(p, []byte(strings.Repeat("x", len(data))), 0o644) }},
		{"other mode", func(p string) error { return os.WriteFile(p, data, 0o600) }},
		{"missing", func(string) error { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "etc-hosts")
			if err := tc.setup(p); err != nil {
				t.Fatal(err)
			}
			if err := (OSDisk{}).WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(p)
			fi, serr := os.Stat(p)
			if err != nil || serr != nil || string(got) != string(data) || fi.Mode().Perm() != 0o644 {
				t.Fatalf("file %q %v (%v, %v), want %q 0644", got, fi.Mode(), err, serr, data)
			}
			if !holds(p, data, 0o644) || holds(p, data, 0o600) || holds(p, append(data, 'x'), 0o644) {
				t.Fatal("holds does not tell the restored file from others")
			}
		})
	}
}

// A hosts file WriteFile wrote or found whole is known unchanged from its
// inode, size, mode and times; a container that rewrote it in place with
// as many bytes, chmod-ed it or replaced it still gets it restored.
func TestWriteFileNoticesChangesSinceItsLastWrite(t *testing.T) {
	data := []byte("127.0.0.1\tlocalhost\n")
	past := time.Unix(1_000_000_000, 0)
	for _, tc := range []struct {
		name   string
		change func(p string) error
	}{
		{"same size, other bytes, in place", func(p string) error {
			if err := os.WriteFile(p, []byte(strings.Repeat("x", len(data))), 0o644); err != nil {
				return err
			}
			// Whatever the file system's timestamp granularity, the
			// change shows in the modification time.
			return os.Chtimes(p, past, past)
		}},
		{"chmod", func(p string) error { return os.Chmod(p, 0o600) }},
		{"replaced", func(p string) error {
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.WriteFile(p, data[:3], 0o644)
		}},
		{"removed", os.Remove},
		{"unchanged", func(string) error { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "etc-hosts")
			for i := 0; i < 2; i++ { // written, then found whole
				if err := (OSDisk{}).WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := tc.change(p); err != nil {
				t.Fatal(err)
			}
			if err := (OSDisk{}).WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if !holds(p, data, 0o644) {
				got, _ := os.ReadFile(p)
				t.Fatalf("after %s: file holds %q, want %q 0644", tc.name, got, data)
			}
		})
	}
}
