package cgroups

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/podstart/podstart/criconfig"
)

// MemFS is an FS in memory that behaves as the kernel's cgroup file
// systems do as far as the Manager can tell, for tests: a new cgroup has
// the files of its controllers with the kernel's defaults (on cgroup v2,
// those its parent enables in cgroup.subtree_control), a write to a file
// that does not exist fails, a cgroup with children or processes cannot
// be removed, and processes can be attached and killed.
type MemFS struct {
	mu    sync.Mutex
	v2    bool
	sizes []int64
	dirs  map[string]*memDir
	// writes counts successful writes, per file.
	writes map[string]int
}

type memDir struct {
	files map[string]string
	pids  []int
}

// DefaultV1Hierarchies are the cgroup v1 hierarchies NewMemFS makes.
var DefaultV1Hierarchies = []string{"blkio", "cpu", "cpuacct", "cpuset", "devices", "freezer", "hugetlb", "memory", "pids", "systemd"}

// v2Controllers are the root's cgroup.controllers in a v2 MemFS.
const v2Controllers = "cpuset cpu io memory hugetlb pids"

// NewMemFS returns an empty cgroup mount: cgroup v2 when v2, else the
// DefaultV1Hierarchies; hugePageSizes are the node's huge page sizes in
// bytes (the hugetlb files of each cgroup). The root cgroup has two CPUs
// (cpuset "0-1") and one memory node.
func NewMemFS(v2 bool, hugePageSizes ...int64) *MemFS {
	m := &MemFS{v2: v2, sizes: hugePageSizes, dirs: map[string]*memDir{}, writes: map[string]int{}}
	if v2 {
		m.dirs[""] = &memDir{files: map[string]string{
			"cgroup.procs": "", "cgroup.controllers": v2Controllers, "cgroup.subtree_control": "",
			"cpuset.cpus.effective": "0-1", "cpuset.mems.effective": "0",
		}}
		return m
	}
	m.dirs[""] = &memDir{files: map[string]string{}}
	for _, h := range DefaultV1Hierarchies {
		d := &memDir{files: m.v1Files(h)}
		if h == "cpuset" {
			d.files["cpuset.cpus"], d.files["cpuset.mems"] = "0-1", "0"
		}
		m.dirs[h] = d
	}
	return m
}

// Tree returns the Tree of this FS.
func (m *MemFS) Tree() Tree {
	if m.v2 {
		return Tree{FS: m, V2: true}
	}
	return Tree{FS: m, Hierarchies: slices.Clone(DefaultV1Hierarchies)}
}

func (m *MemFS) v1Files(hierarchy string) map[string]string {
	f := map[string]string{"cgroup.procs": "", "tasks": "", "notify_on_release": "0"}
	for _, c := range strings.Split(hierarchy, ",") {
		switch c {
		case "cpu":
			f["cpu.shares"], f["cpu.cfs_period_us"], f["cpu.cfs_quota_us"] = "1024", "100000", "-1"
		case "memory":
			f["memory.limit_in_bytes"] = "9223372036854771712"
			f["memory.usage_in_bytes"] = "0"
		case "pids":
			f["pids.max"] = "max"
		case "cpuset":
			f["cpuset.cpus"], f["cpuset.mems"] = "", ""
		case "hugetlb":
			for _, s := range m.sizes {
				f["hugetlb."+criconfig.HugePageUnit(s)+".limit_in_bytes"] = "9223372036854771712"
			}
		}
	}
	return f
}

// v2Files are the files of a cgroup v2 cgroup whose parent enables the
// controllers enabled.
func (m *MemFS) v2Files(enabled []string) map[string]string {
	f := map[string]string{"cgroup.procs": "", "cgroup.controllers": strings.Join(enabled, " "), "cgroup.subtree_control": ""}
	for _, c := range enabled {
		switch c {
		case "cpu":
			f["cpu.weight"], f["cpu.max"] = "100", "max 100000"
		case "memory":
			f["memory.max"], f["memory.min"], f["memory.low"], f["memory.high"] = "max", "0", "0", "max"
			f["memory.current"] = "0"
		case "pids":
			f["pids.max"] = "max"
		case "cpuset":
			f["cpuset.cpus"], f["cpuset.mems"] = "", ""
		case "hugetlb":
			for _, s := range m.sizes {
				f["hugetlb."+criconfig.HugePageUnit(s)+".max"] = "max"
			}
		}
	}
	return f
}

func clean(p string) string { return strings.TrimPrefix(path.Clean("/"+p), "/") }

func notExist(op, p string) error { return &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist} }

// Mkdir implements FS.
func (m *MemFS) Mkdir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir = clean(dir)
	if _, ok := m.dirs[dir]; ok {
		return nil
	}
	parentName := path.Dir(dir)
	if parentName == "." {
		parentName = ""
	}
	parent, ok := m.dirs[parentName]
	if !ok || dir == "" {
		return notExist("mkdir", dir)
	}
	if m.v2 {
		m.dirs[dir] = &memDir{files: m.v2Files(strings.Fields(parent.files["cgroup.subtree_control"]))}
		return nil
	}
	if parentName == "" {
		return fmt.Errorf("mkdir %s: a cgroup v1 hierarchy is mounted, not made", dir)
	}
	m.dirs[dir] = &memDir{files: m.v1Files(strings.SplitN(dir, "/", 2)[0])}
	return nil
}

// Rmdir implements FS.
func (m *MemFS) Rmdir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir = clean(dir)
	d, ok := m.dirs[dir]
	if !ok {
		return nil
	}
	if dir == "" || !m.v2 && !strings.Contains(dir, "/") {
		return fmt.Errorf("%w: rmdir %s: a mount's root", ErrBusy, dir)
	}
	if len(d.pids) > 0 || len(m.children(dir)) > 0 {
		return fmt.Errorf("%w: rmdir %s: device or resource busy", ErrBusy, dir)
	}
	delete(m.dirs, dir)
	return nil
}

func (m *MemFS) children(dir string) []string {
	var out []string
	prefix := dir + "/"
	if dir == "" {
		prefix = ""
	}
	for p := range m.dirs {
		if rest, ok := strings.CutPrefix(p, prefix); ok && p != dir && rest != "" && !strings.Contains(rest, "/") {
			out = append(out, rest)
		}
	}
	sort.Strings(out)
	return out
}

func (m *MemFS) file(op, file string) (*memDir, string, error) {
	file = clean(file)
	dir, name := path.Split(file)
	d, ok := m.dirs[strings.TrimSuffix(dir, "/")]
	if !ok {
		return nil, "", notExist(op, file)
	}
	if _, ok := d.files[name]; !ok {
		return nil, "", notExist(op, file)
	}
	return d, name, nil
}

// ReadFile implements FS.
func (m *MemFS) ReadFile(file string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, name, err := m.file("read", file)
	if err != nil {
		return "", err
	}
	if name == "cgroup.procs" {
		return joinPids(d.pids), nil
	}
	return d.files[name], nil
}

func joinPids(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, "\n")
}

// WriteFile implements FS. On cgroup v2, cgroup.subtree_control takes
// "+ctl" and "-ctl" words for controllers of the cgroup's
// cgroup.controllers, as the kernel.
func (m *MemFS) WriteFile(file, value string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, name, err := m.file("write", file)
	if err != nil {
		return err
	}
	if m.v2 && name == "cgroup.subtree_control" {
		have := strings.Fields(d.files["cgroup.controllers"])
		on := strings.Fields(d.files[name])
		for _, w := range strings.Fields(value) {
			c := w[1:]
			if !slices.Contains(have, c) {
				return fmt.Errorf("write %q to %s: invalid argument", value, file)
			}
			switch w[0] {
			case '+':
				if !slices.Contains(on, c) {
					on = append(on, c)
				}
			case '-':
				on = slices.DeleteFunc(on, func(s string) bool { return s == c })
			}
		}
		d.files[name] = strings.Join(on, " ")
		m.writes[clean(file)]++
		// The children's controllers follow: enabled ones add their
		// files (existing values kept).
		dir := strings.TrimSuffix(path.Dir(clean(file)), ".")
		for _, c := range m.children(dir) {
			child := m.dirs[strings.TrimPrefix(dir+"/"+c, "/")]
			for k, v := range m.v2Files(on) {
				if _, ok := child.files[k]; !ok {
					child.files[k] = v
				}
			}
			child.files["cgroup.controllers"] = strings.Join(on, " ")
		}
		return nil
	}
	d.files[name] = value
	m.writes[clean(file)]++
	return nil
}

// Subdirs implements FS.
func (m *MemFS) Subdirs(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir = clean(dir)
	if _, ok := m.dirs[dir]; !ok {
		return nil, notExist("readdir", dir)
	}
	return m.children(dir), nil
}

// Pids implements FS.
func (m *MemFS) Pids(dir string) ([]int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.dirs[clean(dir)]
	if !ok {
		return nil, nil
	}
	return slices.Clone(d.pids), nil
}

// AddProcess attaches pid to the cgroup dir.
func (m *MemFS) AddProcess(dir string, pid int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.dirs[clean(dir)]
	if !ok {
		return notExist("attach", dir)
	}
	d.pids = append(d.pids, pid)
	return nil
}

// Kill ends pid: it leaves every cgroup. Pass it to the Manager with
// WithKill.
func (m *MemFS) Kill(pid int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range m.dirs {
		d.pids = slices.DeleteFunc(d.pids, func(p int) bool { return p == pid })
	}
	return nil
}

// Exists reports whether the cgroup directory dir exists.
func (m *MemFS) Exists(dir string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.dirs[clean(dir)]
	return ok
}

// Dirs lists every cgroup directory, sorted.
func (m *MemFS) Dirs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.dirs))
	for d := range m.dirs {
		if d != "" {
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}

// Writes is the number of successful writes to file.
func (m *MemFS) Writes(file string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writes[clean(file)]
}
