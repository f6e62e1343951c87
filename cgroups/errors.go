package cgroups

import "errors"

// Errors of the package, matchable with errors.Is.
var (
	// ErrUnsupportedDriver: a cgroup driver other than cgroupfs and
	// systemd, or the systemd driver without a connection to systemd
	// (WithSystemd), is refused, by name.
	ErrUnsupportedDriver = errors.New("cgroups: cgroup driver not supported by the Manager")
	// ErrInvalidName: a cgroup name has a component kubelet refuses ("/"
	// or "_" in a component, an empty component under systemd).
	ErrInvalidName = errors.New("cgroups: invalid cgroup name")
	// ErrMissingController: a controller the Manager needs (cpu, cpuacct,
	// cpuset, memory, pids) is not mounted or not enabled.
	ErrMissingController = errors.New("cgroups: required cgroup controller missing")
	// ErrBusy: a cgroup still holds processes or child cgroups and
	// cannot be removed yet.
	ErrBusy = errors.New("cgroups: cgroup busy")
	// ErrKillFailed: processes left in a pod's cgroup could not all be
	// killed (kubelet's "failed to kill all the processes attached to
	// the ... cgroups").
	ErrKillFailed = errors.New("cgroups: failed to kill all the processes attached to the cgroup")
)
