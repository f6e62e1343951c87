// Package cgroups is kubelet v1.37.2's pod and QoS cgroups and node
// allocatable enforcement (pkg/kubelet/cm: the QoS container manager, the
// pod container manager, node allocatable, ResourceConfigForPod) as a
// library: pure functions that compute names and values, and a Manager
// that writes them through a small FS.
//
// # Names
//
// A cgroup's Name is its components ({"kubepods", "burstable",
// "pod<uid>"}), written per driver as kubelet does: cgroupfs
// "/kubepods/burstable/pod<uid>", systemd
// "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid with
// _ for ->.slice". All pods live under Root (<cgroupRoot>/kubepods with
// cgroupsPerQOS, kubelet's default); Guaranteed pods directly in it,
// Burstable and BestEffort pods in its burstable and besteffort tiers
// (QOS). A pod's cgroup, PodName, written under the node's driver, is the
// parent criconfig.CgroupParent sends with the pod's sandbox.
//
// # Values
//
// ResourceConfigForPod is kubelet's, with its default feature gates
// (PodLevelResources on; DRANodeAllocatableResources off): CPU shares from
// the pod's CPU request (2 when none; init containers at their peak,
// overhead and pod-level resources included), the CFS quota and period
// from the CPU limit and the memory limit (criconfig.PodMemoryLimit) for
// Guaranteed pods, and for Burstable pods when every container (or the
// pod) declares that limit; BestEffort pods get 2 shares only; huge pages
// are limited at their requests. On cgroup v2 shares become cpu.weight
// (CPUWeight), quota and period cpu.max. The Manager adds the node's pod
// PIDs limit (kubelet's podPidsLimit, default none) and, on cgroup v2 with
// MemoryQoS and a memoryThrottlingFactor, the pod's memory.high.
//
// The tiers get kubelet's values: besteffort 2 CPU shares, burstable the
// shares of the summed CPU requests of the active Burstable pods
// (BurstableCPUShares, refreshed by UpdateQoS), every huge page size
// unbounded in the three; no memory limit (kubelet's qosReserved is empty
// by default, and its QOSReserved gate is alpha). On cgroup v2, memory.min
// and memory.low are reset to 0 unless the TieredReservation policy sets
// them from the requests (QOSMemoryRequests).
//
// kubepods gets the node allocatable kubelet enforces (enforceNodeAllocatable
// "pods", its default): EnforcedAllocatable, the internal capacity (cpu,
// memory, huge pages and PIDs) less system-reserved and kube-reserved, as
// memory limit, CPU shares, pids.max and huge page limits. The hard
// eviction thresholds are not taken off kubepods (kubelet keeps them inside
// it for its eviction manager); they are part of Reservation, what the
// node reports as taken off its capacity.
//
// # Drivers
//
// Under the cgroupfs driver the Manager makes and writes the cgroup
// directories itself. Under the systemd driver (WithSystemd, over
// NewSystemdDBus or any Systemd) it does what kubelet's libcontainer
// manager (opencontainers/cgroups v0.0.7) does: each cgroup is a slice
// (kubepods.slice, kubepods-burstable.slice,
// kubepods-burstable-pod<uid>.slice, SystemdUnit) that systemd starts
// with StartTransientUnit (SystemdStartProperties: a description, Wants=
// the parent slice, accounting on, DefaultDependencies=false; a unit that
// exists counts as made), then its resources are set with
// SetUnitProperties (SystemdResourceProperties: MemoryLimit, CPUShares,
// CPUQuotaPeriodUSec, CPUQuotaPerSecUSec, TasksMax on cgroup v1;
// MemoryMax, CPUWeight, the quota, TasksMax and the memory.min, low and
// high files as MemoryMin, MemoryLow, MemoryHigh on v2) before the same
// files are written as under cgroupfs, at the systemd paths in every
// hierarchy (v1) or the unified tree (v2). Destroy stops the unit, then
// removes what is left. Without WithSystemd the systemd driver is
// refused (ErrUnsupportedDriver, naming WithSystemd).
//
// # Manager
//
// NewManager takes a Tree (an FS and its layout: cgroup v1 hierarchies, or
// cgroup v2) and the node's criconfig.Node. EnsureQoS makes kubepods and
// the tiers (and enforces node allocatable on kubepods); UpdateQoS
// refreshes the tiers from the active pods (every QOSUpdateInterval, and
// before a new pod's cgroup with WithActivePods); EnsurePod makes a pod's
// cgroup before its sandbox; UpdatePod writes a pod-level resize at once,
// UpdatePodResource in kubelet's steps (CgroupConfig and MemoryUsage read
// what the caller orders them by); RemovePod kills what is left in a pod's
// cgroup (SIGKILL, five rounds, as kubelet) and removes it and its
// children in every hierarchy; PodCgroups lists the pod cgroups found,
// RemoveOrphans sweeps those of pods no longer known (reducing the CPU
// shares of those whose volumes remain). DetectTree finds the host's
// layout under /sys/fs/cgroup (OSFS); MemFS is an FS in memory that
// behaves as the kernel's for tests.
//
// Errors match with errors.Is: ErrUnsupportedDriver, ErrUnitExists, ErrMissingController,
// ErrInvalidName, ErrBusy, ErrKillFailed, and fs.ErrNotExist for a missing
// cgroup root or cgroup file.
//
// # Differences from kubelet
//
//   - Under the systemd driver, StopUnit of a unit systemd does not
//     have (NoSuchUnit) is no error, but any other error of the call is;
//     libcontainer ignores every error of that call. The systemd version
//     is read once per Manager (libcontainer: once per process).
//   - Under the systemd driver the CPU quota is rounded up to whole
//     percents of a CPU in the files too, as libcontainer writes it (a
//     15m limit is a quota of 2000, not 1500): kubelet's own difference
//     between the drivers, kept.
//   - kubelet's Create logs and ignores a failed write of a new cgroup's
//     values; the Manager returns it (no silent drops). Likewise kubelet
//     retries enforcing node allocatable on kubepods every minute in the
//     background (with an event), where EnsureQoS returns the error for
//     the caller to retry.
//   - kubelet's partial updates (a resize, ReduceCPULimits) also write 0
//     to every huge page limit (libcontainer fills omitted sizes); the
//     Manager writes huge page limits only with a full configuration.
//   - kubepods' cpuset on cgroup v1 is copied from its parent as the
//     cpuset cgroups are made; kubelet writes all the node's CPUs (its
//     CPU manager policy none), which is the same on a host whose root
//     cpuset has them all. The static CPU manager (exclusive CPUs, their
//     disabled CFS quota) is not supported.
//   - kube-reserved and system-reserved cgroups (enforceNodeAllocatable
//     "kube-reserved", "system-reserved") are not enforced.
//   - kubelet's QoS loop runs every minute by itself; here the caller runs
//     UpdateQoS (QOSUpdateInterval) and RemoveOrphans, which destroys
//     synchronously where kubelet starts a goroutine per pod.
//   - PodUID requires a pod cgroup's parent to be one of the tiers;
//     kubelet's IsPodCgroup checks only the name's length.
//   - PodName refuses (ErrInvalidName) an empty pod UID and one that is
//     no single path component ("/", "_" or NUL in it, "." or ".."),
//     and every method that takes a Name refuses a component "." or ".."
//     or with "/" or NUL: kubelet panics on "/" and "_" only, and a UID
//     such as "x/../../.." would name the cgroup root.
//   - The qosReserved memory limits of the tiers (alpha) are not
//     supported.
package cgroups
