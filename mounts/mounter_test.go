package mounts_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/podstart/podstart/mounts"
	fakemount "github.com/podstart/podstart/mounts/fake"
)

// mountinfo lines as the kernel writes them (proc(5)): optional fields,
// escaped spaces and backslashes, the type after the "-".
const mountInfo = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
43 22 0:39 / /var/lib/kubelet/pods/u/volumes/kubernetes.io~secret/tok rw,relatime - tmpfs tmpfs rw,size=1024k,noswap
44 22 0:40 / /srv/with\040space rw master:3 - nfs4 host:/x rw
45 22 0:41 / /srv/back\134slash rw - fuse.sshfs u@h:/ rw
46 44 0:42 / /srv/with\040space/in rw shared:2 propagate_from:1 - tmpfs tmpfs rw
short line
`

func TestParseMountInfo(t *testing.T) {
	got, err := mounts.ParseMountInfo(strings.NewReader(mountInfo))
	if err != nil {
		t.Fatal(err)
	}
	want := []mounts.MountPoint{
		{Path: "/", FSType: "ext4"},
		{Path: "/var/lib/kubelet/pods/u/volumes/kubernetes.io~secret/tok", FSType: "tmpfs"},
		{Path: "/srv/with space", FSType: "nfs4"},
		{Path: `/srv/back\slash`, FSType: "fuse.sshfs"},
		{Path: "/srv/with space/in", FSType: "tmpfs"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

// Under gives the order to unmount in: deepest first, stacked mounts
// newest first, nothing outside the directory (a sibling sharing its
// prefix included).
func TestUnder(t *testing.T) {
	table := []mounts.MountPoint{
		{Path: "/", FSType: "ext4"},
		{Path: "/p/a", FSType: "tmpfs"},
		{Path: "/p/a/b/c", FSType: "ext4"},
		{Path: "/p/a", FSType: "nfs"},
		{Path: "/pp", FSType: "tmpfs"},
		{Path: "/p", FSType: "xfs"},
	}
	got := mounts.Under(table, "/p/")
	want := []mounts.MountPoint{{Path: "/p/a/b/c", FSType: "ext4"}, {Path: "/p/a", FSType: "nfs"}, {Path: "/p/a", FSType: "tmpfs"}, {Path: "/p", FSType: "xfs"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

// kubelet's TestTmpfsMountOptions: size=<bytes> only with a positive
// limit, noswap only where supported, in that order.
func TestTmpfsOptions(t *testing.T) {
	tests := []struct {
		size   int64
		noswap bool
		want   []string
	}{
		{0, false, nil},
		{0, true, []string{"noswap"}},
		{123 << 10, false, []string{"size=125952"}},
		{123 << 10, true, []string{"size=125952", "noswap"}},
		{-1, true, []string{"noswap"}},
	}
	for _, tt := range tests {
		if got := mounts.TmpfsOptions(tt.size, tt.noswap); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("TmpfsOptions(%d, %v) = %v, want %v", tt.size, tt.noswap, got, tt.want)
		}
	}
}

// The host's mounter, for real. CI runs as root: a tmpfs of the asked
// size, with noswap on this kernel when it has it, seen by MountPoint and
// List, gone after Unmount. Without root the mount must fail with
// ErrMountNotPermitted.
func TestHostMounter(t *testing.T) {
	var m mounts.HostMounter
	dir := t.TempDir()
	err := m.MountTmpfs(dir, 1<<20)
	if os.Geteuid() != 0 {
		if !errors.Is(err, mounts.ErrMountNotPermitted) || !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("unprivileged mount: %v, want ErrMountNotPermitted", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Unmount(dir) })
	fsType, isMnt, err := m.MountPoint(dir)
	if err != nil || !isMnt || fsType != "tmpfs" {
		t.Fatalf("MountPoint = %q, %v, %v; want tmpfs", fsType, isMnt, err)
	}
	if _, isMnt, err := m.MountPoint(filepath.Dir(dir)); err != nil || isMnt {
		t.Fatalf("parent is a mount point: %v, %v", isMnt, err)
	}
	if _, isMnt, err := m.MountPoint(filepath.Join(dir, "missing")); err != nil || isMnt {
		t.Fatalf("missing dir: %v, %v", isMnt, err)
	}
	table, err := m.List()
	if err != nil {
		t.Fatal(err)
	}
	if got := mounts.Under(table, dir); len(got) != 1 || got[0].FSType != "tmpfs" {
		t.Fatalf("List under %s: %v", dir, got)
	}
	opts := superOptions(t, dir)
	if !strings.Contains(","+opts+",", ",size=1024k,") {
		t.Fatalf("options %q, want size=1024k", opts)
	}
	if kernelAtLeast(t, 6, 4) && !strings.Contains(","+opts+",", ",noswap,") {
		t.Fatalf("options %q, want noswap on this kernel", opts)
	}
	if err := m.Unmount(dir); err != nil {
		t.Fatal(err)
	}
	if _, isMnt, err := m.MountPoint(dir); err != nil || isMnt {
		t.Fatalf("after Unmount: %v, %v", isMnt, err)
	}
	if err := m.Unmount(dir); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("second Unmount: %v, want EINVAL", err)
	}
}

// superOptions reads the super block options of the mount at dir.
func superOptions(t *testing.T, dir string) string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[4] == dir {
			return f[len(f)-1]
		}
	}
	t.Fatalf("%s not in mountinfo", dir)
	return ""
}

func kernelAtLeast(t *testing.T, major, minor int) bool {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	var ma, mi int
	fmt.Sscanf(b.String(), "%d.%d", &ma, &mi)
	return ma > major || ma == major && mi >= minor
}

// The fake keeps a consistent table: stacked mounts, unmounts newest
// first, scripted failures, and the unprivileged error the host gives.
func TestFakeMounter(t *testing.T) {
	m := fakemount.New()
	m.Add(mounts.MountPoint{Path: "/a", FSType: "ext4"})
	if err := m.MountTmpfs("/a", 5); err != nil {
		t.Fatal(err)
	}
	if fsType, ok, _ := m.MountPoint("/a/"); !ok || fsType != "tmpfs" {
		t.Fatalf("MountPoint = %q %v", fsType, ok)
	}
	if err := m.Unmount("/a"); err != nil {
		t.Fatal(err)
	}
	if fsType, ok, _ := m.MountPoint("/a"); !ok || fsType != "ext4" {
		t.Fatalf("after one Unmount: %q %v, want the ext4 below", fsType, ok)
	}
	busy := errors.New("busy")
	m.FailUnmount("/a", busy)
	if err := m.Unmount("/a"); !errors.Is(err, busy) {
		t.Fatalf("Unmount: %v", err)
	}
	m.FailUnmount("/a", nil)
	if err := m.Unmount("/a"); err != nil {
		t.Fatal(err)
	}
	if err := m.Unmount("/a"); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("Unmount of nothing: %v", err)
	}
	if mounted, unmounted := m.Counts(); mounted != 1 || unmounted != 2 {
		t.Fatalf("counts %d, %d", mounted, unmounted)
	}
	if err := m.Unprivileged().MountTmpfs("/b", 0); !errors.Is(err, mounts.ErrMountNotPermitted) || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("unprivileged: %v", err)
	}
}
