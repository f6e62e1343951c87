package csi

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Error classes, matched with errors.Is.
var (
	// ErrInvalidName: a driver name, volume handle, spec (volume) name or
	// pod UID that would not make a safe path component, or that the API
	// server would not have accepted. The error names the field.
	ErrInvalidName = errors.New("invalid name")
	// ErrInvalidRequest: a request missing what kubelet requires (a volume
	// handle, a path, a size), or with settings that contradict each other.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrDriverNotRegistered: no driver of that name has registered (or it
	// has deregistered); kubelet's "not found in the list of registered
	// CSI drivers".
	ErrDriverNotRegistered = errors.New("not found in the list of registered CSI drivers")
	// ErrRegistration: a plugin refused at validation or registration
	// (versions, a duplicate name, NodeGetInfo's answer).
	ErrRegistration = errors.New("CSI driver registration failed")
	// ErrUncertain: the driver may still be working on the call (the call
	// timed out, was cancelled, or the driver answered Unavailable,
	// ResourceExhausted or Aborted): kubelet's UncertainProgressError. The
	// volume may be staged or published; the caller must retry or clean up,
	// never assume it is not.
	ErrUncertain = errors.New("operation outcome uncertain")
	// ErrNotSupported: the driver lacks the capability an operation needs
	// (NodeExpandVolume, NodeGetVolumeStats), or the CSIDriver object does
	// not allow the volume's lifecycle mode.
	ErrNotSupported = errors.New("not supported")
	// ErrUnsupported: a setting podstart does not honour, refused by name
	// (no silent drops).
	ErrUnsupported = errors.New("unsupported by podstart")
)

// isFinal is kubelet's isFinalError: a gRPC status other than Canceled,
// DeadlineExceeded, Unavailable, ResourceExhausted and Aborted means the
// driver is done with the call. A non-gRPC error is not final.
func isFinal(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.ResourceExhausted, codes.Aborted:
		return false
	}
	return true
}

// rpcError wraps an error from the driver: its message, scrubbed of any
// secret value the driver may have echoed, and ErrUncertain when the call
// may still be in progress. The gRPC status stays reachable through
// status.FromError on the wrapped value (Unwrap).
type rpcError struct {
	msg       string
	code      codes.Code
	uncertain bool
}

func (e *rpcError) Error() string { return e.msg }

// Is makes ErrUncertain match uncertain errors.
func (e *rpcError) Is(target error) bool { return target == ErrUncertain && e.uncertain }

// GRPCStatus lets status.FromError and status.Code see the driver's code.
func (e *rpcError) GRPCStatus() *status.Status { return status.New(e.code, e.msg) }

// wrapRPC turns a driver's error into an rpcError; uncertainty follows
// kubelet (classify is false for the calls kubelet does not classify:
// Unstage, Unpublish, NodeGetInfo, stats).
func wrapRPC(err error, secrets []map[string]string, classify bool) error {
	if err == nil {
		return nil
	}
	msg := redact(err.Error(), secrets...)
	return &rpcError{msg: msg, code: status.Code(err), uncertain: classify && !isFinal(err)}
}

// redact replaces every secret value found in s with "[redacted]"; a
// driver that echoes its request in an error must not leak it into events
// or logs.
func redact(s string, secrets ...map[string]string) string {
	for _, m := range secrets {
		for _, v := range m {
			if len(v) >= 4 && strings.Contains(s, v) {
				s = strings.ReplaceAll(s, v, "[redacted]")
			}
		}
	}
	return s
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidRequest}, args...)...)
}

// csiLog prefixes a message as kubelet's csi plugin does ("kubernetes.io/csi: ...").
func csiLog(format string, args ...any) string {
	return PluginName + ": " + fmt.Sprintf(format, args...)
}

// classErr carries kubelet's exact message and matches its class.
type classErr struct {
	msg   string
	class error
	cause error
}

func (e *classErr) Error() string        { return e.msg }
func (e *classErr) Is(target error) bool { return target == e.class }
func (e *classErr) Unwrap() error        { return e.cause }

func registrationErr(msg string) error { return &classErr{msg: msg, class: ErrRegistration} }

// settled is err behind prefix, no longer uncertain: where kubelet turns
// a driver's error into a plain or transient one (errors.New(log(...))),
// the volume's state is not uncertain either. The gRPC code stays.
func settled(prefix string, err error) error {
	return &rpcError{msg: prefix + ": " + err.Error(), code: status.Code(err)}
}

// classed is an error whose text is kubelet's alone (it goes into events
// and a claim's conditions) and which matches its class, and its cause,
// with errors.Is.
type classed struct {
	class error
	msg   string
	cause error
}

func (e *classed) Error() string { return e.msg }

func (e *classed) Unwrap() []error {
	if e.cause == nil {
		return []error{e.class}
	}
	return []error{e.class, e.cause}
}
