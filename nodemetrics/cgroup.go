package nodemetrics

import (
	"os"
	"path"
	"path/filepath"
	"strings"
)

// cgroupFinder finds pods' and containers' cgroups as cAdvisor names them
// (the id label: the cgroup's path from the hierarchy's root), in the
// cgroup v2 hierarchy or, on cgroup v1, the cpu one.
type cgroupFinder struct {
	dir  string // the hierarchy's mount point; "" when none
	root string // kubelet's --cgroup-root, as a path from dir
}

func newCgroupFinder(mount, root string) cgroupFinder {
	if mount == "" {
		return cgroupFinder{}
	}
	dir := mount
	if !exists(filepath.Join(mount, "cgroup.controllers")) {
		dir = ""
		for _, h := range []string{"cpu,cpuacct", "cpu", "memory"} {
			if exists(filepath.Join(mount, h)) {
				dir = filepath.Join(mount, h)
				break
			}
		}
	}
	return cgroupFinder{dir: dir, root: path.Join("/", root)}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// pod is the pod's cgroup path (cgroupfs: <root>/kubepods[/qos]/pod<uid>;
// systemd: kubepods.slice/kubepods[-qos].slice/kubepods[-qos]-pod<uid_>.slice).
func (f cgroupFinder) pod(uid string) (string, bool) {
	if f.dir == "" || uid == "" {
		return "", false
	}
	escaped := strings.ReplaceAll(uid, "-", "_")
	for _, p := range []string{
		path.Join(f.root, "kubepods", "pod"+uid),
		path.Join(f.root, "kubepods", "burstable", "pod"+uid),
		path.Join(f.root, "kubepods", "besteffort", "pod"+uid),
		"/kubepods.slice/kubepods-pod" + escaped + ".slice",
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + escaped + ".slice",
		"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + escaped + ".slice",
	} {
		if exists(filepath.Join(f.dir, filepath.FromSlash(p))) {
			return p, true
		}
	}
	return "", false
}

// children are the pod cgroup's children by the container ID their name
// carries (<id>, or <prefix>-<id>.scope under systemd).
func (f cgroupFinder) children(pod string) map[string]string {
	entries, err := os.ReadDir(filepath.Join(f.dir, filepath.FromSlash(pod)))
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		id := e.Name()
		if s, ok := strings.CutSuffix(id, ".scope"); ok {
			id = s[strings.LastIndexByte(s, '-')+1:]
		}
		out[id] = path.Join(pod, e.Name())
	}
	return out
}
