package criconfig

import (
	"errors"
	"fmt"
)

// Errors the configs are refused with; each error returned matches one
// with errors.Is. podsync reports them as CreateContainerConfigError (or a
// failed sandbox creation).
var (
	// ErrUnsupported: the pod asks for a setting podstart cannot honour on
	// this node; the error names the field. The container is not created.
	ErrUnsupported = errors.New("setting not supported")
	// ErrRunAsNonRoot: runAsNonRoot is set and the container would run as
	// root (or its image's user cannot be verified).
	ErrRunAsNonRoot = errors.New("runAsNonRoot violated")
	// ErrUnknownNodeFact: building the config needs a fact about the node
	// that Node does not carry (its IPs, its allocatable resources), so a
	// value kubelet would send cannot be known; the error names the fact
	// and the pod field that needs it. FromHost fills what the host can
	// tell; a caller can set the fields itself.
	ErrUnknownNodeFact = errors.New("node fact unknown")
)

func unknownNodeFact(format string, args ...any) error {
	return classErrorf(ErrUnknownNodeFact, format, args...)
}

// classError carries kubelet's message unchanged and matches its class
// with errors.Is.
type classError struct {
	class error
	msg   string
}

func (e *classError) Error() string        { return e.msg }
func (e *classError) Is(target error) bool { return target == e.class }

func classErrorf(class error, format string, args ...any) error {
	return &classError{class: class, msg: fmt.Sprintf(format, args...)}
}
