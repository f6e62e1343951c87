package cgroups

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/internal/hostinfo"
)

// QOSUpdateInterval is how often kubelet refreshes the QoS tiers
// (periodicQOSCgroupUpdateInterval); callers run UpdateQoS at it.
const QOSUpdateInterval = time.Minute

// NodeAllocatable is what the kubepods cgroup is limited to.
type NodeAllocatable struct {
	// Capacity is the node's internal capacity: cpu, memory, huge pages
	// and PIDs (HostCapacity reads them as kubelet does).
	Capacity corev1.ResourceList
	// SystemReserved and KubeReserved are kubelet's systemReserved and
	// kubeReserved.
	SystemReserved, KubeReserved corev1.ResourceList
	// DisableEnforcement is kubelet's enforceNodeAllocatable without
	// "pods": kubepods gets the whole capacity.
	DisableEnforcement bool
}

// Values returns the resources kubepods is limited to.
func (a NodeAllocatable) Values() corev1.ResourceList {
	if a.DisableEnforcement {
		return a.Capacity
	}
	return EnforcedAllocatable(a.Capacity, a.SystemReserved, a.KubeReserved)
}

// HostCapacity is this host's internal capacity as kubelet reads it: the
// logical CPUs, MemTotal of /proc/meminfo, and PIDs, the least of
// kernel.pid_max and kernel.threads-max. A value it cannot read is left
// out. Pre-allocated huge pages are not read: a host with some adds its
// hugepages-<size> entries (criconfig.HostAllocatable reads them), or
// kubepods gets a huge page limit of 0 until UpdateQoS lifts it, as
// kubelet's would with no huge pages in its capacity.
func HostCapacity() corev1.ResourceList {
	c := corev1.ResourceList{
		corev1.ResourceCPU: *resource.NewMilliQuantity(int64(hostinfo.NumCPUs())*1000, resource.DecimalSI),
	}
	if m := hostinfo.Meminfo("MemTotal:"); m > 0 {
		c[corev1.ResourceMemory] = *resource.NewQuantity(m, resource.BinarySI)
	}
	o := NewOSFS("/proc/sys/kernel")
	pids := int64(-1)
	for _, f := range []string{"pid_max", "threads-max"} {
		s, err := o.ReadFile(f)
		if err != nil {
			continue
		}
		if v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil && (pids < 0 || v < pids) {
			pids = v
		}
	}
	if pids >= 0 {
		c[PIDs] = *resource.NewQuantity(pids, resource.DecimalSI)
	}
	return c
}

type options struct {
	pidsLimit    int64
	disableQuota bool
	period       uint64
	kill         func(pid int) error
	allocatable  *NodeAllocatable
	active       func() []*corev1.Pod
	systemd      Systemd
}

// Option configures a Manager.
type Option func(*options)

// WithPodPidsLimit is kubelet's podPidsLimit: pids.max of each pod cgroup
// (default -1, none).
func WithPodPidsLimit(n int64) Option { return func(o *options) { o.pidsLimit = n } }

// WithCPUCFSQuota is kubelet's cpuCFSQuota (default true): false gives pod
// cgroups no CPU quota.
func WithCPUCFSQuota(enforce bool) Option { return func(o *options) { o.disableQuota = !enforce } }

// WithCPUCFSQuotaPeriod is kubelet's cpuCFSQuotaPeriod (default 100ms).
func WithCPUCFSQuotaPeriod(d time.Duration) Option {
	return func(o *options) { o.period = uint64(d / time.Microsecond) }
}

// WithKill replaces how the processes left in a pod's cgroup are killed
// (default KillProcess; MemFS.Kill for tests).
func WithKill(kill func(pid int) error) Option { return func(o *options) { o.kill = kill } }

// WithNodeAllocatable sets the node's capacity and reservations (default:
// HostCapacity, no reservations, enforced on kubepods).
func WithNodeAllocatable(a NodeAllocatable) Option { return func(o *options) { o.allocatable = &a } }

// WithActivePods gives the pods that count for the Burstable tier's CPU
// shares; EnsurePod then refreshes the tiers before making a pod's cgroup,
// as kubelet's SyncPod does.
func WithActivePods(active func() []*corev1.Pod) Option {
	return func(o *options) { o.active = active }
}

// WithSystemd is the connection to systemd the systemd cgroup driver
// needs (NewSystemdDBus): each cgroup is then a slice unit systemd
// starts, whose resources are set through systemd before the Manager
// writes its files, as kubelet's libcontainer manager does. It is not
// used under the cgroupfs driver.
func WithSystemd(s Systemd) Option { return func(o *options) { o.systemd = s } }

// Manager makes, limits and removes the kubepods cgroup, the QoS tiers and
// the pods' cgroups on one node, through a Tree.
type Manager struct {
	tree Tree
	node criconfig.Node
	opts options
	root Name
	qos  QOSNames
	// sd is the systemd connection under the systemd driver, else nil.
	sd Systemd
	// sdVersion caches systemd's version once read (0: not yet).
	sdMu      sync.Mutex
	sdVersion int
	// mu serialises updates of the tiers (kubelet's QoS manager lock).
	mu sync.Mutex
	// applied are the pod cgroups whose values are known to be
	// PodResourceConfig's, by name, with that config: made so, or
	// written or read back so by UpdatePod. UpdatePod and GrowPod, called
	// at every sync, read nothing for a pod whose wanted config is the
	// one known (kubelet reads a pod cgroup back only to resize it). Any
	// other write to the cgroup forgets it.
	appliedMu sync.Mutex
	applied   map[string]ResourceConfig
}

// known reports whether n's values are known to be rc.
func (m *Manager) known(n Name, rc ResourceConfig) bool {
	m.appliedMu.Lock()
	defer m.appliedMu.Unlock()
	cur, ok := m.applied[strings.Join(n, "/")]
	return ok && reflect.DeepEqual(cur, rc)
}

// remember notes n's values as rc; forget, as unknown.
func (m *Manager) remember(n Name, rc ResourceConfig) {
	m.appliedMu.Lock()
	defer m.appliedMu.Unlock()
	if m.applied == nil {
		m.applied = map[string]ResourceConfig{}
	}
	m.applied[strings.Join(n, "/")] = rc
}

func (m *Manager) forget(n Name) {
	m.appliedMu.Lock()
	defer m.appliedMu.Unlock()
	delete(m.applied, strings.Join(n, "/"))
}

// required are the controllers kubelet validates (cgroup v1; on v2 cpu,
// cpuset, memory and pids must be enabled).
var requiredV1 = []string{"cpu", "cpuacct", "cpuset", "memory", "pids"}

// NewManager returns a Manager of tree for the node's cgroup settings
// (node.CgroupDriver, CgroupRoot, CgroupsPerQOS, HugePageSizes, CgroupV2
// is taken from tree, MemoryQoS, MemoryReservationPolicy,
// MemoryThrottlingFactor, PageSize). The systemd driver needs WithSystemd
// (ErrUnsupportedDriver without it, and for any other driver); a missing
// controller is refused (ErrMissingController). With CgroupsPerQOS false
// every method does nothing, as kubelet's no-op managers.
func NewManager(tree Tree, node criconfig.Node, opts ...Option) (*Manager, error) {
	if tree.FS == nil {
		return nil, errors.New("cgroups: NewManager: no FS")
	}
	m := &Manager{tree: tree, node: node, opts: options{pidsLimit: -1, kill: KillProcess}}
	m.node.CgroupV2 = tree.V2
	for _, o := range opts {
		o(&m.opts)
	}
	switch node.CgroupDriver {
	case "", DriverCgroupfs:
	case DriverSystemd:
		if m.opts.systemd == nil {
			return nil, fmt.Errorf("%w: %q needs a connection to systemd (WithSystemd, e.g. NewSystemdDBus)", ErrUnsupportedDriver, node.CgroupDriver)
		}
		m.sd = m.opts.systemd
	default:
		return nil, fmt.Errorf("%w: %q (only %q or %q)", ErrUnsupportedDriver, node.CgroupDriver, DriverCgroupfs, DriverSystemd)
	}
	if m.opts.period == 0 {
		m.opts.period = DefaultCPUPeriod
	}
	if m.opts.allocatable == nil {
		m.opts.allocatable = &NodeAllocatable{Capacity: HostCapacity()}
	}
	m.root = Root(node.CgroupRoot, m.perQOS())
	m.qos = QOS(m.root)
	if m.sd != nil {
		if _, err := m.root.Systemd(); err != nil {
			return nil, fmt.Errorf("cgroups: cgroup root %q under the systemd driver: %w", node.CgroupRoot, err)
		}
	}
	if !m.perQOS() {
		return m, nil
	}
	if tree.V2 {
		have, err := tree.FS.ReadFile("cgroup.controllers")
		if err != nil {
			return nil, fmt.Errorf("cgroups: %w", err)
		}
		for _, c := range []string{"cpu", "cpuset", "memory", "pids"} {
			if !slices.Contains(strings.Fields(have), c) {
				return nil, fmt.Errorf("%w: %s (cgroup.controllers %q)", ErrMissingController, c, have)
			}
		}
		return m, nil
	}
	for _, c := range requiredV1 {
		if _, ok := tree.hierarchy(c); !ok {
			return nil, fmt.Errorf("%w: %s (hierarchies %v)", ErrMissingController, c, tree.Hierarchies)
		}
	}
	return m, nil
}

func (m *Manager) perQOS() bool { return m.node.CgroupsPerQOS == nil || *m.node.CgroupsPerQOS }

// Root is the cgroup holding all pods (kubepods under the cgroup root).
func (m *Manager) Root() Name { return m.root }

// QOS returns the names of the QoS tiers.
func (m *Manager) QOS() QOSNames { return m.qos }

// PodName is the pod's cgroup (see PodName): ErrInvalidName for a UID
// that is no single path component.
func (m *Manager) PodName(pod *corev1.Pod) (Name, error) { return PodName(m.root, pod) }

// PodResourceConfig is what EnsurePod writes to the pod's cgroup:
// ResourceConfigForPod with the node's settings, the pod PIDs limit, and
// on cgroup v2 with MemoryQoS and a MemoryThrottlingFactor, memory.high.
func (m *Manager) PodResourceConfig(pod *corev1.Pod) ResourceConfig {
	memQoS := m.memoryQoS()
	rc := ResourceConfigForPod(pod, PodOptions{
		DisableCPUQuota:         m.opts.disableQuota,
		CPUPeriod:               m.opts.period,
		MemoryQoS:               memQoS,
		MemoryReservationPolicy: m.node.MemoryReservationPolicy,
	})
	if m.opts.pidsLimit > 0 {
		n := m.opts.pidsLimit
		rc.PidsLimit = &n
	}
	if memQoS && m.node.MemoryThrottlingFactor != nil {
		if v := MemoryHigh(pod, *m.node.MemoryThrottlingFactor, m.node.PageSize); v != "" {
			if rc.Unified == nil {
				rc.Unified = map[string]string{}
			}
			rc.Unified[memoryHigh] = v
		}
	}
	return rc
}

// memoryQoS is kubelet's enforceMemoryQoS: the gate (on by default) on a
// cgroup v2 node.
func (m *Manager) memoryQoS() bool {
	return m.tree.V2 && (m.node.MemoryQoS == nil || *m.node.MemoryQoS)
}

func (m *Manager) tiered() bool {
	return m.memoryQoS() && m.node.MemoryReservationPolicy == criconfig.MemoryReservationTiered
}

// rel is the path of the cgroup n in a hierarchy under the node's
// driver (its cgroupfs or systemd form), without the leading "/".
func (m *Manager) rel(n Name) (string, error) {
	if err := n.check(); err != nil {
		return "", err
	}
	p := n.Cgroupfs()
	if m.sd != nil {
		var err error
		if p, err = n.Systemd(); err != nil {
			return "", err
		}
	}
	return strings.TrimPrefix(p, "/"), nil
}

// display is the cgroup n's path under the node's driver, for messages.
func (m *Manager) display(n Name) string {
	p, err := m.rel(n)
	if err != nil {
		return n.Cgroupfs()
	}
	return "/" + p
}

// dirs returns the directories of n in the FS: one per hierarchy on v1.
func (m *Manager) dirs(n Name) ([]string, error) {
	p, err := m.rel(n)
	if err != nil {
		return nil, err
	}
	if m.tree.V2 {
		return []string{p}, nil
	}
	out := make([]string, len(m.tree.Hierarchies))
	for i, h := range m.tree.Hierarchies {
		out[i] = path.Join(h, p)
	}
	return out, nil
}

// Exists reports whether the cgroup n exists (in every required
// hierarchy on cgroup v1).
func (m *Manager) Exists(n Name) (bool, error) {
	p, err := m.rel(n)
	if err != nil {
		return false, err
	}
	var dirs []string
	if m.tree.V2 {
		dirs = []string{p}
	} else {
		for _, c := range requiredV1 {
			h, _ := m.tree.hierarchy(c)
			dirs = append(dirs, path.Join(h, p))
		}
	}
	for _, d := range dirs {
		if _, err := m.tree.FS.ReadFile(path.Join(d, "cgroup.procs")); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return false, nil
			}
			return false, fmt.Errorf("cgroups: %w", err)
		}
	}
	return true, nil
}

// create makes the cgroup n (and its missing ancestors), then writes rc:
// kubelet's Create (libcontainer's Apply(-1) then Set). Under the systemd
// driver, systemd starts n's slice first.
func (m *Manager) create(ctx context.Context, n Name, rc ResourceConfig) error {
	if m.sd != nil {
		if err := m.startUnit(ctx, n); err != nil {
			return err
		}
	}
	if err := m.mkdirAll(n); err != nil {
		return err
	}
	return m.apply(ctx, n, rc)
}

func (m *Manager) mkdirAll(n Name) error {
	f := m.tree.FS
	if m.tree.V2 {
		// As libcontainer's fs2: each ancestor, the mount's root
		// included, enables its controllers for its children.
		for i := 0; i <= len(n); i++ {
			dir, err := m.rel(Name(n[:i]))
			if err != nil {
				return err
			}
			if i > 0 {
				if err := f.Mkdir(dir); err != nil {
					return fmt.Errorf("cgroups: mkdir %s: %w", dir, err)
				}
			}
			if i == len(n) {
				break
			}
			ctl, err := f.ReadFile(path.Join(dir, "cgroup.controllers"))
			if err != nil {
				return fmt.Errorf("cgroups: %w", err)
			}
			if words := strings.Fields(ctl); len(words) > 0 {
				for j := range words {
					words[j] = "+" + words[j]
				}
				if err := f.WriteFile(path.Join(dir, "cgroup.subtree_control"), strings.Join(words, " ")); err != nil {
					return fmt.Errorf("cgroups: enable controllers of %s: %w", dir, err)
				}
			}
		}
		return nil
	}
	cpuset, _ := m.tree.hierarchy("cpuset")
	for _, h := range m.tree.Hierarchies {
		if m.sd != nil && h == "systemd" {
			continue // name=systemd: systemd's own, as libcontainer leaves it
		}
		for i := 1; i <= len(n); i++ {
			p, err := m.rel(Name(n[:i]))
			if err != nil {
				return err
			}
			dir := path.Join(h, p)
			if err := f.Mkdir(dir); err != nil {
				return fmt.Errorf("cgroups: mkdir %s: %w", dir, err)
			}
			if h == cpuset {
				// A cpuset cgroup takes no process until it has CPUs
				// and memory nodes: its parent's, as libcontainer.
				for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
					if err := copyIfEmpty(f, path.Join(dir, file), path.Join(path.Dir(dir), file)); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func copyIfEmpty(f FS, file, from string) error {
	v, err := f.ReadFile(file)
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	if strings.TrimSpace(v) != "" {
		return nil
	}
	pv, err := f.ReadFile(from)
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	if err := f.WriteFile(file, strings.TrimSpace(pv)); err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	return nil
}

// apply writes rc to the cgroup n as libcontainer's Set does, in the
// files of cgroup v1 or v2; under the systemd driver, after setting its
// unit's properties (SystemdResourceProperties, whose rounded CPU quota
// is the one written).
func (m *Manager) apply(ctx context.Context, n Name, rc ResourceConfig) error {
	p, err := m.rel(n)
	if err != nil {
		return err
	}
	if m.sd != nil {
		if rc, err = m.setUnit(ctx, n, rc); err != nil {
			return err
		}
	}
	var w writer
	w.f = m.tree.FS
	dir := func(controller string) (string, bool) {
		if m.tree.V2 {
			return p, true
		}
		h, ok := m.tree.hierarchy(controller)
		return path.Join(h, p), ok
	}
	cpu, _ := dir("cpu")
	if m.tree.V2 {
		if rc.CPUShares != nil && *rc.CPUShares != 0 {
			w.write(cpu, "cpu.weight", strconv.FormatUint(CPUWeight(*rc.CPUShares), 10))
		}
		if q, per := deref(rc.CPUQuota), derefU(rc.CPUPeriod); q != 0 || per != 0 {
			v := "max"
			if q > 0 {
				v = strconv.FormatInt(q, 10)
			}
			if per != 0 {
				v += " " + strconv.FormatUint(per, 10)
			}
			w.write(cpu, "cpu.max", v)
		}
		if rc.Memory != nil && *rc.Memory != 0 {
			v := "max"
			if *rc.Memory > 0 {
				v = strconv.FormatInt(*rc.Memory, 10)
			}
			w.write(p, "memory.max", v)
		}
	} else {
		if rc.CPUShares != nil && *rc.CPUShares != 0 {
			w.write(cpu, "cpu.shares", strconv.FormatUint(*rc.CPUShares, 10))
		}
		w.cpuQuotaV1(cpu, deref(rc.CPUQuota), derefU(rc.CPUPeriod))
		if rc.Memory != nil && *rc.Memory != 0 {
			mem, _ := dir("memory")
			w.write(mem, "memory.limit_in_bytes", strconv.FormatInt(*rc.Memory, 10))
		}
	}
	if rc.PidsLimit != nil {
		v := "max"
		switch l := *rc.PidsLimit; {
		case l > 0:
			v = strconv.FormatInt(l, 10)
		case l == 0:
			v = "1" // as libcontainer: systemd cannot set 0
		}
		pids, _ := dir("pids")
		w.write(pids, "pids.max", v)
	}
	if rc.HugePageLimit != nil && m.hugetlb() {
		ht, _ := dir("hugetlb")
		suffix := ".limit_in_bytes"
		if m.tree.V2 {
			suffix = ".max"
		}
		sizes := slices.Clone(m.node.HugePageSizes)
		for s := range rc.HugePageLimit {
			if !slices.Contains(sizes, s) {
				sizes = append(sizes, s)
			}
		}
		slices.Sort(sizes)
		for _, s := range sizes {
			w.write(ht, "hugetlb."+criconfig.HugePageUnit(s)+suffix, strconv.FormatUint(uint64(rc.HugePageLimit[s]), 10))
		}
	}
	if m.tree.V2 {
		keys := make([]string, 0, len(rc.Unified))
		for k := range rc.Unified {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			w.write(p, k, rc.Unified[k])
		}
	}
	return w.err
}

// hugetlb reports whether the hugetlb controller is there; without it
// huge page limits are not written, as kubelet.
func (m *Manager) hugetlb() bool {
	if m.tree.V2 {
		ctl, err := m.tree.FS.ReadFile("cgroup.controllers")
		return err == nil && slices.Contains(strings.Fields(ctl), "hugetlb")
	}
	_, ok := m.tree.hierarchy("hugetlb")
	return ok
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func derefU(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// writer writes files until the first error.
type writer struct {
	f   FS
	err error
}

func (w *writer) write(dir, file, value string) {
	if w.err != nil {
		return
	}
	if err := w.f.WriteFile(path.Join(dir, file), value); err != nil {
		w.err = fmt.Errorf("cgroups: set %s=%s in %s: %w", file, value, dir, err)
	}
}

// cpuQuotaV1 writes the CFS period then quota as libcontainer: a period
// the kernel refuses before the quota is set is retried after it.
func (w *writer) cpuQuotaV1(dir string, quota int64, period uint64) {
	if w.err != nil {
		return
	}
	retry := false
	if period != 0 {
		if err := w.f.WriteFile(path.Join(dir, "cpu.cfs_period_us"), strconv.FormatUint(period, 10)); err != nil {
			if quota == 0 {
				w.err = fmt.Errorf("cgroups: set cpu.cfs_period_us=%d in %s: %w", period, dir, err)
				return
			}
			retry = true
		}
	}
	if quota != 0 {
		w.write(dir, "cpu.cfs_quota_us", strconv.FormatInt(quota, 10))
		if retry {
			w.write(dir, "cpu.cfs_period_us", strconv.FormatUint(period, 10))
		}
	}
}

// EnsureQoS makes the node's pod cgroups as kubelet's container manager
// starts: kubepods limited to the node allocatable (made when missing,
// then updated), the burstable and besteffort tiers (besteffort at 2 CPU
// shares; every huge page size unbounded in both; on cgroup v2 without
// TieredReservation, burstable's memory.low and kubepods' memory.min
// and memory.low reset to 0). The cgroup root itself must exist
// (fs.ErrNotExist otherwise), as kubelet requires of its cgroupRoot.
func (m *Manager) EnsureQoS(ctx context.Context) error {
	if !m.perQOS() {
		return nil
	}
	log := logr.FromContextOrDiscard(ctx)
	parent := m.root[:len(m.root)-1]
	parentDirs, err := m.dirs(parent)
	if err != nil {
		return err
	}
	for _, d := range parentDirs {
		if _, err := m.tree.FS.Subdirs(d); err != nil {
			return fmt.Errorf("cgroups: cgroup root %s: %w", m.display(parent), err)
		}
	}
	alloc := NodeAllocatableConfig(m.opts.allocatable.Values())
	ok, err := m.Exists(m.root)
	if err != nil {
		return err
	}
	if !ok {
		if err := m.create(ctx, m.root, alloc); err != nil {
			return fmt.Errorf("cgroups: create %s: %w", m.display(m.root), err)
		}
	}
	rootCfg := alloc
	if m.tree.V2 && !m.memoryQoS() {
		rootCfg.Unified = map[string]string{memoryMin: "0", memoryLow: "0"}
	}
	if err := m.apply(ctx, m.root, rootCfg); err != nil {
		return fmt.Errorf("cgroups: enforce node allocatable on %s: %w", m.display(m.root), err)
	}
	log.V(4).Info("Enforced node allocatable", "cgroup", m.display(m.root))
	unbounded := m.unboundedHugePages()
	for _, tier := range []corev1.PodQOSClass{corev1.PodQOSBurstable, corev1.PodQOSBestEffort} {
		rc := ResourceConfig{HugePageLimit: unbounded}
		if tier == corev1.PodQOSBestEffort {
			s := uint64(MinShares)
			rc.CPUShares = &s
		}
		if m.tree.V2 && !m.tiered() && tier == corev1.PodQOSBurstable {
			rc.Unified = map[string]string{memoryLow: "0"}
		}
		if m.sd != nil {
			// kubelet's Create when missing, else Update (under
			// cgroupfs, making an existing cgroup changes nothing).
			ok, err := m.Exists(m.qos.For(tier))
			if err != nil {
				return err
			}
			if ok {
				if err := m.apply(ctx, m.qos.For(tier), rc); err != nil {
					return fmt.Errorf("cgroups: failed to update top level %v QOS cgroup: %w", tier, err)
				}
				continue
			}
		}
		if err := m.create(ctx, m.qos.For(tier), rc); err != nil {
			return fmt.Errorf("cgroups: top level %v QOS cgroup: %w", tier, err)
		}
	}
	if m.tree.V2 && !m.tiered() {
		if err := m.apply(ctx, m.root, ResourceConfig{Unified: map[string]string{memoryMin: "0", memoryLow: "0"}}); err != nil {
			return fmt.Errorf("cgroups: reset memory protection on %s: %w", m.display(m.root), err)
		}
	}
	return nil
}

func (m *Manager) unboundedHugePages() map[int64]int64 {
	out := make(map[int64]int64, len(m.node.HugePageSizes))
	for _, s := range m.node.HugePageSizes {
		out[s] = UnboundedHugePages
	}
	return out
}

// UpdateQoS is kubelet's UpdateCgroups, run every QOSUpdateInterval and
// before a new pod's cgroup is made: the burstable tier's CPU shares from
// the active Burstable pods' requests, besteffort at 2, huge pages
// unbounded in all three tiers (kubepods included, which undoes its node
// allocatable huge page limits, as in kubelet), and with cgroup v2's
// TieredReservation, memory.min and memory.low from the requests.
// kubelet's alpha qosReserved (QOSReserved gate) is not supported.
func (m *Manager) UpdateQoS(ctx context.Context, active []*corev1.Pod) error {
	if !m.perQOS() {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	unbounded := m.unboundedHugePages()
	burst, best := BurstableCPUShares(active), uint64(MinShares)
	cfg := map[corev1.PodQOSClass]*ResourceConfig{
		corev1.PodQOSGuaranteed: {HugePageLimit: unbounded},
		corev1.PodQOSBurstable:  {HugePageLimit: unbounded, CPUShares: &burst},
		corev1.PodQOSBestEffort: {HugePageLimit: unbounded, CPUShares: &best},
	}
	if m.tiered() {
		g, b := QOSMemoryRequests(active)
		cfg[corev1.PodQOSGuaranteed].Unified = map[string]string{memoryMin: strconv.FormatInt(g+b, 10), memoryLow: strconv.FormatInt(b, 10)}
		cfg[corev1.PodQOSBurstable].Unified = map[string]string{memoryLow: strconv.FormatInt(b, 10)}
	}
	for _, tier := range []corev1.PodQOSClass{corev1.PodQOSGuaranteed, corev1.PodQOSBurstable, corev1.PodQOSBestEffort} {
		if err := m.apply(ctx, m.qos.For(tier), *cfg[tier]); err != nil {
			return fmt.Errorf("cgroups: update QoS cgroup %s: %w", m.display(m.qos.For(tier)), err)
		}
	}
	logr.FromContextOrDiscard(ctx).V(4).Info("Updated QoS cgroup configuration")
	return nil
}

// EnsurePod makes the pod's cgroup with PodResourceConfig unless it
// exists, before the pod's sandbox is created (kubelet's
// EnsureExists). With WithActivePods, the tiers are updated first.
func (m *Manager) EnsurePod(ctx context.Context, pod *corev1.Pod) error {
	if !m.perQOS() {
		return nil
	}
	n, err := m.PodName(pod)
	if err != nil {
		return err
	}
	ok, err := m.Exists(n)
	if err != nil || ok {
		return err
	}
	if m.opts.active != nil {
		if err := m.UpdateQoS(ctx, m.opts.active()); err != nil {
			return err
		}
	}
	rc := m.PodResourceConfig(pod)
	if err := m.create(ctx, n, rc); err != nil {
		m.forget(n)
		return fmt.Errorf("cgroups: failed to create container for %s: %w", m.display(n), err)
	}
	m.remember(n, rc)
	return nil
}

// UpdatePod writes the CPU shares, CFS quota and period and the memory
// limit (and cgroup v2 memory files) of the pod's resized resources to its
// cgroup at once. A cgroup this Manager made or last wrote with the same
// config is neither read nor written: the Manager takes itself for the
// only writer of its pods' cgroups, as kubelet, which reads one back only
// to resize it. UpdatePodResource is the same in kubelet's steps, for a
// caller that orders them against the containers' updates as kubelet does.
func (m *Manager) UpdatePod(ctx context.Context, pod *corev1.Pod) error {
	if !m.perQOS() {
		return nil
	}
	n, err := m.PodName(pod)
	if err != nil {
		return err
	}
	rc := m.PodResourceConfig(pod)
	if m.known(n, rc) {
		return nil
	}
	upd := ResourceConfig{CPUShares: rc.CPUShares, CPUQuota: rc.CPUQuota, CPUPeriod: rc.CPUPeriod, Memory: rc.Memory, Unified: rc.Unified}
	want := upd
	if m.sd != nil {
		// The quota as written under systemd: rounded up.
		if _, w, err := SystemdResourceProperties(upd, m.tree.V2, -1); err == nil {
			want = w
		}
	}
	if cur, err := m.CgroupConfig(ctx, n); err == nil && sameValues(cur, want) {
		m.remember(n, rc)
		return nil // as kubelet, which compares before it writes
	}
	if err := m.apply(ctx, n, upd); err != nil {
		m.forget(n)
		return fmt.Errorf("cgroups: resize %s: %w", m.display(n), err)
	}
	m.remember(n, rc)
	return nil
}

// RemovePod removes the pod's cgroup after its containers are killed
// (Destroy).
func (m *Manager) RemovePod(ctx context.Context, pod *corev1.Pod) error {
	if !m.perQOS() {
		return nil
	}
	n, err := m.PodName(pod)
	if err != nil {
		return err
	}
	return m.Destroy(ctx, n)
}

// Pids lists the processes in the cgroup n and its descendants, in every
// hierarchy, sorted.
func (m *Manager) Pids(n Name) ([]int, error) {
	var out []int
	var walk func(dir string) error
	walk = func(dir string) error {
		pids, err := m.tree.FS.Pids(dir)
		if err != nil {
			return err
		}
		out = append(out, pids...)
		subs, err := m.tree.FS.Subdirs(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, s := range subs {
			if err := walk(path.Join(dir, s)); err != nil {
				return err
			}
		}
		return nil
	}
	dirs, err := m.dirs(n)
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if err := walk(d); err != nil {
			return nil, fmt.Errorf("cgroups: %w", err)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Destroy is kubelet's pod container manager Destroy: it kills every
// process left in the cgroup n or below (up to five rounds), then removes
// n and its descendants in every hierarchy, retrying a busy cgroup a few
// times while its killed processes exit. ErrKillFailed or ErrBusy when
// something is left.
func (m *Manager) Destroy(ctx context.Context, n Name) error {
	m.forget(n)
	log := logr.FromContextOrDiscard(ctx)
	pids, err := m.Pids(n)
	if err != nil {
		return err
	}
	if len(pids) > 0 {
		killed := map[int]bool{}
		var errs []error
		for attempt := 0; attempt < 5; attempt++ {
			errs = errs[:0]
			for _, pid := range pids {
				if killed[pid] {
					continue
				}
				log.V(3).Info("Attempting to kill process from cgroup", "pid", pid, "cgroupName", m.display(n))
				if err := m.opts.kill(pid); err != nil {
					errs = append(errs, err)
				} else {
					killed[pid] = true
				}
			}
			if len(errs) == 0 {
				break
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("%w %s: %w", ErrKillFailed, m.display(n), errors.Join(errs...))
		}
	}
	var stopErr error
	if m.sd != nil {
		// libcontainer's Destroy: systemd stops the slice, then what is
		// left of it is removed (also when the stop failed).
		stopErr = m.stopUnit(ctx, n)
	}
	delay := 10 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := m.removeAll(n)
		if err == nil || !errors.Is(err, ErrBusy) || attempt == 4 {
			return errors.Join(stopErr, err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(stopErr, fmt.Errorf("%w (%w)", err, ctx.Err()))
		case <-t.C:
		}
		delay *= 2
	}
}

func (m *Manager) removeAll(n Name) error {
	var rm func(dir string) error
	rm = func(dir string) error {
		subs, err := m.tree.FS.Subdirs(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cgroups: %w", err)
		}
		for _, s := range subs {
			if err := rm(path.Join(dir, s)); err != nil {
				return err
			}
		}
		if err := m.tree.FS.Rmdir(dir); err != nil {
			return fmt.Errorf("cgroups: unable to destroy cgroup paths for cgroup %s: %w", m.display(n), err)
		}
		return nil
	}
	dirs, err := m.dirs(n)
	if err != nil {
		return err
	}
	if !m.tree.V2 && m.tree.Unified != "" {
		p, _ := m.rel(n)
		dirs = append(dirs, path.Join(m.tree.Unified, p))
	}
	for _, d := range dirs {
		if err := rm(d); err != nil {
			return err
		}
	}
	return nil
}

// ReduceCPULimits sets the cgroup n's CPU shares to the minimum, 2
// (kubelet's, for an orphaned pod whose volumes are still mounted).
func (m *Manager) ReduceCPULimits(ctx context.Context, n Name) error {
	s := uint64(MinShares)
	return m.apply(ctx, n, ResourceConfig{CPUShares: &s})
}

// PodCgroups is kubelet's GetAllPodsFromCgroups: the pod cgroups found
// under the tiers in any hierarchy, by pod UID.
func (m *Manager) PodCgroups(ctx context.Context) (map[types.UID]Name, error) {
	found := map[types.UID]Name{}
	if !m.perQOS() {
		return found, nil
	}
	for _, tier := range []Name{m.qos.BestEffort, m.qos.Burstable, m.qos.Guaranteed} {
		dirs, err := m.dirs(tier)
		if err != nil {
			return nil, err
		}
		for _, d := range dirs {
			subs, err := m.tree.FS.Subdirs(d)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("cgroups: failed to read the cgroup directory %s: %w", d, err)
			}
			for _, s := range subs {
				// kubelet's internal name of the child; under systemd
				// parsed back from its slice name.
				name := append(slices.Clone(tier), s)
				if m.sd != nil {
					name = ParseSystemd(s)
				}
				base := name[len(name)-1]
				if !strings.Contains(base, podPrefix) {
					continue
				}
				parts := strings.Split(base, podPrefix)
				if len(parts) != 2 {
					logr.FromContextOrDiscard(ctx).Info("Pod cgroup manager ignored unexpected cgroup because it is not a pod", "path", path.Join(m.display(tier), s))
					continue
				}
				found[types.UID(parts[1])] = name
			}
		}
	}
	return found, nil
}

// RemoveOrphans is kubelet's cleanupOrphanedPodCgroups: each pod cgroup
// whose UID keep does not hold is destroyed, unless volumesExist says the
// pod's volumes are still mounted (nil: never), when its CPU shares are
// reduced instead. It returns the UIDs whose cgroups were removed, and
// the errors of the others (the next sweep retries them). Unlike
// kubelet, which destroys in the background, it returns when done.
func (m *Manager) RemoveOrphans(ctx context.Context, keep func(types.UID) bool, volumesExist func(types.UID) bool) ([]types.UID, error) {
	found, err := m.PodCgroups(ctx)
	if err != nil {
		return nil, err
	}
	uids := make([]types.UID, 0, len(found))
	for uid := range found {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	var removed []types.UID
	var errs []error
	for _, uid := range uids {
		if keep != nil && keep(uid) {
			continue
		}
		if volumesExist != nil && volumesExist(uid) {
			if err := m.ReduceCPULimits(ctx, found[uid]); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := m.Destroy(ctx, found[uid]); err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", uid, err))
			continue
		}
		removed = append(removed, uid)
	}
	return removed, errors.Join(errs...)
}

// sameValues: the CPU and memory values UpdatePod writes already hold (a
// value UpdatePod would not write counts as held).
func sameValues(cur, want ResourceConfig) bool {
	eqU := func(a, b *uint64) bool { return b == nil || a != nil && *a == *b }
	eqI := func(a, b *int64) bool { return b == nil || a != nil && *a == *b }
	return eqU(cur.CPUShares, want.CPUShares) && eqI(cur.CPUQuota, want.CPUQuota) && eqU(cur.CPUPeriod, want.CPUPeriod) &&
		eqI(cur.Memory, want.Memory) && len(want.Unified) == 0
}
