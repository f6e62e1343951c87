package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Classes of runtime errors. Errors returned by the client from Dial and by
// runtime/fake match exactly one of them with errors.Is (or none, for codes
// that pod start does not need to tell apart); errors from any other
// implementation can be brought to the same form with Classify.
var (
	// ErrUnavailable: the runtime could not be reached (gRPC Unavailable),
	// including a runtime that went away in the middle of a call.
	ErrUnavailable = errors.New("container runtime unavailable")
	// ErrNotFound: the sandbox, container or image does not exist.
	ErrNotFound = errors.New("not found")
	// ErrDeadlineExceeded: the call's deadline passed before it finished.
	ErrDeadlineExceeded = errors.New("deadline exceeded")
	// ErrCanceled: the caller's context was cancelled.
	ErrCanceled = errors.New("canceled")
	// ErrUnimplemented: the runtime does not implement the method.
	ErrUnimplemented = errors.New("method not implemented by the runtime")
	// ErrUnauthorized: a registry refused the pull's credentials. CRI has no
	// code for this: containerd reports a registry 401 as Unknown with
	// "401 Unauthorized" in the text, which is recognised here and only here.
	ErrUnauthorized = errors.New("registry refused the credentials")
	// ErrRegistryUnavailable: the runtime said the registry is unavailable,
	// with the "RegistryUnavailable" text that CRI defines for it, or could
	// not reach it at all (connection refused, unknown host, timeout).
	ErrRegistryUnavailable = errors.New("RegistryUnavailable")
	// ErrSignatureValidationFailed: the runtime refused the image's signature,
	// with the "SignatureValidationFailed" text that CRI defines for it.
	ErrSignatureValidationFailed = errors.New("SignatureValidationFailed")
)

// Error is a classified runtime error. Its text is the underlying error's
// text unchanged (kubelet's messages quote it), Unwrap gives the underlying
// error (so status.FromError still works) and Is matches its class.
type Error struct {
	// Code is the gRPC code of the underlying error.
	Code codes.Code
	// Class is one of the Err... values above, or nil.
	Class error
	// Err is the error as the runtime or the transport returned it.
	Err error
}

// Error is the underlying error's text, unchanged.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the error's class.
func (e *Error) Is(target error) bool { return e.Class != nil && target == e.Class }

// Classify returns err wrapped in *Error with its class set, or nil for nil.
// It is idempotent, so it is safe to call on errors that are already
// classified.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	var ce *Error
	if errors.As(err, &ce) {
		return err
	}
	code := codeOf(err)
	return &Error{Code: code, Class: classOf(code, err), Err: err}
}

func codeOf(err error) codes.Code {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	}
	if s, ok := grpcStatus(err); ok {
		return s.Code()
	}
	return codes.Unknown
}

// grpcStatus finds the gRPC status inside err without rewriting its message
// (status.FromError replaces the message with the whole wrapped text).
func grpcStatus(err error) (*status.Status, bool) {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus(), true
	}
	return nil, false
}

func classOf(code codes.Code, err error) error {
	switch code {
	case codes.Unavailable:
		return ErrUnavailable
	case codes.NotFound:
		return ErrNotFound
	case codes.DeadlineExceeded:
		return ErrDeadlineExceeded
	case codes.Canceled:
		return ErrCanceled
	case codes.Unimplemented:
		return ErrUnimplemented
	case codes.Unauthenticated, codes.PermissionDenied:
		return ErrUnauthorized
	}
	msg := err.Error()
	if s, ok := grpcStatus(err); ok {
		msg = s.Message()
	}
	switch {
	case strings.HasPrefix(msg, ErrRegistryUnavailable.Error()):
		return ErrRegistryUnavailable
	case strings.HasPrefix(msg, ErrSignatureValidationFailed.Error()):
		return ErrSignatureValidationFailed
	case strings.Contains(msg, "401 Unauthorized"), strings.Contains(msg, "403 Forbidden"),
		// containerd 2.x's words for a registry that refused the
		// credentials (or wanted some).
		strings.Contains(msg, "pull access denied"), strings.Contains(msg, "authorization failed"):
		return ErrUnauthorized
	case registryUnreachable(msg):
		return ErrRegistryUnavailable
	}
	return nil
}

// registryUnreachable recognises containerd's and CRI-O's texts for a
// registry that cannot be reached at all (refused, unknown host, timed
// out, no route): the registry is unavailable, though the runtime does
// not say so with CRI's RegistryUnavailable prefix. The waiting reason
// stays kubelet's (ErrImagePull); only errors.Is learns more.
func registryUnreachable(msg string) bool {
	if !strings.Contains(msg, "dial tcp") && !strings.Contains(msg, "lookup ") {
		return false
	}
	for _, s := range []string{"connection refused", "no such host", "i/o timeout", "network is unreachable", "no route to host"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// GRPCStatus returns the gRPC status to send for err when serving CRI: the
// original status for an error from a runtime, the context's code for a
// context error, Unknown otherwise.
func GRPCStatus(err error) *status.Status {
	if s, ok := grpcStatus(err); ok {
		return s
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return status.New(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.New(codes.Canceled, err.Error())
	}
	return status.New(codes.Unknown, err.Error())
}

// ExitError reports a command run by ExecSync that exited non-zero.
type ExitError struct {
	Cmd      []string
	ExitCode int32
	Stderr   []byte
}

// Error names the command, its exit code and its stderr.
func (e *ExitError) Error() string {
	return fmt.Sprintf("command %q exited with %d: %s", strings.Join(e.Cmd, " "), e.ExitCode, e.Stderr)
}
