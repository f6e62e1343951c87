package images

import (
	"errors"
	"time"

	"github.com/podstart/podstart/runtime"
)

// Kubelet's image errors. Their texts are the container waiting reasons
// (ErrImagePull's text is "ErrImagePull", ErrImagePullBackOff's
// "ImagePullBackOff"), so a caller can put err.Error() in a status.
var (
	ErrImagePullBackOff = errors.New("ImagePullBackOff")
	ErrImageInspect     = errors.New("ImageInspectError")
	ErrImagePull        = errors.New("ErrImagePull")
	ErrImageNeverPull   = errors.New("ErrImageNeverPull")
	ErrInvalidImageName = errors.New("InvalidImageName")
	// ErrRegistryUnavailable and ErrSignatureValidationFailed are the
	// runtime package's classes, whose texts CRI defines.
	ErrRegistryUnavailable       = runtime.ErrRegistryUnavailable
	ErrSignatureValidationFailed = runtime.ErrSignatureValidationFailed
	// ErrPullStalled: a pull made no progress for the stall timeout
	// (beyond kubelet; it is also an ErrImagePull).
	ErrPullStalled = errors.New("image pull made no progress")
	// ErrNotImageVolume: EnsureImageVolume was given a volume that is
	// not an image volume.
	ErrNotImageVolume = errors.New("not an image volume")
	// ErrClosed: the manager was closed.
	ErrClosed = errors.New("image manager closed")
)

// Error is what EnsureImageExists returns on failure. Its text is the
// kubelet sentinel's (the waiting reason); errors.Is matches the sentinel
// and, through Err, the runtime's error class (for example
// runtime.ErrUnauthorized for a registry's 401).
type Error struct {
	Reason error // one of the sentinels above
	Err    error // the underlying error, if any
	// Until is when the pull back-off this failure is in, or started,
	// ends; zero when there is none. It is information: as kubelet's,
	// a pod worker retries a failed pull at its error period, not then
	// (podsync.MinBackOffExpiration).
	Until time.Time
}

// Error is the sentinel's text: the container waiting reason.
func (e *Error) Error() string { return e.Reason.Error() }

// Unwrap gives the sentinel and the underlying error.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Err}
}
