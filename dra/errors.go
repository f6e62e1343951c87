package dra

import "errors"

// Error classes, matched with errors.Is. The texts of the errors that wrap
// them are kubelet's.
var (
	// ErrClaimNotFound: a pod's claim made from a template has no
	// generated name in the pod's status yet (kubelet's
	// resourceclaim.ErrClaimNotFound).
	ErrClaimNotFound = errors.New("ResourceClaim not created yet")
	// ErrAPIUnsupported: a pod claim with neither resourceClaimName nor
	// resourceClaimTemplateName.
	ErrAPIUnsupported = errors.New("none of the supported fields are set")
	// ErrClaimNotUsable: the ResourceClaim is not for this pod: not
	// allocated, not reserved for the pod, not owned by it (template
	// claims), in another namespace, replaced by a claim of the same name,
	// or being unprepared.
	ErrClaimNotUsable = errors.New("ResourceClaim not usable by the pod")
	// ErrDriverNotRegistered: no plugin of the claim's driver is
	// registered (kubelet's "DRA driver %s is not registered").
	ErrDriverNotRegistered = errors.New("DRA driver not registered")
	// ErrRegistration: a plugin refused at validation or registration.
	ErrRegistration = errors.New("DRA plugin registration failed")
	// ErrDriver: the driver's NodePrepareResources or
	// NodeUnprepareResources failed, or answered what kubelet refuses (a
	// result for an unknown claim, a per-claim error, skipped claims), or
	// a CDI device ID that is not a fully qualified CDI name.
	ErrDriver = errors.New("DRA driver call failed")
	// ErrCheckpoint: the checkpoint could not be read (corrupt, bad
	// checksum, not a regular file, too large) or written.
	ErrCheckpoint = errors.New("DRA checkpoint")
	// ErrUnsupported: a claim setting podstart does not honour, refused by
	// name (kubelet's default feature gates refuse it too).
	ErrUnsupported = errors.New("unsupported by podstart")
)

// classErr carries kubelet's text and a class for errors.Is.
type classErr struct {
	msg   string
	class error
	cause error
}

func (e *classErr) Error() string { return e.msg }

func (e *classErr) Unwrap() []error {
	if e.cause == nil {
		return []error{e.class}
	}
	return []error{e.class, e.cause}
}
