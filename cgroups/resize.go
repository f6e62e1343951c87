package cgroups

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// CPUSharesFromWeight is kubelet's reading of cgroup v2's cpu.weight back
// as cpu.shares (cpuWeightToCPUShares); CPUWeight then this may not give
// the shares back exactly.
func CPUSharesFromWeight(weight uint64) uint64 {
	if weight < 1 {
		weight = 1
	}
	return ((weight-1)*262142)/9999 + 2
}

// read reads a controller's file of the cgroup n.
func (m *Manager) read(controller string, n Name, name string) (string, error) {
	p, err := m.rel(n)
	if err != nil {
		return "", err
	}
	if !m.tree.V2 {
		h, _ := m.tree.hierarchy(controller)
		p = path.Join(h, p)
	}
	s, err := m.tree.FS.ReadFile(path.Join(p, name))
	if err != nil {
		return "", fmt.Errorf("cgroups: %w", err)
	}
	return s, nil
}

func (m *Manager) readUint(controller string, n Name, name string) (uint64, error) {
	s, err := m.read(controller, n, name)
	if err != nil {
		return 0, err
	}
	s = strings.TrimSpace(s)
	if s == "max" {
		return ^uint64(0), nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cgroups: %s of %s: %w", name, m.display(n), err)
	}
	return v, nil
}

// PodCgroupConfig is CgroupConfig of the pod's cgroup (kubelet's
// GetPodCgroupConfig for CPU and memory).
func (m *Manager) PodCgroupConfig(ctx context.Context, pod *corev1.Pod) (ResourceConfig, error) {
	n, err := m.PodName(pod)
	if err != nil {
		return ResourceConfig{}, err
	}
	return m.CgroupConfig(ctx, n)
}

// CgroupConfig reads the CPU shares, CFS quota and period and memory
// limit of the cgroup n as kubelet's GetCgroupConfig does: on cgroup v2,
// shares from cpu.weight (CPUSharesFromWeight), a quota of "max" as -1,
// a memory.max of "max" as -1; on cgroup v1 the files' values.
func (m *Manager) CgroupConfig(ctx context.Context, n Name) (ResourceConfig, error) {
	var rc ResourceConfig
	if m.tree.V2 {
		s, err := m.read("cpu", n, "cpu.max")
		if err != nil {
			return rc, err
		}
		f := strings.Fields(s)
		if len(f) != 2 {
			return rc, fmt.Errorf("cgroups: cpu.max of %s: %q", m.display(n), s)
		}
		quota := int64(-1)
		if f[0] != "max" {
			if quota, err = strconv.ParseInt(f[0], 10, 64); err != nil {
				return rc, fmt.Errorf("cgroups: cpu.max of %s: %w", m.display(n), err)
			}
		}
		period, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return rc, fmt.Errorf("cgroups: cpu.max of %s: %w", m.display(n), err)
		}
		weight, err := m.readUint("cpu", n, "cpu.weight")
		if err != nil {
			return rc, err
		}
		shares := CPUSharesFromWeight(weight)
		rc.CPUShares, rc.CPUQuota, rc.CPUPeriod = &shares, &quota, &period
		mem, err := m.readUint("memory", n, "memory.max")
		if err != nil {
			return rc, err
		}
		limit := int64(mem)
		rc.Memory = &limit
		return rc, nil
	}
	qs, err := m.read("cpu", n, "cpu.cfs_quota_us")
	if err != nil {
		return rc, err
	}
	quota, err := strconv.ParseInt(strings.TrimSpace(qs), 10, 64)
	if err != nil {
		return rc, fmt.Errorf("cgroups: cpu.cfs_quota_us of %s: %w", m.display(n), err)
	}
	period, err := m.readUint("cpu", n, "cpu.cfs_period_us")
	if err != nil {
		return rc, err
	}
	shares, err := m.readUint("cpu", n, "cpu.shares")
	if err != nil {
		return rc, err
	}
	mem, err := m.readUint("memory", n, "memory.limit_in_bytes")
	if err != nil {
		return rc, err
	}
	limit := int64(mem)
	rc.CPUShares, rc.CPUQuota, rc.CPUPeriod, rc.Memory = &shares, &quota, &period, &limit
	return rc, nil
}

// MemoryUsage is the memory the cgroup n uses (v1 memory.usage_in_bytes,
// v2 memory.current), for the check kubelet makes before shrinking a
// pod's memory limit.
func (m *Manager) MemoryUsage(ctx context.Context, n Name) (int64, error) {
	name := "memory.usage_in_bytes"
	if m.tree.V2 {
		name = "memory.current"
	}
	v, err := m.readUint("memory", n, name)
	return int64(v), err
}

// UpdatePodResource is one step of kubelet's pod-level in-place resize
// (setPodCgroupConfig): for cpu, the CFS quota and period (limit) or the
// shares (request); for memory, the limit and, on cgroup v2 with
// MemoryQoS, memory.high and the protection files (limit), nothing for
// the request (memory requests are not written to cgroups). kubelet
// grows the pod cgroup's limit, then its request, before the containers,
// and shrinks them (request, then limit) after; the caller keeps that
// order, and checks a shrinking memory limit against MemoryUsage.
func (m *Manager) UpdatePodResource(ctx context.Context, pod *corev1.Pod, resource corev1.ResourceName, limit bool) error {
	if !m.perQOS() {
		return nil
	}
	n, err := m.PodName(pod)
	if err != nil {
		return err
	}
	rc := m.PodResourceConfig(pod)
	m.forget(n) // a step: the values are the config's only after the last
	var upd ResourceConfig
	switch resource {
	case corev1.ResourceCPU:
		if limit {
			upd.CPUQuota, upd.CPUPeriod = rc.CPUQuota, rc.CPUPeriod
		} else {
			upd.CPUShares = rc.CPUShares
		}
	case corev1.ResourceMemory:
		if !limit {
			return nil
		}
		upd.Memory, upd.Unified = rc.Memory, rc.Unified
	default:
		return fmt.Errorf("cgroups: resize of %s: only cpu and memory are resized", resource)
	}
	if err := m.apply(ctx, n, upd); err != nil {
		return fmt.Errorf("cgroups: resize %s of %s: %w", resource, m.display(n), err)
	}
	return nil
}

// GrowPod raises, of the pod cgroup's CPU quota and memory limit, those
// lower than the pod's values now (no limit, -1, counting as the
// highest), and leaves the others: the first half of kubelet's pod-level
// resize order (doPodResizeAction grows the pod cgroup before the
// containers and shrinks it after them), for a caller that syncs the
// containers next and calls UpdatePod after them. A container's new limit
// then fits under its pod cgroup: cgroup v1 refuses a CFS quota above the
// parent's (EINVAL), so a container resized or started with a larger CPU
// limit would otherwise fail until the pod cgroup changed. Nothing is
// written when nothing grows.
func (m *Manager) GrowPod(ctx context.Context, pod *corev1.Pod) error {
	if !m.perQOS() {
		return nil
	}
	n, err := m.PodName(pod)
	if err != nil {
		return err
	}
	rc := m.PodResourceConfig(pod)
	if m.known(n, rc) {
		return nil // nothing grows: the values are the wanted ones
	}
	cur, err := m.CgroupConfig(ctx, n)
	if err != nil {
		return fmt.Errorf("cgroups: grow %s: %w", m.display(n), err)
	}
	grows := func(cur, want *int64) bool {
		return want != nil && cur != nil && *cur != -1 && (*want == -1 || *want > *cur)
	}
	var upd ResourceConfig
	if grows(cur.CPUQuota, rc.CPUQuota) {
		upd.CPUQuota, upd.CPUPeriod = rc.CPUQuota, rc.CPUPeriod
	}
	if grows(cur.Memory, rc.Memory) {
		upd.Memory = rc.Memory
	}
	if upd.CPUQuota == nil && upd.Memory == nil {
		return nil
	}
	m.forget(n) // partly written: UpdatePod writes the rest
	if err := m.apply(ctx, n, upd); err != nil {
		return fmt.Errorf("cgroups: grow %s: %w", m.display(n), err)
	}
	return nil
}
