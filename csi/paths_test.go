package csi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podstart/podstart/csi"
)

func TestStagingPathIsKubeletsMakeDeviceMountPath(t *testing.T) {
	l := csi.Layout{Root: "/var/lib/kubelet"}
	handle := "projects/p/zones/z/disks/d" // slashes are legal in a handle
	got, err := l.StagingPath("pd.csi.storage.gke.io", handle)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(handle))
	want := "/var/lib/kubelet/plugins/kubernetes.io/csi/pd.csi.storage.gke.io/" + hex.EncodeToString(sum[:]) + "/globalmount"
	if got != want {
		t.Errorf("staging path = %s, want %s", got, want)
	}
}

func TestPublishAndBlockPaths(t *testing.T) {
	l := csi.Layout{Root: "/var/lib/kubelet"}
	got, err := l.PublishPath("0a1b-22", "pvc-123")
	if err != nil {
		t.Fatal(err)
	}
	if want := "/var/lib/kubelet/pods/0a1b-22/volumes/kubernetes.io~csi/pvc-123/mount"; got != want {
		t.Errorf("publish path = %s, want %s", got, want)
	}
	b, err := l.BlockPaths("uid-1", "pv-1")
	if err != nil {
		t.Fatal(err)
	}
	want := csi.BlockPaths{
		Staging:          "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/staging/pv-1",
		Publish:          "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/publish/pv-1/uid-1",
		GlobalMap:        "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/pv-1/dev",
		DataDir:          "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/pv-1/data",
		PodDeviceMapDir:  "/var/lib/kubelet/pods/uid-1/volumeDevices/kubernetes.io~csi",
		PodDeviceMapName: "pv-1",
	}
	if b != want {
		t.Errorf("block paths = %+v\nwant %+v", b, want)
	}
}

func TestHostileNamesRefusedByName(t *testing.T) {
	l := csi.Layout{Root: "/var/lib/kubelet"}
	tests := []struct {
		name  string
		call  func() error
		field string
	}{
		{"driver with slash", func() error { _, err := l.StagingPath("a/b", "h"); return err }, "driver name"},
		{"driver dot-dot", func() error { _, err := l.StagingPath("..", "h"); return err }, "driver name"},
		{"driver empty", func() error { _, err := l.StagingPath("", "h"); return err }, "driver name"},
		{"driver too long", func() error { _, err := l.StagingPath(strings.Repeat("a", 64), "h"); return err }, "driver name"},
		{"handle empty", func() error { _, err := l.StagingPath("d.io", ""); return err }, "volume handle"},
		{"handle NUL", func() error { _, err := l.StagingPath("d.io", "a\x00b"); return err }, "volume handle"},
		{"handle bad UTF-8", func() error { _, err := l.StagingPath("d.io", "\xff"); return err }, "volume handle"},
		{"spec dot-dot", func() error { _, err := l.PublishPath("uid", ".."); return err }, "volume spec name"},
		{"spec traversal", func() error { _, err := l.PublishPath("uid", "../../etc"); return err }, "volume spec name"},
		{"spec slash", func() error { _, err := l.BlockPaths("uid", "a/b"); return err }, "volume spec name"},
		{"uid traversal", func() error { _, err := l.PublishPath("../..", "v"); return err }, "pod UID"},
		{"uid slash", func() error { _, err := l.BlockPaths("a/b", "v"); return err }, "pod UID"},
		{"uid dot", func() error { _, err := l.PublishPath(".", "v"); return err }, "pod UID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if !errors.Is(err, csi.ErrInvalidName) {
				t.Fatalf("err = %v, want ErrInvalidName", err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("error %q does not name %q", err, tt.field)
			}
		})
	}
	if _, err := (csi.Layout{Root: "rel"}).PublishPath("u", "v"); !errors.Is(err, csi.ErrInvalidRequest) {
		t.Errorf("relative root: %v", err)
	}
}

func TestAttachmentAndEphemeralNames(t *testing.T) {
	sum := sha256.Sum256([]byte("vol-1" + "d.io" + "node-a"))
	if got, want := csi.AttachmentName("vol-1", "d.io", "node-a"), "csi-"+hex.EncodeToString(sum[:]); got != want {
		t.Errorf("attachment name = %s, want %s", got, want)
	}
	sum = sha256.Sum256([]byte("uid-1" + "scratch"))
	if got, want := csi.EphemeralVolumeHandle("uid-1", "scratch"), "csi-"+hex.EncodeToString(sum[:]); got != want {
		t.Errorf("ephemeral handle = %s, want %s", got, want)
	}
}

// FuzzPaths: whatever the names, a path is either refused with
// ErrInvalidName or clean and inside its subtree of the root.
func FuzzPaths(f *testing.F) {
	f.Add("d.io", "vol-1", "uid-1", "pv-1")
	f.Fuzz(func(t *testing.T, driver, handle, uid, spec string) {
		l := csi.Layout{Root: "/var/lib/kubelet"}
		check := func(p string, err error, under string) {
			if err != nil {
				if !errors.Is(err, csi.ErrInvalidName) {
					t.Fatalf("error not ErrInvalidName: %v", err)
				}
				return
			}
			if filepath.Clean(p) != p || !strings.HasPrefix(p, under+"/") {
				t.Fatalf("path %q escapes %q", p, under)
			}
		}
		p, err := l.StagingPath(driver, handle)
		check(p, err, "/var/lib/kubelet/plugins/kubernetes.io/csi")
		if err == nil && (filepath.Base(p) != "globalmount" || strings.Count(p, "/") != 9) {
			t.Fatalf("staging path %q has the wrong shape", p)
		}
		p, err = l.PublishPath(uid, spec)
		check(p, err, "/var/lib/kubelet/pods")
		if err == nil && strings.Count(p, "/") != 9 {
			t.Fatalf("publish path %q has the wrong shape", p)
		}
		b, err := l.BlockPaths(uid, spec)
		for _, p := range []string{b.Staging, b.Publish, b.GlobalMap, b.DataDir} {
			check(p, err, "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices")
		}
		if err == nil {
			check(filepath.Join(b.PodDeviceMapDir, b.PodDeviceMapName), nil, "/var/lib/kubelet/pods")
		}
	})
}
