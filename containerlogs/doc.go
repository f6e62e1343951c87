// Package containerlogs rotates the log files of a node's running
// containers, as kubelet's ContainerLogManager (pkg/kubelet/logs) does,
// so that a container writing without pause cannot fill the node's disk,
// and reads them for kubectl logs, as kubelet's log reader
// (k8s.io/cri-client/pkg/logs, which kubelet v1.37 calls from
// pkg/kubelet/kuberuntime) does.
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
// # Reading a log
//
// ReadLogs reads one container log file, the live one the runtime reports
// (ContainerStatus's log path): like kubelet it never reads the rotated
// files (<live>.<timestamp>[.gz]), so after a rotation kubectl logs starts
// at the live file's beginning. NewLogOptions converts the API's
// PodLogOptions as kubelet does; ValidateLogOptions refuses what kubelet's
// server refuses (422) and StreamWriters picks the writers for the stream
// option as kubelet's server does (v1.37: PodLogsQuerySplitStreams is off
// by default, so only All, or no stream, is served; ErrStreamNotEnabled
// otherwise, kubelet's 400 and text).
//
// The file's format is decided by its first line read: the CRI format
//
//	2016-10-06T00:17:09.669794202Z stdout P part of a line
//	2016-10-06T00:17:09.669794203Z stderr F its end
//
// (ParseCRILine), else Docker's JSON log format (ParseDockerJSONLine), else
// the read fails with ErrUnsupportedLogFormat. Lines that do not parse
// after that are skipped. Each line's content goes to the writer of its
// stream; a nil writer skips the stream's lines without counting their
// bytes. A partial (P) line's content has no newline, so the container's
// line is joined on output; with Timestamp, the time and a space go before
// content that starts a line (the previous content written, of either
// stream, ended with a newline).
//
//   - TailLines n starts at the (n+1)-th newline from the end: the last n
//     lines of the file, partial ones each counted, a last line without a
//     newline not counted. The file is read backwards in 32 KiB blocks
//     until they are found; a tail larger than the file is the whole file
//     without reading. Without Follow, at most n lines are then written
//     (lines skipped by Since or a nil writer count).
//   - Since skips lines with an earlier time (an equal time is kept).
//   - LimitBytes stops the read once that many bytes are written,
//     timestamps included, cutting the last line.
//   - Without Follow the read ends at the end of the file; a last line
//     without a newline is written as it is.
//   - With Follow, at the end of the file ReadLogs asks the runtime whether
//     the container runs (ContainerStatus; an unavailable runtime counts as
//     running) and, if so, waits for an event of the log's directory or
//     1 s, and reads on. A line without its newline yet is read again once
//     it is whole. When the live name is created anew (the runtime
//     reopened the log after a rotation) the new file is read from its
//     start. Once the container is seen stopped, the file is read to its
//     end and ReadLogs returns nil; when ctx ends it returns an error
//     matching ErrContextCancelled and ctx.Err(), with kubelet's text
//     "context cancelled".
//
// Memory is bounded by the longest line in the file (runtimes split lines
// at 16 KiB), whatever TailLines, LimitBytes and the file's size: lines
// are read through a 4 KiB buffer and written one at a time from the
// calling goroutine, so a slow writer slows the read and nothing is
// buffered for it. A Write that never returns blocks ReadLogs, even past
// ctx: the HTTP server must bound its writes (a write deadline, or closing
// the connection when the client goes). A follow that returns leaves no
// goroutine, file or watch behind.
//
// Follows share one fsnotify watcher (one inotify instance) per process,
// and one watch per directory, made when the first follow waits and
// closed, with its one goroutine, when the last ends. Kubelet makes an
// inotify instance per follow, so a node's concurrent follows stop at the
// per-user limit (fs.inotify.max_user_instances, 128 on many
// distributions) with "too many open files"; here 1,000 follows of one
// file hold one instance and one watch.
//
// # Differences from kubelet v1.37
//
//   - Reading: when the runtime reopens the live log while a follow reads
//     the rotated file, kubelet switches to the new file at once and loses
//     what the container wrote to the old one since its last read (the
//     lines between the rotation's rename and the runtime's reopen);
//     ReadLogs reads the old file to its end first. A reopen that finds
//     the file it already reads is not read again from its start. A watch
//     error counts against the five kubelet lets pass in one wait,
//     delivered to every follow of the watcher. A negative LimitBytes,
//     which kubelet's API validation refuses and on which its reader
//     panics, fails with ErrInvalidLogOptions. Errors wrap the os error
//     (os.ErrNotExist) where kubelet formats it with %v; the texts are
//     kubelet's, except that a first line in no log format is not quoted
//     (it may be any file's content).
//   - ReadLogs does not resolve symlinks (kubelet's EvalSymlinks): the
//     live log is opened beneath its directory, ReadLogsIn's beneath the
//     pod logs directory through an os.Root, as rotation opens it; a
//     symlink, a FIFO or anything else that is no regular file there is
//     refused with ErrNotRegular, and a FIFO is never waited on.
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
