package containerlogs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime"
)

// Errors of ReadLogs, matched with errors.Is. Others wrap the os or
// runtime error they come from (os.ErrNotExist, runtime.ErrNotFound, ...)
// or are the writer's own.
var (
	// ErrContainerStatusNil: while following, the runtime answered
	// ContainerStatus with no status (kubelet's remote.ErrContainerStatusNil).
	ErrContainerStatusNil = errors.New("container status is nil")
	// ErrContextCancelled: the context of a follow was cancelled or timed
	// out; the error also matches the context's own error. Its text is
	// kubelet's, "context cancelled".
	ErrContextCancelled = errors.New("context cancelled")
	// ErrInvalidLogOptions: the options are ones kubelet's API validation
	// refuses (see ValidateLogOptions); ReadLogs refuses a negative
	// LimitBytes, on which kubelet's reader would panic.
	ErrInvalidLogOptions = errors.New("invalid log options")
)

// forceCheckPeriod is how long a follow waits with no file event before it
// reads again and asks whether the container still runs (kubelet's
// logForceCheckPeriod).
const forceCheckPeriod = time.Second

// ContainerStatusReader is what following a log needs of a CRI runtime:
// whether the container still runs. runtime.RuntimeService (runtime.Client
// and runtime/fake's Runtime) is one.
type ContainerStatusReader interface {
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
}

// LogOptions are the options of one read (kubelet's logs.LogOptions).
type LogOptions struct {
	// TailLines: only the last TailLines lines of the file are read; nil
	// for all, 0 for none. A negative value reads all.
	TailLines *int64
	// LimitBytes: at most this many bytes are written; nil for no limit.
	LimitBytes *int64
	// Since: lines with an earlier time are skipped.
	Since time.Time
	// Follow: at the end of the file, wait for more while the container
	// runs.
	Follow bool
	// Timestamp: each line is written after its time, in
	// TimestampOutFormat, and a space.
	Timestamp bool
}

// NewLogOptions converts the API's options as kubelet does at time now:
// Since is now−SinceSeconds, or SinceTime if that is later. Previous,
// Container and Stream are not options of a read: the caller picks the
// file (Previous) and the writers (Stream, see StreamWriters).
func NewLogOptions(apiOpts *corev1.PodLogOptions, now time.Time) LogOptions {
	o := LogOptions{
		TailLines:  apiOpts.TailLines,
		LimitBytes: apiOpts.LimitBytes,
		Follow:     apiOpts.Follow,
		Timestamp:  apiOpts.Timestamps,
	}
	if apiOpts.SinceSeconds != nil {
		o.Since = now.Add(-time.Duration(*apiOpts.SinceSeconds) * time.Second)
	}
	if apiOpts.SinceTime != nil && apiOpts.SinceTime.After(o.Since) {
		o.Since = apiOpts.SinceTime.Time
	}
	return o
}

// ReadLogs writes the container log at path to stdout and stderr, as
// kubelet's ReadLogs does (see the package doc): each line's content goes
// to the writer of its stream, or nowhere if that writer is nil, without
// counting towards LimitBytes. containerID and rt are only used when
// following, to stop when the container no longer runs. A read without
// Follow returns nil at the end of the file; a follow returns nil when the
// container has stopped and its log is read to the end, and an error
// matching ErrContextCancelled when ctx ends first. Writes are made one
// line at a time from the reading goroutine: a slow writer slows the read.
//
// The file is opened beneath its directory without following a symlink
// at path: one, or anything else that is no regular file (a FIFO, a
// directory), is refused with ErrNotRegular, without waiting for a FIFO's
// writer. ReadLogsIn also keeps the directories beneath the pod logs
// directory, as the Manager's rotation does.
func ReadLogs(ctx context.Context, path, containerID string, opts LogOptions, rt ContainerStatusReader, stdout, stderr io.Writer) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("failed to open log file %q: %w", path, err)
	}
	return ReadLogsIn(ctx, filepath.Dir(abs), abs, containerID, opts, rt, stdout, stderr)
}

// ReadLogsIn is ReadLogs of a log under logsDir (the pod logs directory,
// as WithPodLogsDir): a path outside it is refused with
// ErrOutsideLogsDir, and the file is opened through an os.Root on
// logsDir, as the Manager's rotation opens it, so that a symlink never
// leads out of logsDir and the live log must be a regular file
// (ErrNotRegular).
func ReadLogsIn(ctx context.Context, logsDir, path, containerID string, opts LogOptions, rt ContainerStatusReader, stdout, stderr io.Writer) error {
	return defaultHub.readLogs(ctx, logsDir, path, containerID, opts, rt, stdout, stderr)
}

// openLog opens rel beneath root for reading: what Lstat finds there must
// be a regular file (a symlink is not followed), opened without blocking
// (a FIFO put there after the Lstat does not wait for a writer) and, once
// open, still that file.
func openLog(root *os.Root, rel string) (*os.File, error) {
	info, err := root.Lstat(rel)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %q is %v", ErrNotRegular, rel, info.Mode().Type())
	}
	if afterLstat != nil {
		afterLstat(rel)
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || !os.SameFile(info, fi) {
		f.Close()
		return nil, fmt.Errorf("%w: %q changed while it was opened", ErrNotRegular, rel)
	}
	return f, nil
}

// afterLstat, if set (by tests), runs between openLog's Lstat and open.
var afterLstat func(rel string)

func (h *watchHub) readLogs(ctx context.Context, logsDir, path, containerID string, opts LogOptions, rt ContainerStatusReader, stdout, stderr io.Writer) error {
	if opts.LimitBytes != nil && *opts.LimitBytes < 0 {
		return fmt.Errorf("%w: limitBytes %d is negative", ErrInvalidLogOptions, *opts.LimitBytes)
	}
	log := logr.FromContextOrDiscard(ctx)
	rel, err := relativeTo(logsDir, path)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(logsDir)
	if err != nil {
		return fmt.Errorf("failed to open log file %q: %w", path, err)
	}
	defer root.Close()
	f, err := openLog(root, rel)
	if errors.Is(err, os.ErrNotExist) {
		// kubelet's text: its EvalSymlinks is the first to find it missing.
		return fmt.Errorf("failed to try resolving symlinks in path %q: %w", path, err)
	}
	if err != nil {
		return fmt.Errorf("failed to open log file %q: %w", path, err)
	}
	defer func() { f.Close() }()

	tail := int64(-1)
	if opts.TailLines != nil {
		tail = *opts.TailLines
	}
	size, err := f.Seek(0, io.SeekEnd)
	var start int64
	if err == nil {
		start, err = tailStart(f, tail, size)
	}
	if err != nil {
		return fmt.Errorf("failed to tail %d lines of log file %q: %w", tail, path, err)
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return fmt.Errorf("failed to seek %d in log file %q: %w", start, path, err)
	}

	limited := opts.TailLines != nil && !opts.Follow
	left := tail // lines still to write when limited
	r := bufio.NewReaderSize(f, readBufferSize)
	lr := lineReader{r: r}
	w := newLineWriter(stdout, stderr, opts)
	var (
		parse   lineFormat
		sub     *watchSub
		line    Line
		stop    bool
		newLine = true // the last content written ended a line
		running = true // the container ran at the last check
		reopen  bool   // the live file was created anew: switch at EOF
	)
	defer func() {
		if sub != nil {
			h.unsubscribe(sub)
		}
	}()
	dir, base := filepath.Dir(path), filepath.Base(path)

	for {
		if stop || (limited && left == 0) {
			return nil
		}
		raw, err := lr.next()
		if err != nil {
			if err != io.EOF {
				return fmt.Errorf("failed to read log file %q: %w", path, err)
			}
			if opts.Follow {
				if !running {
					return nil
				}
				// An incomplete line is read again once it is whole.
				if _, err := f.Seek(-int64(len(raw)), io.SeekCurrent); err != nil {
					return fmt.Errorf("failed to reset seek in log file %q: %w", path, err)
				}
				r.Reset(f)
				if reopen {
					reopen = false
					nf, err := openLog(root, rel)
					if err != nil {
						if errors.Is(err, os.ErrNotExist) {
							continue
						}
						return fmt.Errorf("failed to open log file %q: %w", path, err)
					}
					if sameFile(f, nf) {
						// Created anew again before we looked: the
						// file we read is already the live one.
						nf.Close()
						continue
					}
					f.Close()
					f = nf
					r.Reset(f)
					continue
				}
				if sub == nil {
					if sub, err = h.subscribe(dir, base); err != nil {
						return err
					}
					// Read again: a write may have come before the watch.
					continue
				}
				var recreated bool
				running, recreated, err = waitLogs(ctx, containerID, sub, rt)
				if err != nil {
					return err
				}
				reopen = reopen || recreated
				continue
			}
			stop = true
			if len(raw) == 0 {
				continue
			}
			log.V(2).Info("Incomplete line in log file", "path", path)
		}
		if parse == nil {
			if parse, err = detectFormat(raw); err != nil {
				return fmt.Errorf("failed to get parse function: %w", err)
			}
		}
		if err := parse(raw, &line); err != nil {
			log.V(4).Info("Skipping a line that does not parse", "path", path, "err", err)
			continue
		}
		if err := w.write(&line, newLine); err != nil {
			if errors.Is(err, errLimitReached) {
				return nil
			}
			return err
		}
		if limited {
			left--
		}
		newLine = len(line.Content) == 0 || line.Content[len(line.Content)-1] == '\n'
	}
}

// readBufferSize is the read buffer of a ReadLogs; lines longer than it
// are gathered in a buffer of their own, reused from line to line.
const readBufferSize = 4 << 10

// lineReader returns the file's lines one at a time, each valid until the
// next call: from the bufio.Reader's buffer when it fits, else gathered.
type lineReader struct {
	r    *bufio.Reader
	long []byte
}

// next returns the next line with its newline; at the end of the file, the
// incomplete rest (maybe empty) and io.EOF.
func (lr *lineReader) next() ([]byte, error) {
	b, err := lr.r.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return b, err
	}
	lr.long = append(lr.long[:0], b...)
	for {
		b, err = lr.r.ReadSlice('\n')
		lr.long = append(lr.long, b...)
		if err != bufio.ErrBufferFull {
			line := lr.long
			if cap(lr.long) > 1<<20 {
				lr.long = nil // keep no huge buffer for one huge line
			}
			return line, err
		}
	}
}

// waitLogs waits for the container's log to change, as kubelet's waitLogs:
// it first asks whether the container runs (if not, it returns at once
// with running false), then waits for an event of the log's directory, or
// forceCheckPeriod. recreated is true when the live file was created anew.
func waitLogs(ctx context.Context, containerID string, sub *watchSub, rt ContainerStatusReader) (running, recreated bool, err error) {
	if running, err := containerRunning(ctx, containerID, rt); !running || err != nil {
		return false, false, err
	}
	retries := watchErrorRetries
	t := time.NewTimer(forceCheckPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, false, &cancelledError{ctx.Err()}
		case <-sub.notify:
			ev := sub.take()
			if ev.errs > 0 {
				if ev.errs > retries {
					return false, false, ev.lastErr
				}
				retries -= ev.errs
			}
			if ev.changed {
				return true, ev.recreated, nil
			}
		case <-t.C:
			return true, false, nil
		}
	}
}

// containerRunning asks the runtime whether the container runs. An
// unavailable runtime counts as running, as in kubelet: containers outlive
// their runtime's restarts.
func containerRunning(ctx context.Context, id string, rt ContainerStatusReader) (bool, error) {
	if rt == nil {
		return false, fmt.Errorf("%w: following a log needs a runtime", ErrInvalidLogOptions)
	}
	resp, err := rt.ContainerStatus(ctx, id, false)
	if err != nil {
		if errors.Is(runtime.Classify(err), runtime.ErrUnavailable) {
			return true, nil
		}
		return false, err
	}
	st := resp.GetStatus()
	if st == nil {
		return false, ErrContainerStatusNil
	}
	return st.State == runtimeapi.ContainerState_CONTAINER_RUNNING, nil
}

// cancelledError reads "context cancelled", kubelet's text, and matches
// both ErrContextCancelled and the context's error.
type cancelledError struct{ ctxErr error }

func (e *cancelledError) Error() string { return ErrContextCancelled.Error() }

func (e *cancelledError) Is(target error) bool { return target == ErrContextCancelled }

func (e *cancelledError) Unwrap() error { return e.ctxErr }

// errLimitReached ends a read when LimitBytes are written.
var errLimitReached = errors.New("maximum write")

// lineWriter writes lines to their stream's writer, as kubelet's logWriter.
type lineWriter struct {
	stdout, stderr io.Writer
	since          time.Time
	timestamp      bool
	remain         int64
	buf            []byte // the timestamp prefix and the line, reused
}

func newLineWriter(stdout, stderr io.Writer, opts LogOptions) *lineWriter {
	w := &lineWriter{stdout: stdout, stderr: stderr, since: opts.Since, timestamp: opts.Timestamp, remain: math.MaxInt64}
	if opts.LimitBytes != nil {
		w.remain = *opts.LimitBytes
	}
	return w
}

// write writes l's content, after its time if timestamps are on and l
// starts a line, cut to the bytes left. It returns errLimitReached when no
// bytes are left, io.ErrShortWrite for a writer that wrote less without
// error.
func (w *lineWriter) write(l *Line, startsLine bool) error {
	if l.Time.Before(w.since) {
		return nil
	}
	out := l.Content
	if w.timestamp && startsLine {
		w.buf = l.Time.AppendFormat(w.buf[:0], TimestampOutFormat)
		w.buf = append(w.buf, ' ')
		w.buf = append(w.buf, out...)
		out = w.buf
	}
	if int64(len(out)) > w.remain {
		out = out[:w.remain]
	}
	var dst io.Writer
	switch l.Stream {
	case runtimeapi.Stdout:
		dst = w.stdout
	case runtimeapi.Stderr:
		dst = w.stderr
	default:
		return fmt.Errorf("%w %q", errUnexpectedStream, l.Stream)
	}
	if dst == nil {
		return nil
	}
	n, err := dst.Write(out)
	w.remain -= int64(n)
	if err != nil {
		return err
	}
	if n < len(out) {
		return io.ErrShortWrite
	}
	if w.remain <= 0 {
		return errLimitReached
	}
	return nil
}

// sameFile reports whether a and b are one file.
func sameFile(a, b *os.File) bool {
	sa, err := a.Stat()
	if err != nil {
		return false
	}
	sb, err := b.Stat()
	return err == nil && os.SameFile(sa, sb)
}
