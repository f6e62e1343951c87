package containerlogs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime"
)

// Kubelet's defaults (KubeletConfiguration containerLogMaxSize,
// containerLogMaxFiles, containerLogMonitorInterval and
// containerLogMaxWorkers).
const (
	DefaultMaxSize         int64 = 10 * 1024 * 1024 // 10Mi
	DefaultMaxFiles              = 5
	DefaultMonitorInterval       = 10 * time.Second
	DefaultWorkers               = 1
)

// TimestampFormat is the layout of the suffix a rotated log gets
// (kubelet's: <live>.20060102-150405, in the clock's local time).
const TimestampFormat = "20060102-150405"

const (
	compressSuffix = ".gz"
	tmpSuffix      = ".tmp"
)

// Errors, matched with errors.Is. Errors of the runtime keep their class
// too (runtime.ErrNotFound, runtime.ErrUnavailable, ...).
var (
	// ErrInvalidOption: New was given a value kubelet refuses (MaxFiles
	// under 2) or one that cannot work (no workers, no interval).
	ErrInvalidOption = errors.New("containerlogs: invalid option")
	// ErrOutsideLogsDir: a container's log path is not inside the pod
	// logs directory; podstart does not touch it.
	ErrOutsideLogsDir = errors.New("container log path is outside the pod logs directory")
	// ErrNotRegular: the live log is not a regular file (a symlink, a
	// directory); it is not followed nor rotated.
	ErrNotRegular = errors.New("container log is not a regular file")
	// ErrReopen: the runtime refused ReopenContainerLog after the live log
	// was renamed; the live log was renamed back and is rotated again on
	// a later pass. The runtime's error is wrapped too.
	ErrReopen = errors.New("failed to reopen container log")
	// ErrRestore: after a failed reopen the rotated file could not be
	// renamed back to the live name. The log's content is in the rotated
	// file, which is kept; the container writes on to it.
	ErrRestore = errors.New("failed to restore the live container log")
)

// Runtime is what the Manager needs of a CRI runtime: the containers and
// their log paths, and ReopenContainerLog. runtime.Client (from
// runtime.Dial) and runtime/fake's Runtime are one.
type Runtime interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	runtime.ContainerLogReopener
}

// Option configures a Manager.
type Option func(*Manager)

// WithPodLogsDir sets the pod logs directory, the root the Manager works
// in (default podsync.DefaultPodLogsDir, /var/log/pods; the same as
// podsync.WithPodLogsDir).
func WithPodLogsDir(dir string) Option { return func(m *Manager) { m.dir = dir } }

// WithMaxSize sets the size in bytes at which a live log is rotated
// (kubelet's containerLogMaxSize; default 10Mi). A negative size turns
// rotation off, as in kubelet; Clean still works.
func WithMaxSize(bytes int64) Option { return func(m *Manager) { m.maxSize = bytes } }

// WithMaxFiles sets how many files a container's log may have, the live
// one included (kubelet's containerLogMaxFiles; default 5; at least 2).
func WithMaxFiles(n int) Option { return func(m *Manager) { m.maxFiles = n } }

// WithMonitorInterval sets how often Run checks the logs (kubelet's
// containerLogMonitorInterval; default 10 s).
func WithMonitorInterval(d time.Duration) Option { return func(m *Manager) { m.interval = d } }

// WithWorkers sets how many containers are checked at once
// (kubelet's containerLogMaxWorkers; default 1).
func WithWorkers(n int) Option { return func(m *Manager) { m.workers = n } }

// WithClock sets the clock for Run's ticks and the rotated files'
// timestamps.
func WithClock(c clock.WithTicker) Option { return func(m *Manager) { m.clock = c } }

// Manager rotates the logs of a node's running containers. It is safe for
// concurrent use; passes and cleans run one at a time.
type Manager struct {
	rt       Runtime
	dir      string
	maxSize  int64
	maxFiles int
	interval time.Duration
	workers  int
	clock    clock.WithTicker

	mu sync.Mutex // one pass or clean at a time
}

// New returns a Manager over rt with kubelet's defaults, changed by opts.
// It fails with ErrInvalidOption for MaxFiles under 2, workers under 1 or
// an interval that is not positive, and when the logs directory has no
// absolute form.
func New(rt Runtime, opts ...Option) (*Manager, error) {
	m := &Manager{rt: rt, dir: podsync.DefaultPodLogsDir, maxSize: DefaultMaxSize, maxFiles: DefaultMaxFiles,
		interval: DefaultMonitorInterval, workers: DefaultWorkers, clock: clock.RealClock{}}
	for _, o := range opts {
		o(m)
	}
	switch {
	case rt == nil:
		return nil, fmt.Errorf("%w: nil runtime", ErrInvalidOption)
	case m.maxFiles <= 1:
		return nil, fmt.Errorf("%w: invalid MaxFiles %d, must be > 1", ErrInvalidOption, m.maxFiles)
	case m.workers < 1:
		return nil, fmt.Errorf("%w: workers %d, must be >= 1", ErrInvalidOption, m.workers)
	case m.interval <= 0:
		return nil, fmt.Errorf("%w: monitor interval %v, must be > 0", ErrInvalidOption, m.interval)
	case m.dir == "":
		return nil, fmt.Errorf("%w: empty pod logs directory", ErrInvalidOption)
	}
	dir, err := filepath.Abs(m.dir)
	if err != nil {
		return nil, fmt.Errorf("%w: pod logs directory %q: %v", ErrInvalidOption, m.dir, err)
	}
	m.dir = dir
	return m, nil
}

// Run checks the logs at once and then every monitor interval until ctx
// ends; it returns then, after the pass under way. Errors of a pass are
// logged through the logr.Logger in ctx, as kubelet logs them; the next
// pass tries again. With rotation off it only waits for ctx.
func (m *Manager) Run(ctx context.Context) {
	if m.maxSize < 0 {
		<-ctx.Done()
		return
	}
	log := logr.FromContextOrDiscard(ctx)
	log.Info("Initializing container log rotate workers", "workers", m.workers, "monitorPeriod", m.interval)
	t := m.clock.NewTicker(m.interval)
	defer t.Stop()
	for {
		if err := m.RotateOnce(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "Failed to rotate container logs")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// RotateOnce makes one pass over the running containers, as one tick of
// Run: each container's live log at or over the maximum size is rotated.
// It returns the failures of all containers joined (each naming its
// container); one container's failure does not stop the others.
func (m *Manager) RotateOnce(ctx context.Context) error {
	if m.maxSize < 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	containers, err := m.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{})
	if err != nil {
		return fmt.Errorf("failed to list containers: %w", runtime.Classify(err))
	}
	// Only running containers write; a stopped one keeps its log as it is
	// (kubectl logs --previous reads it).
	ids := make([]string, 0, len(containers))
	for _, c := range containers {
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			ids = append(ids, c.GetId())
		}
	}
	if len(ids) == 0 {
		return nil
	}
	root, err := os.OpenRoot(m.dir)
	if err != nil {
		return fmt.Errorf("open pod logs directory: %w", err)
	}
	defer root.Close()
	r := &rotator{root: root, rt: m.rt, maxSize: m.maxSize, maxFiles: m.maxFiles, clock: m.clock, log: logr.FromContextOrDiscard(ctx)}

	var (
		emu  sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	next := make(chan string)
	for range min(m.workers, len(ids)) {
		wg.Go(func() {
			for id := range next {
				if err := m.check(ctx, r, id); err != nil {
					emu.Lock()
					errs = append(errs, fmt.Errorf("container %s: %w", id, err))
					emu.Unlock()
				}
			}
		})
	}
feed:
	for _, id := range ids {
		select {
		case next <- id:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// check rotates one container's log if it is due.
func (m *Manager) check(ctx context.Context, r *rotator, id string) error {
	if ctx.Err() != nil {
		return nil // reported once by RotateOnce
	}
	resp, err := m.rt.ContainerStatus(ctx, id, false)
	if err != nil {
		if err := runtime.Classify(err); errors.Is(err, runtime.ErrNotFound) {
			return nil // removed since the list
		} else {
			return fmt.Errorf("failed to get container status: %w", err)
		}
	}
	path := resp.GetStatus().GetLogPath()
	if path == "" {
		return nil // the container has no log file
	}
	rel, err := m.relative(path)
	if err != nil {
		return err
	}
	return r.check(ctx, id, rel)
}

// relative is path relative to the logs directory, or ErrOutsideLogsDir.
func (m *Manager) relative(path string) (string, error) { return relativeTo(m.dir, path) }

// relativeTo is path relative to dir, or ErrOutsideLogsDir.
func relativeTo(dir, path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%w: %q is not absolute", ErrOutsideLogsDir, path)
	}
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == "." || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%w: %q is not under %q", ErrOutsideLogsDir, path, dir)
	}
	return rel, nil
}

// Clean removes every log file of a container (kubelet's Clean): the live
// log and its rotated and compressed files, found from the container's
// status, so it is called before the container is removed from the
// runtime. The logs of the pod's other containers and of the container's
// other restarts (N.log) are left.
func (m *Manager) Clean(ctx context.Context, containerID string) error {
	resp, err := m.rt.ContainerStatus(ctx, containerID, false)
	if err != nil {
		return fmt.Errorf("failed to get container status %q: %w", containerID, runtime.Classify(err))
	}
	if resp.GetStatus() == nil {
		return fmt.Errorf("container status is nil for %q", containerID)
	}
	if resp.GetStatus().GetLogPath() == "" {
		return nil
	}
	if err := m.CleanLog(resp.GetStatus().GetLogPath()); err != nil {
		return fmt.Errorf("container %q: %w", containerID, err)
	}
	return nil
}

// CleanLog is Clean for a log path already known, such as the LogPath of
// a podsync container status whose container is gone from the runtime.
func (m *Manager) CleanLog(logPath string) error {
	rel, err := m.relative(logPath)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	root, err := os.OpenRoot(m.dir)
	if err != nil {
		return fmt.Errorf("open pod logs directory: %w", err)
	}
	defer root.Close()
	dir, base := filepath.Dir(rel), filepath.Base(rel)
	entries, err := readDir(root, dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() || e.Name() != base && !strings.HasPrefix(e.Name(), base+".") {
			continue
		}
		// Remove takes a symlink away, never what it points to.
		if err := root.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("failed to remove container log %q: %w", filepath.Join(m.dir, dir, e.Name()), err))
		}
	}
	return errors.Join(errs...)
}

// AllLogs is kubelet's GetAllLogs: the files of a live log that are in
// use, oldest first, the live one last (which need not exist): compressed
// and rotated files, not the temporary ones nor a rotated file whose
// compressed copy exists. Symlinks are left out.
func (m *Manager) AllLogs(logPath string) ([]string, error) {
	rel, err := m.relative(logPath)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(m.dir)
	if err != nil {
		return nil, fmt.Errorf("open pod logs directory: %w", err)
	}
	defer root.Close()
	rotated, err := rotatedFiles(root, rel)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	inuse, _ := splitUnused(rotated)
	out := make([]string, 0, len(inuse)+1)
	for _, name := range inuse {
		out = append(out, filepath.Join(m.dir, filepath.Dir(rel), name))
	}
	return append(out, filepath.Join(m.dir, rel)), nil
}
