// Package containerlogs rotates the log files of a node's running
// containers, as kubelet's ContainerLogManager (pkg/kubelet/logs) does,
// so that a container writing without pause cannot fill the node's disk.
//
// # What a pass does
//
// Run makes a pass at once and then every monitor interval (default 10 s)
// on its clock; RotateOnce makes one. A pass lists the runtime's
// containers (CRI ListContainers) and, for each running one, with as many
// workers as configured (default 1), reads its log path from
// ContainerStatus. podsync writes it as kubelet does:
//
//	<podLogsDir>/<namespace>_<name>_<uid>/<container>/<restartCount>.log
//
// If the live log is missing, the runtime is asked to reopen it (CRI
// ReopenContainerLog). If it is at least the maximum size (default 10Mi),
// it is rotated:
//
//  1. temporary files (<live>.*.tmp) and rotated files whose compressed
//     copy exists, which a rotation cut short leaves, are removed;
//  2. of the other rotated files (<live>.<timestamp>[.gz]), sorted by
//     name, the oldest are removed until MaxFiles−2 are left (default 5−2):
//     with the live log and the one rotated now the container keeps at
//     most MaxFiles files;
//  3. those not compressed yet are gzipped, with their mode, to
//     <name>.tmp, which is renamed to <name>.gz before <name> is removed;
//  4. the live log is renamed to <live>.<timestamp>, the timestamp the
//     clock's local time as 20060102-150405 (TimestampFormat), and not
//     compressed until the next rotation, as the container may write to it
//     until it reopens and log shippers may still read it;
//  5. the runtime reopens the live log. If it cannot, the rotated file is
//     renamed back to the live name, so the container's log is never lost
//     from where kubectl logs reads it, and ErrReopen is returned; the
//     next pass tries again.
//
// Only running containers are looked at. A container's earlier restarts
// (N.log with a smaller N, which kubectl logs --previous reads) and
// stopped containers are never touched by a pass; Clean removes the files
// of one container instance (<live> and <live>.*) when it is removed,
// leaving its other restarts' files.
//
// A file grows past the maximum size by what its container writes between
// two passes: at 5 MB/s with the default 10 s interval a live log reaches
// about 60 MB before it is rotated, in kubelet as here. A shorter interval
// bounds it closer.
//
// Each pass's work is bounded: one ListContainers, then per running
// container one ContainerStatus, one Lstat and, only when it rotates, one
// read of its directory, one removal per stale or excess file of that log,
// at most MaxFiles−2 compressions, and one rename and one reopen.
// Passes and Clean run one at a time. Errors of a pass are returned by
// RotateOnce joined, each naming its container, and logged by Run through
// the logr.Logger in the context; they are matched with errors.Is
// (ErrReopen, ErrRestore, ErrOutsideLogsDir, ErrNotRegular, and the
// runtime's classes such as runtime.ErrNotFound).
//
// # Differences from kubelet v1.37
//
//   - All file work is done through an os.Root opened on the pod logs
//     directory: a log path outside it is refused with ErrOutsideLogsDir
//     (kubelet rotates whatever path the runtime reports), symlinks never
//     lead out of it (a container's directory linked out of it fails with
//     os.Root's error), a live log that is not a regular file (a symlink) is
//     refused with ErrNotRegular, and rotated files that are symlinks are
//     neither compressed, counted nor removed by rotation (Clean removes
//     the links, never their targets). The temporary file of a compression
//     is created afresh (O_EXCL) where kubelet truncates whatever is there.
//   - A rotation that would reuse a timestamp already taken (two in one
//     second, when the interval is under a second) waits for the next
//     second; kubelet's rename replaces the earlier rotated file, and its
//     next pass then removes the later one as superseded by the earlier's
//     .gz.
//   - A container that went away between the list and its status is
//     skipped quietly; kubelet logs an error.
//   - Kubelet's workqueue and rate limiter are replaced by one pass that
//     hands each running container to one of the workers and waits for
//     them: no container is checked twice at once, Run never runs two
//     passes together, and Clean waits for the pass under way (kubelet's
//     Clean only waits for the listing).
//   - The options take bytes (WithMaxSize), not a quantity string;
//     parse one with k8s.io/apimachinery's resource.ParseQuantity.
//   - CleanLog and AllLogs (kubelet's GetAllLogs) are methods, confined to
//     the pod logs directory as the rest.
package containerlogs
