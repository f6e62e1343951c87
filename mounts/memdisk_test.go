package mounts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// tree is a Disk that a test can lay out and inspect: MemDisk, or the
// host's through osTree.
type tree interface {
	Disk
	MkdirAll(name string, perm fs.FileMode) error
	Symlink(oldname, newname string) error
	Lstat(name string) (fs.FileInfo, error)
}

type osTree struct{ OSDisk }

func (osTree) MkdirAll(name string, perm fs.FileMode) error {
	if err := os.MkdirAll(name, perm); err != nil {
		return err
	}
	return os.Chmod(name, perm) // as MemDisk keeps it, whatever the umask
}
func (osTree) Symlink(oldname, newname string) error  { return os.Symlink(oldname, newname) }
func (osTree) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }

// disks gives the host's disk under a temporary directory and a MemDisk
// under a fixed one: the same table runs against both.
func disks(t *testing.T) []struct {
	name string
	d    tree
	dir  string
} {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mem := &MemDisk{}
	if err := mem.MkdirAll("/etc", 0o755); err != nil {
		t.Fatal(err)
	}
	return []struct {
		name string
		d    tree
		dir  string
	}{{"OSDisk", osTree{}, dir}, {"MemDisk", mem, "/srv/test"}}
}

// layEscapeTree is escapeTree laid out through a tree.
func layEscapeTree(t *testing.T, d tree, dir string, volPerm fs.FileMode) (vol, outside string) {
	t.Helper()
	vol, outside = filepath.Join(dir, "volume"), filepath.Join(dir, "outside")
	if err := d.MkdirAll(vol, volPerm); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{vol + "/inside/deep", outside + "/secret"} {
		if err := d.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.WriteFile(outside+"/secret/key", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"to-root": "/", "to-outside": outside, "to-parent": "..", "to-etc": "/etc",
		"relative-out": "../outside/secret", "chain1": "chain2", "chain2": "../outside",
		"dangling-out": outside + "/does-not-exist", "inside-link": "inside/deep",
		"inside/up-two": "../../outside", "loop1": "loop2", "loop2": "loop1",
	}
	for name, target := range links {
		if err := d.Symlink(target, filepath.Join(vol, name)); err != nil {
			t.Fatal(err)
		}
	}
	return vol, outside
}

func TestDisksRefuseSubPathEscapes(t *testing.T) {
	t.Parallel()
	for _, disk := range disks(t) {
		t.Run(disk.name, func(t *testing.T) {
			vol, outside := layEscapeTree(t, disk.d, disk.dir, 0o755)
			for _, sub := range []string{"to-root", "to-root/etc", "to-outside", "to-outside/secret/key", "to-parent",
				"to-parent/outside", "to-etc", "relative-out", "relative-out/key", "chain1", "chain1/secret",
				"dangling-out", "dangling-out/new-dir", "inside/up-two", "inside/up-two/secret", "to-outside/newdir/created", "loop1"} {
				p, c := pod(corev1.VolumeMount{Name: "v", MountPath: "/d", SubPath: sub})
				got, err := Make(context.Background(), Request{Pod: p, Container: c, Volumes: VolumeMap{"v": {HostPath: vol}}}, WithDisk(disk.d))
				if !errors.Is(err, ErrSubPath) {
					t.Errorf("escape %q: %+v, %v; want ErrSubPath", sub, got, err)
				}
				for _, made := range []string{outside + "/newdir", outside + "/does-not-exist"} {
					if _, err := disk.d.Lstat(made); !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("escape %q made %s (%v)", sub, made, err)
					}
				}
			}
		})
	}
}

func TestDisksSubPathInsideLinksAndCreation(t *testing.T) {
	t.Parallel()
	for _, disk := range disks(t) {
		t.Run(disk.name, func(t *testing.T) {
			vol, _ := layEscapeTree(t, disk.d, disk.dir, 0o775|fs.ModeSetgid)
			for _, tt := range []struct{ sub, want string }{
				{"inside", vol + "/inside"},
				{"inside-link", vol + "/inside/deep"},
				{"inside-link/new/dirs", vol + "/inside/deep/new/dirs"},
				{"fresh/a/b", vol + "/fresh/a/b"},
				{"./inside//deep/", vol + "/inside/deep"},
			} {
				p, c := pod(corev1.VolumeMount{Name: "v", MountPath: "/d", SubPath: tt.sub})
				got, err := Make(context.Background(), Request{Pod: p, Container: c, Volumes: VolumeMap{"v": {HostPath: vol}}}, WithDisk(disk.d))
				if err != nil || got[0].HostPath != tt.want {
					t.Errorf("%q: %+v, %v; want host path %q", tt.sub, got, err, tt.want)
				}
			}
			for _, d := range []string{"fresh", "fresh/a", "fresh/a/b", "inside/deep/new/dirs"} {
				fi, err := disk.d.Lstat(filepath.Join(vol, d))
				if err != nil || fi.Mode() != fs.ModeDir|fs.ModeSetgid|0o775 {
					t.Errorf("%s: %v, %v; want drwxrwsr-x", d, fi, err)
				}
			}
		})
	}
}

// Each method fails as the host's does, the same errors.Is answers.
func TestDisksErrors(t *testing.T) {
	t.Parallel()
	for _, disk := range disks(t) {
		t.Run(disk.name, func(t *testing.T) {
			d, dir := disk.d, disk.dir
			vol, _ := layEscapeTree(t, d, dir, 0o755)
			if err := d.WriteFile(vol+"/file", []byte("f"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, resolveMissingRoot := d.ResolveSubPath(dir+"/none", "a")
			_, resolveMissing := d.ResolveSubPath(vol, "none/a")
			_, resolveLoop := d.ResolveSubPath(vol, "loop1")
			_, readMissing := d.ReadFile(vol + "/none")
			_, readDir := d.ReadFile(vol)
			_, termInFile := d.CreateTerminationFile(vol + "/file/x")
			tests := []struct {
				name string
				err  error
				want error // nil: any error
			}{
				{"MakeSubPathDir, missing root", d.MakeSubPathDir(dir+"/none", "a"), fs.ErrNotExist},
				{"MakeSubPathDir, file in the way", d.MakeSubPathDir(vol, "file/x"), syscall.ENOTDIR},
				{"MakeSubPathDir, dangling link", d.MakeSubPathDir(vol, "dangling-out/x"), ErrSubPathEscape},
				{"ResolveSubPath, missing root", resolveMissingRoot, fs.ErrNotExist},
				{"ResolveSubPath, missing", resolveMissing, fs.ErrNotExist},
				{"ResolveSubPath, loop", resolveLoop, nil},
				{"ReadFile, missing", readMissing, fs.ErrNotExist},
				{"ReadFile, directory", readDir, syscall.EISDIR},
				{"WriteFile, parent is a file", d.WriteFile(vol+"/file/x", nil, 0o644), syscall.ENOTDIR},
				{"WriteFile, a directory", d.WriteFile(vol+"/inside", nil, 0o644), syscall.EISDIR},
				{"CreateTerminationFile, parent is a file", termInFile, syscall.ENOTDIR},
				{"Symlink, exists", d.Symlink("x", vol+"/file"), fs.ErrExist},
				{"Symlink, missing parent", d.Symlink("x", vol+"/none/l"), fs.ErrNotExist},
			}
			for _, tt := range tests {
				if tt.err == nil || tt.want != nil && !errors.Is(tt.err, tt.want) {
					t.Errorf("%s: %v, want %v", tt.name, tt.err, tt.want)
				}
			}
		})
	}
}

func TestDisksFiles(t *testing.T) {
	t.Parallel()
	hex8 := regexp.MustCompile(`^[0-9a-f]{8}$`)
	for _, disk := range disks(t) {
		t.Run(disk.name, func(t *testing.T) {
			d, dir := disk.d, disk.dir
			name := dir + "/pod/etc-hosts"
			for _, content := range []string{"first\n", "second, longer\n"} {
				if err := d.WriteFile(name, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
				got, err := d.ReadFile(name)
				if err != nil || string(got) != content {
					t.Fatalf("ReadFile = %q, %v; want %q", got, err, content)
				}
			}
			if err := d.Symlink(name, dir+"/link"); err != nil {
				t.Fatal(err)
			}
			if got, err := d.ReadFile(dir + "/link"); err != nil || string(got) != "second, longer\n" {
				t.Errorf("ReadFile through a link = %q, %v", got, err)
			}
			for p, want := range map[string]fs.FileMode{dir + "/pod": fs.ModeDir | 0o750, name: 0o644, dir + "/link": fs.ModeSymlink} {
				fi, err := d.Lstat(p)
				if err != nil || fi.Mode()&^0o777 != want&^0o777 || want&fs.ModeSymlink == 0 && fi.Mode() != want {
					t.Errorf("Lstat(%s) = %v, %v; want mode %v", p, fi, err, want)
				}
			}
			seen := map[string]bool{}
			for range 3 {
				f, err := d.CreateTerminationFile(dir + "/pod/containers/app")
				if err != nil {
					t.Fatal(err)
				}
				if filepath.Dir(f) != dir+"/pod/containers/app" || !hex8.MatchString(filepath.Base(f)) || seen[f] {
					t.Errorf("termination file %q", f)
				}
				seen[f] = true
				fi, err := d.Lstat(f)
				if err != nil || fi.Mode() != 0o666 || fi.Size() != 0 {
					t.Errorf("termination file %s: %v, %v; want an empty -rw-rw-rw-", f, fi, err)
				}
			}
		})
	}
}

// Make gives the same mounts on both disks: a subPath, the hosts file and
// the termination log (whose name is random).
func TestMakeSameOnDisks(t *testing.T) {
	t.Parallel()
	var got [][]Mount
	var hosts []string
	for _, disk := range disks(t) {
		vol := disk.dir + "/vol"
		if err := disk.d.MkdirAll(vol, 0o755); err != nil {
			t.Fatal(err)
		}
		p, c := pod(corev1.VolumeMount{Name: "v", MountPath: "/data", SubPath: "a/b"})
		c.TerminationMessagePath = "/dev/termination-log"
		podDir := disk.dir + "/pods/uid1"
		ms, err := Make(context.Background(), Request{Pod: p, Container: c, Volumes: VolumeMap{"v": {HostPath: vol}},
			PodDir: podDir, PodIPs: []string{"10.0.0.7"}}, WithDisk(disk.d))
		if err != nil || len(ms) != 3 {
			t.Fatalf("%s: %+v, %v", disk.name, ms, err)
		}
		content, err := disk.d.ReadFile(ms[1].HostPath)
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, string(content))
		for i := range ms {
			rel, _ := filepath.Rel(disk.dir, ms[i].HostPath)
			if i == 2 {
				rel = filepath.Dir(rel)
			}
			ms[i].HostPath = rel
		}
		got = append(got, ms)
	}
	if fmt.Sprint(got[0]) != fmt.Sprint(got[1]) || hosts[0] != hosts[1] {
		t.Errorf("OSDisk %+v\nMemDisk %+v\nhosts %q\n%q", got[0], got[1], hosts[0], hosts[1])
	}
}

func TestMemDiskConcurrent(t *testing.T) {
	t.Parallel()
	var d MemDisk
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := fmt.Sprintf("/vol/%d", i%2)
			for j := range 20 {
				if err := d.MakeSubPathDir("/", fmt.Sprintf("vol/%d/s%d", i%2, j)); err != nil {
					t.Error(err)
				}
				if _, err := d.ResolveSubPath(dir, fmt.Sprintf("s%d", j)); err != nil {
					t.Error(err)
				}
				if err := d.WriteFile(dir+"/hosts", []byte("x"), 0o644); err != nil {
					t.Error(err)
				}
				if _, err := d.CreateTerminationFile(dir + "/term"); err != nil {
					t.Error(err)
				}
				if _, err := d.ReadFile(dir + "/hosts"); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}
