package containerlogs

import (
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
)

// ErrStreamNotEnabled: a stream other than All was asked for while split
// streams are off, kubelet v1.37's default (the PodLogsQuerySplitStreams
// feature gate, alpha, off). Kubelet answers 400 Bad Request with this
// error's text.
var ErrStreamNotEnabled = errors.New("unable to return the given log stream")

// ErrInvalidStream: a stream that is none of All, Stdout and Stderr, with
// split streams on (kubelet: 400 Bad Request).
var ErrInvalidStream = errors.New("invalid stream type")

// ValidateLogOptions refuses what kubelet's server refuses before reading
// (pkg/apis/core/v1/validation.ValidatePodLogOptions; kubelet answers
// 422 Unprocessable Entity): a negative tailLines, a limitBytes or
// sinceSeconds under 1, both sinceSeconds and sinceTime, a stream that is
// none of All, Stdout and Stderr, and a stream other than All with
// tailLines. The error matches ErrInvalidLogOptions and names every field
// at fault.
func ValidateLogOptions(o *corev1.PodLogOptions) error {
	var errs []error
	if o.TailLines != nil && *o.TailLines < 0 {
		errs = append(errs, fmt.Errorf("tailLines: Invalid value: %d: must be greater than or equal to 0", *o.TailLines))
	}
	if o.LimitBytes != nil && *o.LimitBytes < 1 {
		errs = append(errs, fmt.Errorf("limitBytes: Invalid value: %d: must be greater than 0", *o.LimitBytes))
	}
	switch {
	case o.SinceSeconds != nil && o.SinceTime != nil:
		errs = append(errs, errors.New("Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case o.SinceSeconds != nil && *o.SinceSeconds < 1:
		errs = append(errs, fmt.Errorf("sinceSeconds: Invalid value: %d: must be greater than 0", *o.SinceSeconds))
	}
	if o.Stream != nil {
		switch *o.Stream {
		case corev1.LogStreamAll, corev1.LogStreamStdout, corev1.LogStreamStderr:
		default:
			errs = append(errs, fmt.Errorf("stream: Unsupported value: %q: supported values: %q, %q, %q",
				*o.Stream, corev1.LogStreamAll, corev1.LogStreamStdout, corev1.LogStreamStderr))
		}
		if *o.Stream != corev1.LogStreamAll && o.TailLines != nil {
			errs = append(errs, errors.New("Forbidden: `tailLines` and specific `stream` are mutually exclusive for now"))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidLogOptions, errors.Join(errs...))
}

// StreamWriters returns the writers ReadLogs is given for the API's
// stream option, as kubelet's server picks them: w for both when stream
// is nil or All; with splitStreams (kubelet's PodLogsQuerySplitStreams
// gate, off by default in v1.37) w for Stdout or Stderr only and nil for
// the other, whose lines are then skipped without counting towards
// limitBytes. Without splitStreams any other stream fails with
// ErrStreamNotEnabled, kubelet's text; with it an unknown stream fails
// with ErrInvalidStream.
func StreamWriters(stream *string, w io.Writer, splitStreams bool) (stdout, stderr io.Writer, err error) {
	if stream == nil || *stream == corev1.LogStreamAll {
		return w, w, nil
	}
	if !splitStreams {
		return nil, nil, fmt.Errorf("%w: %q. Please enable PodLogsQuerySplitStreams feature gate in kubelet", ErrStreamNotEnabled, *stream)
	}
	switch *stream {
	case corev1.LogStreamStdout:
		return w, nil, nil
	case corev1.LogStreamStderr:
		return nil, w, nil
	}
	return nil, nil, fmt.Errorf("%w %q", ErrInvalidStream, *stream)
}
