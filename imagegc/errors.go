package imagegc

import (
	"errors"
	"strings"
)

// Errors a pass returns, matchable with errors.Is. Their texts are
// kubelet's where kubelet has one.
var (
	// ErrInvalidPolicy: New was given thresholds kubelet's
	// NewImageGCManager refuses.
	ErrInvalidPolicy = errors.New("invalid image GC policy")
	// ErrNoImageFs: the runtime's ImageFsInfo named no image filesystem
	// (kubelet's "imageFs information is unavailable").
	ErrNoImageFs = errors.New("imageFs information is unavailable")
	// ErrInvalidCapacity: the image filesystem's capacity is 0 or unknown
	// (kubelet's text; event InvalidDiskCapacity).
	ErrInvalidCapacity = errors.New("invalid capacity 0 on image filesystem")
	// ErrInsufficientSpace: usage was over the high threshold and removing
	// every eligible image did not bring it down to the low one (event
	// FreeDiskSpaceFailed, with kubelet's message as the error's text).
	ErrInsufficientSpace = errors.New("failed to free sufficient space by deleting unused images")
	// ErrRemoveFailed: the runtime refused to remove one or more images;
	// the error also wraps each of the runtime's errors.
	ErrRemoveFailed = errors.New("image removal failed")
)

// passError carries kubelet's message as its text and wraps a sentinel and
// the causes, so errors.Is finds both.
type passError struct {
	msg  string
	errs []error
}

func (e *passError) Error() string   { return e.msg }
func (e *passError) Unwrap() []error { return e.errs }

// aggregate formats errs as apimachinery's errors.NewAggregate does: one
// distinct message alone, several as "[a, b]" (duplicates once).
func aggregate(errs []error) string {
	seen := map[string]bool{}
	var msgs []string
	for _, err := range errs {
		m := err.Error()
		if seen[m] {
			continue
		}
		seen[m] = true
		msgs = append(msgs, m)
	}
	if len(msgs) == 1 {
		return msgs[0]
	}
	return "[" + strings.Join(msgs, ", ") + "]"
}
