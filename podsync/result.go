package podsync

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// SyncAction names one step of SyncPod, as kubelet's SyncResult does.
type SyncAction string

// Sync actions.
const (
	ActionStartContainer   SyncAction = "StartContainer"
	ActionKillContainer    SyncAction = "KillContainer"
	ActionCreatePodSandbox SyncAction = "CreatePodSandbox"
	// ActionConfigPodSandbox is kubelet's, which v1.36 no longer records:
	// a sandbox config that cannot be made fails the sync (SyncError
	// matching ErrConfigPodSandbox).
	ActionConfigPodSandbox SyncAction = "ConfigPodSandbox"
	ActionKillPodSandbox   SyncAction = "KillPodSandbox"
	ActionRemoveContainer  SyncAction = "RemoveContainer"
	ActionResizePodInPlace SyncAction = "ResizePodInPlace"
)

// Kubelet's errors for sync steps; their texts are container waiting
// reasons where kubelet uses them so.
var (
	ErrCrashLoopBackOff      = errors.New("CrashLoopBackOff")
	ErrRunContainer          = errors.New("RunContainerError")
	ErrKillContainer         = errors.New("KillContainerError")
	ErrCreatePodSandbox      = errors.New("CreatePodSandboxError")
	ErrConfigPodSandbox      = errors.New("ConfigPodSandboxError")
	ErrKillPodSandbox        = errors.New("KillPodSandboxError")
	ErrRemoveContainer       = errors.New("RemoveContainerError")
	ErrCreateContainerConfig = errors.New("CreateContainerConfigError")
	ErrCreateContainer       = errors.New("CreateContainerError")
	ErrPostStartHook         = errors.New("PostStartHookError")
	ErrResizePodInPlace      = errors.New("ResizePodInPlaceError")
)

// SyncResult is the outcome of one step.
type SyncResult struct {
	Action SyncAction
	// Target is the container name, or the pod's sandbox for sandbox steps.
	Target string
	// Err is nil on success, else an error matching one of the sentinels
	// above or of package images (and, through them, the runtime's class).
	Err error
	// Message explains a failure for people.
	Message string
	// Duration is how long the step took.
	Duration time.Duration
}

// Result is the outcome of a SyncPod (kubelet's PodSyncResult).
type Result struct {
	Results []*SyncResult
	// SyncError is a failure that belongs to no single step.
	SyncError error
	// RemountError is a failure to set up a running pod's volumes again
	// (a VolumeRemounter's, kubelet's remount of Secret, ConfigMap,
	// downward API and projected volumes at each sync). It is not part of
	// Error: as with kubelet, the containers keep the volume as last
	// written and the pod's status does not change; the volume is set up
	// again at the pod's next sync.
	RemountError error
	// RefreshAt is when the content of a running pod's volumes changes
	// with time alone (a service account token due for renewal), so the
	// pod should be synced again then; zero: never (VolumeRemounter).
	RefreshAt time.Time
}

func (r *Result) add(action SyncAction, target string) *SyncResult {
	sr := &SyncResult{Action: action, Target: target}
	r.Results = append(r.Results, sr)
	return sr
}

// Error sums up every failure as kubelet does, or returns nil. The error
// wraps each step's error, so errors.Is and errors.As see them.
func (r Result) Error() error {
	var errs []error
	var texts []string
	if r.SyncError != nil {
		errs = append(errs, r.SyncError)
		texts = append(texts, fmt.Sprintf("failed to SyncPod: %v", r.SyncError))
	}
	for _, sr := range r.Results {
		if sr.Err != nil {
			errs = append(errs, sr.Err)
			texts = append(texts, fmt.Sprintf("failed to %q for %q with %v: %q", sr.Action, sr.Target, sr.Err, sr.Message))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	// As kubelet's aggregate, a message said twice is written once.
	seen := map[string]bool{}
	uniq := texts[:0]
	for _, t := range texts {
		if !seen[t] {
			seen[t] = true
			uniq = append(uniq, t)
		}
	}
	return &syncError{text: strings.Join(uniq, ", "), errs: errs, distinct: len(uniq)}
}

type syncError struct {
	text     string
	errs     []error
	distinct int
}

func (e *syncError) Error() string {
	if e.distinct == 1 {
		return e.text
	}
	return "[" + e.text + "]"
}

func (e *syncError) Unwrap() []error { return e.errs }

// StepError is a step's error: its text is kubelet's sentinel (the waiting
// reason), and errors.Is matches both the sentinel and, through Err, the
// cause (a runtime class, a mounts or images error).
type StepError struct {
	Reason error
	Err    error
}

// Error is the sentinel's text, as kubelet reports a step's error.
func (e *StepError) Error() string { return e.Reason.Error() }

// Unwrap gives the sentinel and the cause.
func (e *StepError) Unwrap() []error { return []error{e.Reason, e.Err} }

func stepError(reason, err error) error { return &StepError{Reason: reason, Err: err} }

// BackOffError is a step refused because its container is in crash-loop
// back-off until a known time (kubelet's BackoffError, which v1.37.2 gives
// CrashLoopBackOff alone). errors.Is matches its Reason
// (ErrCrashLoopBackOff).
type BackOffError struct {
	Reason error
	Until  time.Time
}

// Error is the reason's text, the container's waiting reason.
func (e *BackOffError) Error() string { return e.Reason.Error() }

// Unwrap gives the reason.
func (e *BackOffError) Unwrap() error { return e.Reason }

// BackOffUntil is when the back-off ends.
func (e *BackOffError) BackOffUntil() time.Time { return e.Until }

// MinBackOffExpiration is kubelet's: the earliest end of a back-off among
// err and everything it wraps (each *BackOffError), and whether there is
// one. An image pull's back-off is not one: kubelet v1.37.2's pull errors
// carry no expiry, so a pod whose pull failed is retried at the pod
// worker's error period and, as the pull back-off doubles, its waiting
// reason alternates between ErrImagePull and ImagePullBackOff
// (images.Error.Until says when the pull back-off ends, for a caller's
// own use).
func MinBackOffExpiration(err error) (time.Time, bool) {
	var min time.Time
	found := false
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if b, ok := err.(*BackOffError); ok {
			if t := b.Until; !t.IsZero() && (!found || t.Before(min)) {
				min, found = t, true
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return min, found
}

// NextSync is when the pod should be synced again because a back-off
// ends: MinBackOffExpiration of the result's error. A pod worker sleeps
// until then instead of polling.
func (r Result) NextSync() (time.Time, bool) { return MinBackOffExpiration(r.Error()) }
