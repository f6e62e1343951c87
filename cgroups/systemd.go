package cgroups

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
)

// Systemd is what the Manager asks of systemd under the systemd cgroup
// driver: the calls kubelet's libcontainer manager makes on
// org.freedesktop.systemd1.Manager. NewSystemdDBus implements it over
// D-Bus; tests implement it in memory.
type Systemd interface {
	// StartTransientUnit starts the transient unit name with props (mode
	// "replace") and waits for its job. A unit that already exists is an
	// error matching ErrUnitExists.
	StartTransientUnit(ctx context.Context, name string, props []Property) error
	// SetUnitProperties sets props of the unit at runtime (not persisted).
	SetUnitProperties(ctx context.Context, name string, props []Property) error
	// StopUnit stops the unit (mode "replace") and waits for its job; a
	// unit that does not exist is no error.
	StopUnit(ctx context.Context, name string) error
	// Version is systemd's version number (its Manager's Version
	// property, "v252.4-1" read as 252).
	Version(ctx context.Context) (int, error)
}

// Property is a systemd unit property: its D-Bus name and value (string,
// bool, uint64 or []string, as sent).
type Property struct {
	Name  string
	Value any
}

// ErrUnitExists is a StartTransientUnit of a unit systemd already has
// (org.freedesktop.systemd1.UnitExists). The Manager treats it as made,
// as libcontainer does for kubelet's slices.
var ErrUnitExists = errors.New("cgroups: systemd unit already exists")

// SystemdInfinity is systemd's "infinity" for CPUQuotaPerSecUSec, TasksMax
// and the memory limits.
const SystemdInfinity = uint64(math.MaxUint64)

// SystemdUnit returns the slice unit of the cgroup n under the systemd
// driver and its parent slice, as kubelet gives them to libcontainer:
// {"kubepods", "burstable"} is "kubepods-burstable.slice" in
// "kubepods.slice"; kubepods's parent is the root slice "-.slice".
func SystemdUnit(n Name) (unit, parent string, err error) {
	p, err := n.Systemd()
	if err != nil {
		return "", "", err
	}
	if p == "/" {
		return "", "", fmt.Errorf("%w: the root cgroup is no unit", ErrInvalidName)
	}
	dir, base := path.Split(p)
	if dir == "/" {
		return base, "-.slice", nil
	}
	return base, path.Base(dir), nil
}

// SystemdStartProperties are the properties libcontainer's Apply sends
// with StartTransientUnit for a slice (kubelet's Create): a description,
// Wants= its parent slice, accounting of memory, CPU, block I/O (IO on
// cgroup v2) and tasks, and no default dependencies. Resources are set
// after, with SetUnitProperties.
func SystemdStartProperties(unit, parent string, v2 bool) []Property {
	io := "BlockIOAccounting"
	if v2 {
		io = "IOAccounting"
	}
	return []Property{
		{"Description", "libcontainer container " + unit},
		{"Wants", []string{parent}},
		{"MemoryAccounting", true},
		{"CPUAccounting", true},
		{io, true},
		{"TasksAccounting", true},
		{"DefaultDependencies", false},
	}
}

// Versions of systemd from which libcontainer sends a property.
const (
	systemdCPUQuotaPeriodVersion = 242 // CPUQuotaPeriodUSec
	systemdCPUIdleVersion        = 252 // CPUWeight=0 for cpu.idle
)

// SystemdResourceProperties are the properties libcontainer's Set sends
// with SetUnitProperties for rc (as kubelet converts its ResourceConfig),
// for a systemd of version version (-1: unknown), and rc as then written
// to the cgroup files: its CPU quota rounded up as libcontainer rounds it
// (systemd keeps CPUQuotaPerSecUSec in whole percents of a CPU, 10ms per
// second). On cgroup v1: MemoryLimit, CPUShares, CPUQuotaPeriodUSec and
// CPUQuotaPerSecUSec, TasksMax. On cgroup v2: MemoryMax (and
// MemorySwapMax infinity with an unlimited memory), CPUWeight, the CPU
// quota, TasksMax, then rc.Unified's memory.*, pids.max, cpu.weight,
// cpu.max and cpu.idle by file name; other files are only written.
func SystemdResourceProperties(rc ResourceConfig, v2 bool, version int) ([]Property, ResourceConfig, error) {
	var props []Property
	out := rc
	mem := deref(rc.Memory)
	if mem != 0 {
		name := "MemoryLimit"
		if v2 {
			name = "MemoryMax"
		}
		props = append(props, Property{name, uint64(mem)})
	}
	if v2 && mem == -1 {
		// libcontainer's swap for an unlimited memory: unlimited too.
		props = append(props, Property{"MemorySwapMax", SystemdInfinity})
	}
	if s := derefU(rc.CPUShares); s != 0 {
		if v2 {
			props = append(props, Property{"CPUWeight", CPUWeight(s)})
		} else {
			props = append(props, Property{"CPUShares", s})
		}
	}
	quota := deref(rc.CPUQuota)
	props = addCPUQuota(props, &quota, derefU(rc.CPUPeriod), version)
	if rc.CPUQuota != nil && quota != *rc.CPUQuota {
		out.CPUQuota = &quota
	}
	if rc.PidsLimit != nil {
		props = append(props, Property{"TasksMax", tasksMax(*rc.PidsLimit)})
	}
	if !v2 || len(rc.Unified) == 0 {
		return props, out, nil
	}
	keys := make([]string, 0, len(rc.Unified))
	for k := range rc.Unified {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	idle := strings.TrimSpace(rc.Unified["cpu.idle"]) == "1" && version >= systemdCPUIdleVersion
	for _, k := range keys {
		if strings.Contains(k, "/") || strings.IndexByte(k, '.') <= 0 {
			return nil, rc, fmt.Errorf("cgroups: unified resource %q must be a file name CONTROLLER.PARAMETER", k)
		}
		v := strings.TrimSpace(rc.Unified[k])
		switch k {
		case "cpu.idle":
			if idle {
				props = append(props, Property{"CPUWeight", uint64(0)})
			}
		case "cpu.weight":
			if idle {
				continue // systemd's CPUWeight=0 is cpu.idle; libcontainer keeps idle
			}
			w, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, rc, fmt.Errorf("cgroups: unified resource %q: %w", k, err)
			}
			props = append(props, Property{"CPUWeight", w})
		case "cpu.max":
			f := strings.Fields(v)
			if len(f) < 1 || len(f) > 2 {
				return nil, rc, fmt.Errorf("cgroups: unified resource %q value invalid: %q", k, v)
			}
			q, per := int64(0), uint64(DefaultCPUPeriod)
			var err error
			if f[0] != "max" {
				if q, err = strconv.ParseInt(f[0], 10, 64); err != nil {
					return nil, rc, fmt.Errorf("cgroups: unified resource %q: %w", k, err)
				}
			}
			if len(f) == 2 {
				if per, err = strconv.ParseUint(f[1], 10, 64); err != nil {
					return nil, rc, fmt.Errorf("cgroups: unified resource %q: %w", k, err)
				}
			}
			props = addCPUQuota(props, &q, per, version)
		case "memory.high", "memory.low", "memory.min", "memory.max", "memory.swap.max":
			n := SystemdInfinity
			if v != "max" {
				var err error
				if n, err = strconv.ParseUint(v, 10, 64); err != nil {
					return nil, rc, fmt.Errorf("cgroups: unified resource %q: %w", k, err)
				}
			}
			name := map[string]string{"memory.high": "MemoryHigh", "memory.low": "MemoryLow", "memory.min": "MemoryMin",
				"memory.max": "MemoryMax", "memory.swap.max": "MemorySwapMax"}[k]
			props = append(props, Property{name, n})
		case "pids.max":
			n := SystemdInfinity
			if v != "max" {
				var err error
				if n, err = strconv.ParseUint(v, 10, 64); err != nil {
					return nil, rc, fmt.Errorf("cgroups: unified resource %q: %w", k, err)
				}
			}
			if n == 0 {
				n = 1
			}
			props = append(props, Property{"TasksMax", n})
		}
	}
	return props, out, nil
}

// tasksMax is libcontainer's TasksMax for a PIDs limit: infinity below 0,
// 1 for 0 (systemd refuses 0).
func tasksMax(limit int64) uint64 {
	switch {
	case limit < 0:
		return SystemdInfinity
	case limit == 0:
		return 1
	}
	return uint64(limit)
}

// addCPUQuota is libcontainer's: CPUQuotaPeriodUSec from a period (systemd
// 242 and later), CPUQuotaPerSecUSec from a quota or a period, the quota
// per second rounded up to 10ms and quota updated to match.
func addCPUQuota(props []Property, quota *int64, period uint64, version int) []Property {
	if period != 0 && version >= systemdCPUQuotaPeriodVersion {
		props = append(props, Property{"CPUQuotaPeriodUSec", period})
	}
	if *quota == 0 && period == 0 {
		return props
	}
	perSec := SystemdInfinity
	if *quota > 0 {
		if period == 0 {
			period = DefaultCPUPeriod
		}
		perSec = uint64(*quota*1000000) / period
		if perSec%10000 != 0 {
			perSec = (perSec/10000 + 1) * 10000
			*quota = int64(perSec) * int64(period) / 1000000
		}
	}
	return append(props, Property{"CPUQuotaPerSecUSec", perSec})
}

// startUnit starts the slice of the cgroup n (kubelet's Create:
// libcontainer's Apply(-1), for which a unit that exists is made).
func (m *Manager) startUnit(ctx context.Context, n Name) error {
	unit, parent, err := SystemdUnit(n)
	if err != nil {
		return err
	}
	err = m.sd.StartTransientUnit(ctx, unit, SystemdStartProperties(unit, parent, m.tree.V2))
	if err != nil && !errors.Is(err, ErrUnitExists) {
		return fmt.Errorf("cgroups: unable to start unit %q: %w", unit, err)
	}
	return nil
}

// setUnit sets the properties of rc on the slice of the cgroup n
// (libcontainer's Set, before it writes the files) and returns rc as
// then written.
func (m *Manager) setUnit(ctx context.Context, n Name, rc ResourceConfig) (ResourceConfig, error) {
	unit, _, err := SystemdUnit(n)
	if err != nil {
		return rc, err
	}
	props, out, err := SystemdResourceProperties(rc, m.tree.V2, m.systemdVersion(ctx))
	if err != nil {
		return rc, err
	}
	if err := m.sd.SetUnitProperties(ctx, unit, props); err != nil {
		return rc, fmt.Errorf("cgroups: unable to set unit properties of %q: %w", unit, err)
	}
	return out, nil
}

// stopUnit stops the slice of the cgroup n (libcontainer's Destroy).
func (m *Manager) stopUnit(ctx context.Context, n Name) error {
	unit, _, err := SystemdUnit(n)
	if err != nil {
		return err
	}
	if err := m.sd.StopUnit(ctx, unit); err != nil {
		return fmt.Errorf("cgroups: unable to stop unit %q: %w", unit, err)
	}
	return nil
}

// systemdVersion is systemd's version, read once (-1, and read again
// next time, when it cannot be read; libcontainer then leaves out the
// properties of newer versions).
func (m *Manager) systemdVersion(ctx context.Context) int {
	m.sdMu.Lock()
	defer m.sdMu.Unlock()
	if m.sdVersion > 0 {
		return m.sdVersion
	}
	v, err := m.sd.Version(ctx)
	if err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "Unable to get systemd version")
		return -1
	}
	m.sdVersion = v
	return v
}
