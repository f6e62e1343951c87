package containerlogs

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/runtime"
)

// rotator is one pass's view: the logs directory opened as an os.Root
// (nothing it does leaves it, symlinks included) and the policy.
type rotator struct {
	root     *os.Root
	rt       Runtime
	maxSize  int64
	maxFiles int
	clock    clock.PassiveClock
	log      logr.Logger
}

// check is kubelet's processContainer for the live log rel: a missing
// live log is reopened, one at or over the maximum size rotated.
func (r *rotator) check(ctx context.Context, id, rel string) error {
	info, err := r.root.Lstat(rel)
	if errors.Is(err, os.ErrNotExist) {
		// The runtime writes to a file that is gone: ask it for a new one.
		if err := r.rt.ReopenContainerLog(ctx, id); err != nil {
			return fmt.Errorf("container log %q does not exist, %w: %w", rel, ErrReopen, runtime.Classify(err))
		}
		info, err = r.root.Lstat(rel)
	}
	if err != nil {
		return fmt.Errorf("failed to stat container log: %w", err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%w: %q is %v", ErrNotRegular, rel, info.Mode().Type())
	}
	if info.Size() < r.maxSize {
		return nil
	}
	return r.rotate(ctx, id, rel)
}

// rotate is kubelet's rotateLog: remove what earlier failures left, the
// oldest files beyond MaxFiles−2, compress the rotated files not yet
// compressed, then rename the live log and have the runtime reopen it.
func (r *rotator) rotate(ctx context.Context, id, rel string) error {
	dir := filepath.Dir(rel)
	rotated := rel + "." + r.clock.Now().Format(TimestampFormat)
	// Two rotations in one second would give the same name; kubelet's
	// rename then replaces the earlier file. Wait for the next second.
	for _, name := range []string{rotated, rotated + compressSuffix} {
		if _, err := r.root.Lstat(name); err == nil {
			r.log.V(2).Info("Container log was rotated this second already, waiting for the next", "containerID", id, "path", rel)
			return nil
		}
	}
	names, err := rotatedFiles(r.root, rel)
	if err != nil {
		return fmt.Errorf("failed to list rotated logs of %q: %w", rel, err)
	}
	inuse, unused := splitUnused(names)
	for _, name := range unused {
		if err := r.root.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("failed to remove unused log %q: %w", name, err)
		}
	}
	// The live log and the one about to be rotated are two of MaxFiles;
	// the oldest others go, oldest first, so that a reader of the newer
	// ones is not disturbed.
	keep := max(r.maxFiles-2, 0)
	for len(inuse) > keep {
		if err := r.root.Remove(filepath.Join(dir, inuse[0])); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("failed to remove old log %q: %w", inuse[0], err)
		}
		inuse = inuse[1:]
	}
	for _, name := range inuse {
		if strings.HasSuffix(name, compressSuffix) {
			continue
		}
		if err := compress(r.root, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("failed to compress log %q: %w", name, err)
		}
	}
	return r.rotateLatest(ctx, id, rel, rotated)
}

// rotateLatest is kubelet's rotateLatestLog: the live log is renamed, not
// compressed (the container may still write to it until it reopens, and
// log shippers finish reading it), and the runtime reopens it; if it
// cannot, the file gets its live name back, so the container's log stays
// where kubectl logs reads it and is rotated on a later pass.
func (r *rotator) rotateLatest(ctx context.Context, id, rel, rotated string) error {
	if err := r.root.Rename(rel, rotated); err != nil {
		return fmt.Errorf("failed to rotate log %q to %q: %w", rel, rotated, err)
	}
	err := r.rt.ReopenContainerLog(ctx, id)
	if err == nil {
		return nil
	}
	err = runtime.Classify(err)
	if rerr := r.root.Rename(rotated, rel); rerr != nil {
		return fmt.Errorf("%w %q: %w; %w (its content is in %q): %w", ErrReopen, id, err, ErrRestore, rotated, rerr)
	}
	return fmt.Errorf("%w %q: %w", ErrReopen, id, err)
}

// rotatedFiles lists the regular files named <live>.* beside the live log
// rel, sorted by name (oldest first: the suffix is a timestamp).
// Symlinks and directories are not the Manager's and are left out.
func rotatedFiles(root *os.Root, rel string) ([]string, error) {
	entries, err := readDir(root, filepath.Dir(rel))
	if err != nil {
		return nil, err
	}
	prefix := filepath.Base(rel) + "."
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), prefix) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

func readDir(root *os.Root, dir string) ([]fs.DirEntry, error) {
	d, err := root.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}

// splitUnused is kubelet's filterUnusedLogs: temporary files, and rotated
// files whose compressed copy exists (a compression cut short after its
// rename), are unused; the rest are in use. The order is kept.
func splitUnused(names []string) (inuse, unused []string) {
	for _, n := range names {
		switch {
		case strings.HasSuffix(n, tmpSuffix):
			unused = append(unused, n)
		case strings.HasSuffix(n, compressSuffix):
			inuse = append(inuse, n)
		case slices.Contains(names, n+compressSuffix):
			unused = append(unused, n)
		default:
			inuse = append(inuse, n)
		}
	}
	return inuse, unused
}

// compress is kubelet's compressLog: name is gzipped to name.tmp with its
// mode, which is renamed to name.gz, then name is removed.
func compress(root *os.Root, name string) (err error) {
	src, err := root.Open(name)
	if err != nil {
		return err
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		return err
	}
	tmp := name + tmpSuffix
	// A stale temporary file (or a symlink by that name) is removed, not
	// opened: O_EXCL creates a new file or fails.
	if err := root.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	dst, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
	if err != nil {
		return fmt.Errorf("failed to create temporary log %q: %w", tmp, err)
	}
	defer func() {
		if err != nil {
			dst.Close()
			root.Remove(tmp)
		}
	}()
	w := gzip.NewWriter(dst)
	if _, err := io.Copy(w, src); err != nil {
		return fmt.Errorf("failed to compress %q to %q: %w", name, tmp, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("failed to compress %q to %q: %w", name, tmp, err)
	}
	if err := dst.Close(); err != nil {
		return fmt.Errorf("failed to write %q: %w", tmp, err)
	}
	if err := root.Rename(tmp, name+compressSuffix); err != nil {
		return fmt.Errorf("failed to rename %q to %q: %w", tmp, name+compressSuffix, err)
	}
	src.Close()
	if err := root.Remove(name); err != nil {
		return fmt.Errorf("failed to remove log %q after compress: %w", name, err)
	}
	return nil
}
