package cgroups

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/criconfig"
)

// hostileUIDs are pod UIDs that are no single path component: before
// they were refused, "x/../../.." made the pod cgroup the cgroup root
// (RemovePod killed every process there) and "x/../../../system.slice"
// wrote the pod's limits into system.slice and removed it.
var hostileUIDs = []types.UID{
	"x/../../..", "x/../../../system.slice", "..", ".", "", "a\x00b", "x/y", "a_b", "/",
}

// snapshot is every file and directory under dir with its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[p] = "<dir>"
			return nil
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// hostileEntryPoints calls every public method of m that takes a pod or
// a name, with the pod and a name built from its UID as PodName did
// before (the UID appended to the tier, unchecked).
func hostileEntryPoints(ctx context.Context, m *Manager, pod *corev1.Pod) map[string]error {
	_, nameErr := m.PodName(pod)
	_, cfgErr := m.PodCgroupConfig(ctx, pod)
	errs := map[string]error{
		"PodName":           nameErr,
		"EnsurePod":         m.EnsurePod(ctx, pod),
		"UpdatePod":         m.UpdatePod(ctx, pod),
		"UpdatePodResource": m.UpdatePodResource(ctx, pod, corev1.ResourceCPU, false),
		"PodCgroupConfig":   cfgErr,
		"RemovePod":         m.RemovePod(ctx, pod),
	}
	// The methods that take a Name, with the name the UID made before
	// (when it is no valid cgroup of its own: "pod" or "poda_b" is one).
	uid := string(pod.UID)
	var raw Name
	switch {
	case strings.Contains(uid, "/.."):
		// As components: "podx", "..", "..", "..".
		raw = append(QOS(m.Root()).BestEffort, strings.Split("pod"+uid, "/")...)
	case uid == "." || uid == "..":
		raw = append(QOS(m.Root()).BestEffort, uid)
	case strings.ContainsAny(uid, "/\x00"):
		raw = append(QOS(m.Root()).BestEffort, "pod"+uid)
	default:
		return errs
	}
	_, rawCfgErr := m.CgroupConfig(ctx, raw)
	_, existsErr := m.Exists(raw)
	_, pidsErr := m.Pids(raw)
	_, usageErr := m.MemoryUsage(ctx, raw)
	_, pathErr := raw.Path(DriverCgroupfs)
	_, sdErr := raw.Systemd()
	maps.Copy(errs, map[string]error{
		"Destroy":         m.Destroy(ctx, raw),
		"ReduceCPULimits": m.ReduceCPULimits(ctx, raw),
		"CgroupConfig":    rawCfgErr,
		"Exists":          existsErr,
		"Pids":            pidsErr,
		"MemoryUsage":     usageErr,
		"Name.Path":       pathErr,
		"Name.Systemd":    sdErr,
	})
	return errs
}

// TestHostileUIDsRefused: on a cgroup v2 tree in a temporary directory
// (an OSFS, the cgroupfs driver), every entry point refuses a hostile
// UID with ErrInvalidName before anything is written, removed or killed.
func TestHostileUIDsRefused(t *testing.T) {
	t.Parallel()
	for _, uid := range hostileUIDs {
		t.Run(string(uid), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			files := map[string]string{
				"cgroup.controllers":                      "cpu cpuset memory pids",
				"cgroup.subtree_control":                  "cpu cpuset memory pids",
				"cgroup.procs":                            "1\n",
				"system.slice/cgroup.procs":               "100\n",
				"system.slice/cpu.weight":                 "100",
				"system.slice/cpu.max":                    "max 100000",
				"system.slice/memory.max":                 "max",
				"system.slice/pids.max":                   "max",
				"kubepods/cgroup.procs":                   "",
				"kubepods/besteffort/cgroup.procs":        "",
				"kubepods/besteffort/cpu.weight":          "1",
				"kubepods/besteffort/podx/cgroup.procs":   "200\n",
				"kubepods/besteffort/podx/cpu.weight":     "1",
				"kubepods/besteffort/pod.../cgroup.procs": "",
			}
			for f, v := range files {
				p := filepath.Join(dir, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var killed []int
			m, err := NewManager(Tree{FS: NewOSFS(dir), V2: true}, criconfig.Node{},
				WithNodeAllocatable(testAllocatable()),
				WithKill(func(pid int) error { killed = append(killed, pid); return nil }))
			if err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, dir)
			pod := podWith(string(uid), rr(nil, nil))
			for name, err := range hostileEntryPoints(context.Background(), m, pod) {
				if !errors.Is(err, ErrInvalidName) {
					t.Errorf("%s(UID %q) = %v, want ErrInvalidName", name, uid, err)
				}
			}
			if len(killed) > 0 {
				t.Errorf("UID %q: killed %v", uid, killed)
			}
			if after := snapshot(t, dir); !maps.Equal(before, after) {
				t.Errorf("UID %q: the cgroup tree changed:\nbefore %v\nafter  %v", uid, before, after)
			}
		})
	}
}

// TestHostileUIDsRefusedSystemd: the same under the systemd driver, on
// cgroup v1 and v2: no unit is started, set or stopped, no file is
// written and nothing is killed.
func TestHostileUIDsRefusedSystemd(t *testing.T) {
	t.Parallel()
	for _, l := range layouts {
		for _, uid := range hostileUIDs {
			t.Run(l.String()+"/"+string(uid), func(t *testing.T) {
				t.Parallel()
				var killed []int
				m, mfs, sd := newSystemdManager(t, l, criconfig.Node{},
					WithKill(func(pid int) error { killed = append(killed, pid); return nil }))
				ctx := context.Background()
				if err := m.EnsureQoS(ctx); err != nil {
					t.Fatal(err)
				}
				if err := mfs.AddProcess(l.dir("memory", "/kubepods.slice"), 1); err != nil {
					t.Fatal(err)
				}
				sd.take()
				before := mfs.Dirs()
				pod := podWith(string(uid), rr(nil, nil))
				for name, err := range hostileEntryPoints(ctx, m, pod) {
					if !errors.Is(err, ErrInvalidName) {
						t.Errorf("%s(UID %q) = %v, want ErrInvalidName", name, uid, err)
					}
				}
				if calls := sd.take(); len(calls) > 0 {
					t.Errorf("UID %q: systemd calls %v", uid, calls)
				}
				if len(killed) > 0 {
					t.Errorf("UID %q: killed %v", uid, killed)
				}
				if after := mfs.Dirs(); len(after) != len(before) {
					t.Errorf("UID %q: cgroups %v, were %v", uid, after, before)
				}
			})
		}
	}
}

// TestNewNameRefusesPathComponents: NewName refuses what kubelet's
// NewCgroupName panics on and what would name another path.
func TestNewNameRefusesPathComponents(t *testing.T) {
	for _, c := range []string{"a/b", "a_b", ".", "..", "a\x00"} {
		if _, err := NewName(Name{"kubepods"}, c); !errors.Is(err, ErrInvalidName) {
			t.Errorf("NewName(%q) = %v, want ErrInvalidName", c, err)
		}
	}
	for _, c := range []string{"pod..", "a.b", "pod-1"} {
		if _, err := NewName(Name{"kubepods"}, c); err != nil {
			t.Errorf("NewName(%q) = %v", c, err)
		}
	}
}
