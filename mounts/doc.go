// Package mounts turns a container's volumeMounts into the mounts a
// runtime needs, as kubelet's makeMounts and kuberuntime do (v1.37.2):
//
//   - Mounts come in spec order, then the managed /etc/hosts, then the
//     termination message file. A volume missing from the VolumeMap, a bad
//     subPath, an invalid propagation or recursive read-only mode aborts
//     the container with an error naming volume and container.
//   - subPath must be relative with no ".." element; subPathExpr expands
//     $(VAR) from the container's environment and fails on a missing or
//     empty variable (names sorted). A missing subPath directory is created
//     with the volume root's permission bits, ignoring the umask.
//   - Propagation: unset and None are private, HostToContainer is rslave,
//     Bidirectional is rshared. readOnly is the mount's or the volume's.
//     Recursive read-only needs a read-only, private mount.
//   - /etc/hosts is mounted (read-write, relabelled) when the pod has an IP
//     or uses the host network, unless the container mounts /etc/hosts
//     itself. Its content is kubelet's, byte for byte; host-network pods
//     get the node's file behind a header, plus the host aliases.
//   - WriteAtomic is kubelet's AtomicWriter for volume payloads (Secret,
//     ConfigMap, downward API, projected): a timestamped directory behind
//     the ..data symlink swapped by rename, one link per top-level name,
//     kubelet's path rules, a file's FsUser, a setPerms hook run before the
//     swap, an unchanged payload not rewritten; what the previous payload
//     wrote (read from the directory ..data points to) and the new one
//     does not is removed, and nothing else. SetVolumeOwnership is
//     kubelet's fsGroup ownership (fsGroupChangePolicy Always), with its
//     read-only mask.
//   - Mounter is the seam for the mounts podstart makes itself: the tmpfs
//     of memory-backed volumes (Secret, downward API, projected, emptyDir
//     medium Memory), with kubelet's options (size=<bytes> when a limit
//     applies, noswap where the kernel takes it), their unmounting, "is
//     this a mount point" and the mount table (ParseMountInfo, Under).
//     HostMounter is the host's (mount(2); EPERM is ErrMountNotPermitted);
//     mounts/fake is one in memory for tests. Kubelet probes noswap once
//     with a throw-away mount; HostMounter tries it on the first real
//     mount and drops it if the kernel refuses.
//   - Every container instance gets a new termination message file
//     <podDir>/containers/<name>/<8 hex digits>, mode 0666; if it cannot be
//     created, the mount is left out and the start goes on.
//   - Mounts are mounts' own type (Propagation has CRI's values), so the
//     package needs neither gRPC nor cri-api; criconfig.CRIMounts gives CRI
//     mounts. DockerBinds gives docker bind strings with options in
//     kubelet's order ("ro", "Z", "rshared"/"rslave"), and DockerMounts the
//     Docker API form that cri-dockerd now uses, because Docker 25 made
//     "ro" in a bind string recursive; recursive read-only is checked in
//     cri-dockerd's order (handler support, propagation, read-write).
//
// # Differences from kubelet
//
// Safety goes beyond kubelet's string checks. A subPath is resolved with
// filepath-securejoin's pathrs-lite, so no step of the resolution leaves
// the volume, and a subPath whose ordinary resolution would leave it (a
// symlink to /, to a parent, a dangling link) is refused instead of being
// reinterpreted inside; a path swapped for a symlink between the check and
// the open is detected and refused. Kubelet additionally bind-mounts the
// opened file descriptor onto a private target so the runtime mounts
// exactly what was checked; podstart returns the resolved path and leaves
// mounting to the runtime, so a volume writable by an attacker can still
// race the runtime's own mount. Host aliases and hostnames with
// whitespace, control characters or '#' are refused rather than written
// into /etc/hosts. SubPaths with a NUL byte are refused. WriteAtomic
// works beneath a root the caller names (kubelet's root dir): the volume
// directory and every directory up to the root are opened with
// openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), so a symlink or a file at
// or above the volume directory is ErrUnsafeVolumeDir and nothing is
// written; every later step is relative to that descriptor, files are
// created with O_EXCL|O_NOFOLLOW, and removals never follow a link
// (RemoveBeneath is the same for tearing a volume down). Kubelet's
// AtomicWriter follows such links. Where kubelet would quietly keep a
// foreign file in place of a payload name, hiding the payload's, or
// remove whatever stands at an old name, WriteAtomic refuses
// (ErrForeignEntry) or leaves it. A File mode with bits outside 0777
// (setuid, setgid, sticky) is refused (ErrInvalidFileMode); kubelet
// writes it. Make first
// refuses a pod the API server would reject (validation.Check, with an
// error matching validation.ErrInvalidPod and ErrInvalidName, its alias):
// its UID, namespace, name, container and volume names become host paths,
// its subPaths and mount paths are checked as the API server checks them.
//
// The side effects (mkdir, file writes) go through the Disk interface;
// OSDisk is the host's; MemDisk holds them in memory with the same
// semantics and errors, so that mounts can be computed (and tested) with
// no file system. Mounts go through Mounter; its methods are single
// system calls and take no context.
//
// # Logs
//
// podstart is Linux-only: kubelet's Windows mount rules (drive letters,
// named pipes, single-file mounts, PRIVATE propagation only) are not
// built, and container paths are taken as Linux paths.
//
// # Why not k8s.io/mount-utils
//
// Kubelet mounts through k8s.io/mount-utils. It would cost little here (a
// program using only DockerBinds grows from 12,876,839 to 13,046,358
// bytes, +0.17 MB, measured with v0.37.2), but it would change behaviour:
// it runs the mount and umount programs (so util-linux on the host, and
// failures as text) rather than mount(2), so ErrMountNotPermitted and
// UMOUNT_NOFOLLOW go; it has no fallback for kernels that refuse noswap;
// its List reads /proc/mounts without decoding escapes such as \040; and
// its IsLikelyNotMountPoint compares devices where HostMounter reads the
// statx mount-root attribute. HostMounter stays on mount(2).
//
// This package writes no logs: what went wrong is in the returned errors.
// The packages that log (images, podsync) use the logr.Logger in the
// context (logr.FromContextOrDiscard), discarded by default, and never log
// credentials.
package mounts
