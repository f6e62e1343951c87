package admission

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"

	corev1 "k8s.io/api/core/v1"
)

// ErrRejected is matched (errors.Is) by every refusal of this package: a
// *Rejection.
var ErrRejected = errors.New("pod rejected at admission")

// Reasons kubelet v1.37.2 writes in a rejected pod's status.reason (and
// its Warning event), by admit handler. A resource that does not fit gives
// InsufficientResourcePrefix and the resource's name ("OutOfcpu",
// "OutOfexample.com/dongle").
const (
	ReasonSysctlForbidden = "SysctlForbidden" // sysctl allowlist

	ReasonInvalidNodeInfo                      = "InvalidNodeInfo" // predicate: no node
	ReasonPodOSSelectorNodeLabelDoesNotMatch   = "PodOSSelectorNodeLabelDoesNotMatch"
	ReasonPodOSNotSupported                    = "PodOSNotSupported"
	ReasonSupplementalGroupsPolicyNotSupported = "SupplementalGroupsPolicyNotSupported"
	InsufficientResourcePrefix                 = "OutOf"
	ReasonOutOfCPU                             = "OutOfcpu"
	ReasonOutOfMemory                          = "OutOfmemory"
	ReasonOutOfEphemeralStorage                = "OutOfephemeral-storage"
	ReasonOutOfPods                            = "OutOfpods"
	// The scheduler plugins' names kubelet's general predicates report.
	ReasonNodeAffinity    = "NodeAffinity"
	ReasonNodeName        = "NodeName"
	ReasonNodePorts       = "NodePorts"
	ReasonTaintToleration = "TaintToleration"

	ReasonAppArmor = "AppArmor" // AppArmor admit handler

	// ReasonUnexpectedAdmissionError is kubelet's reason for an admission
	// that failed for a reason it could not classify (Admitter gives it
	// to an error of a Config.Before handler that is not a rejection).
	ReasonUnexpectedAdmissionError = "UnexpectedAdmissionError"
)

// Rejection is a pod refused at admission, with kubelet's reason and
// message. It matches ErrRejected.
type Rejection struct {
	reason, message string
	cause           error // a Config.Before handler's own error, if any
}

// Reject returns a rejection with reason and message.
func Reject(reason, message string) *Rejection { return &Rejection{reason: reason, message: message} }

// Reason is kubelet's status.reason for the pod, e.g. "SysctlForbidden".
func (r *Rejection) Reason() string { return r.reason }

// Message is kubelet's admit handler's message (kubelet's pod status
// prefixes it with "Pod was rejected: ": see StatusMessage).
func (r *Rejection) Message() string { return r.message }

func (r *Rejection) Error() string { return r.reason + ": " + r.message }

// Unwrap makes the rejection match ErrRejected, and the error of the
// Config.Before handler it came from, if any (eviction.ErrNodePressure).
func (r *Rejection) Unwrap() []error {
	if r.cause != nil {
		return []error{ErrRejected, r.cause}
	}
	return []error{ErrRejected}
}

// StatusMessage is the status.message kubelet's rejectPod writes for a
// rejection with message.
func StatusMessage(message string) string { return "Pod was rejected: " + message }

// Handler is one admit handler: nil admits the pod; an error refuses it
// (a *Rejection, or anything with Reason() and Message() methods, as
// eviction.AdmitError, keeps its reason). admitted are the pods already
// admitted and active on the node, the pod itself not among them.
type Handler func(ctx context.Context, pod *corev1.Pod, admitted []*corev1.Pod) error

// Config is what an Admitter needs to know of the node.
type Config struct {
	// Node returns the node (labels, taints, allocatable, features); fresh
	// asks for a read from the API server rather than a cache (kubelet
	// reads the node again when node affinity alone fails, as a label may
	// have just been added). Required. An error rejects the pod with
	// InvalidNodeInfo, as kubelet's.
	Node func(ctx context.Context, fresh bool) (*corev1.Node, error)
	// Sysctls is the node's allowlist: SafeSysctls for its kernel plus
	// kubelet's --allowed-unsafe-sysctls (NewSysctlAllowlist). Required.
	Sysctls *SysctlAllowlist
	// AppArmorEnabled: the host enforces AppArmor (criconfig.Node's
	// AppArmorEnabled). Without it a pod asking for an AppArmor profile
	// other than Unconfined is rejected, as kubelet rejects it.
	AppArmorEnabled bool
	// Before are handlers run first, in order: kubelet runs its eviction
	// manager's admit handler before all others (eviction.Manager.Admit,
	// wrapped).
	Before []Handler
	// Resources are handlers run after the sysctls and before the
	// predicates, in order: kubelet's allocate-resources admit handler
	// (its topology manager calling the device, CPU and memory managers'
	// Allocate for each container) sits there. devicemanager.Manager.Admit
	// is one.
	Resources []Handler
	// UpdatePluginResources, when set, adjusts the node the predicates
	// check the pod against (kubelet's predicate handler calls its
	// container manager's UpdatePluginResources there: allocatable of
	// device resources raised to the devices already given to the pod).
	// devicemanager.Manager.UpdatePluginResources is one. It is not
	// applied to a node read again fresh, as kubelet's is not.
	UpdatePluginResources func(pod *corev1.Pod, node *corev1.Node) *corev1.Node
}

// Admitter runs kubelet's admit handlers, in kubelet's order, for pods new
// to the node.
type Admitter struct {
	cfg Config
	os  string
}

// New returns an Admitter; Config.Node and Config.Sysctls are required.
func New(cfg Config) (*Admitter, error) {
	if cfg.Node == nil {
		return nil, errors.New("admission: Config.Node is required")
	}
	if cfg.Sysctls == nil {
		return nil, errors.New("admission: Config.Sysctls is required (NewSysctlAllowlist)")
	}
	return &Admitter{cfg: cfg, os: goruntime.GOOS}, nil
}

// Admit runs the handlers in kubelet v1.37.2's order and returns the first
// refusal (an error matching ErrRejected), or nil when the pod is
// admitted. admitted are the pods already admitted and still active on
// the node (kubelet's GetActivePods: not terminal, or terminal but still
// being killed); the pod itself is ignored among them. Admit neither
// blocks on anything but Config.Node nor changes its arguments.
func (a *Admitter) Admit(ctx context.Context, pod *corev1.Pod, admitted []*corev1.Pod) error {
	others := make([]*corev1.Pod, 0, len(admitted))
	for _, p := range admitted {
		if p != nil && p.UID != pod.UID {
			others = append(others, p)
		}
	}
	for _, h := range a.cfg.Before {
		if err := h(ctx, pod, others); err != nil {
			return asRejection(err)
		}
	}
	if err := a.cfg.Sysctls.Admit(pod); err != nil {
		return err
	}
	// Kubelet's topology manager (policy "none", its default) calls its
	// device, CPU and memory managers' Allocate (CPU and memory policies
	// "none" admit every pod): Config.Resources.
	for _, h := range a.cfg.Resources {
		if err := h(ctx, pod, others); err != nil {
			return asRejection(err)
		}
	}
	if err := a.predicates(ctx, pod, others); err != nil {
		return err
	}
	if a.os == "linux" {
		if err := AppArmor(pod, a.cfg.AppArmorEnabled); err != nil {
			return err
		}
	}
	// Kubelet's pod features handler refuses pod-level resources only when
	// the PodLevelResources gate is off (it is on); its node shutdown
	// manager admits every pod while graceful shutdown is off (its
	// default: shutdownGracePeriod 0).
	return nil
}

// predicates is kubelet's predicate admit handler.
func (a *Admitter) predicates(ctx context.Context, pod *corev1.Pod, others []*corev1.Pod) error {
	node, err := a.cfg.Node(ctx, false)
	if err != nil || node == nil {
		return Reject(ReasonInvalidNodeInfo, "Kubelet cannot get node info.")
	}
	if err := OS(pod, a.os); err != nil {
		return err
	}
	if err := SupplementalGroupsPolicy(pod, node); err != nil {
		return err
	}
	if a.cfg.UpdatePluginResources != nil {
		if n := a.cfg.UpdatePluginResources(pod, node); n != nil {
			node = n
		}
	}
	err = GeneralPredicates(pod, node, others)
	var r *Rejection
	if errors.As(err, &r) && onlyNodeAffinity(generalFailures(pod, node, others)) {
		// Kubelet reads the node again when node affinity is the only
		// failure, and tries once more.
		fresh, ferr := a.cfg.Node(ctx, true)
		if ferr != nil || fresh == nil {
			return err
		}
		return GeneralPredicates(pod, fresh, others)
	}
	return err
}

// asRejection keeps a handler's reason and message, or gives an
// unclassified error kubelet's UnexpectedAdmissionError.
func asRejection(err error) error {
	var r *Rejection
	if errors.As(err, &r) {
		return r
	}
	var rm interface {
		Reason() string
		Message() string
	}
	if errors.As(err, &rm) {
		return &Rejection{reason: rm.Reason(), message: rm.Message(), cause: err}
	}
	return &Rejection{reason: ReasonUnexpectedAdmissionError, message: fmt.Sprintf("Unexpected error while attempting to admit the pod: %v", err), cause: err}
}
