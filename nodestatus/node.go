package nodestatus

import (
	goruntime "runtime"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Node labels and annotations kubelet sets beside the stable ones in
// k8s.io/api/core/v1.
const (
	// LabelOSBeta and LabelArchBeta are kubelet's deprecated beta labels,
	// still set on every node.
	LabelOSBeta   = "beta.kubernetes.io/os"
	LabelArchBeta = "beta.kubernetes.io/arch"
	// AnnotationControllerManagedAttach says the attach/detach controller,
	// not kubelet, attaches the node's volumes.
	AnnotationControllerManagedAttach = "volumes.kubernetes.io/controller-managed-attach-detach"
	// TaintExternalCloudProvider keeps pods off a node until the external
	// cloud provider has initialised it.
	TaintExternalCloudProvider = "node.cloudprovider.kubernetes.io/uninitialized"
)

// Registration is what kubelet's initialNode takes from its flags.
type Registration struct {
	// Name is the node's name; Hostname its hostname (default Name).
	Name, Hostname string
	// Labels are kubelet's --node-labels; they override the defaults.
	Labels map[string]string
	// Taints are kubelet's --register-with-taints.
	Taints []corev1.Taint
	// ProviderID is kubelet's --provider-id.
	ProviderID string
	// ExternalCloudProvider is --cloud-provider=external: the node is
	// registered with the uninitialized taint.
	ExternalCloudProvider bool
	// KubeletAttachDetach is enableControllerAttachDetach: false (kubelet
	// attaches volumes itself); by default the controller does.
	KubeletAttachDetach bool
}

func (r Registration) hostname() string {
	if r.Hostname != "" {
		return r.Hostname
	}
	return r.Name
}

// InitialNode is kubelet's initialNode without its status (the setters
// fill that): hostname, OS and architecture labels (stable and beta), the
// taints, the controller-managed attach/detach annotation, the caller's
// labels over the defaults, and the provider ID. Windows build labels are
// not set.
func InitialNode(r Registration) *corev1.Node {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: r.Name, Labels: map[string]string{
		corev1.LabelHostname:   r.hostname(),
		corev1.LabelOSStable:   goruntime.GOOS,
		corev1.LabelArchStable: goruntime.GOARCH,
		LabelOSBeta:            goruntime.GOOS,
		LabelArchBeta:          goruntime.GOARCH,
	}}}
	taints := append([]corev1.Taint{}, r.Taints...)
	if r.ExternalCloudProvider {
		taints = append(taints, corev1.Taint{Key: TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule})
	}
	if len(taints) > 0 {
		node.Spec.Taints = taints
	}
	if !r.KubeletAttachDetach {
		node.Annotations = map[string]string{AnnotationControllerManagedAttach: "true"}
	}
	for k, v := range r.Labels {
		node.Labels[k] = v
	}
	node.Spec.ProviderID = r.ProviderID
	return node
}

// defaultLabels are the labels kubelet reconciles on a node registered
// before (updateDefaultLabels).
var defaultLabels = []string{
	corev1.LabelHostname, corev1.LabelTopologyZone, corev1.LabelTopologyRegion,
	corev1.LabelFailureDomainBetaZone, corev1.LabelFailureDomainBetaRegion,
	corev1.LabelInstanceTypeStable, corev1.LabelInstanceType,
	corev1.LabelOSStable, corev1.LabelArchStable, corev1.LabelWindowsBuild,
	LabelOSBeta, LabelArchBeta,
}

// Reconcile is what kubelet does to a node that exists when it registers:
// the attach/detach annotation, the default labels, capacity and
// allocatable if missing, and huge page sizes are made the initial node's.
// It changes existing and reports whether it must be patched.
func Reconcile(initial, existing *corev1.Node) bool {
	update := false
	// controller-managed attach/detach annotation
	want, set := initial.Annotations[AnnotationControllerManagedAttach]
	if have := existing.Annotations[AnnotationControllerManagedAttach]; have != want {
		if !set {
			delete(existing.Annotations, AnnotationControllerManagedAttach)
		} else {
			if existing.Annotations == nil {
				existing.Annotations = map[string]string{}
			}
			existing.Annotations[AnnotationControllerManagedAttach] = want
		}
		update = true
	}
	// default labels
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	for _, l := range defaultLabels {
		v, ok := initial.Labels[l]
		if !ok {
			continue
		}
		if existing.Labels[l] != v {
			existing.Labels[l] = v
			update = true
		}
		if existing.Labels[l] == "" {
			delete(existing.Labels, l)
		}
	}
	// default resources (kubelet runs this twice; once is enough)
	if existing.Status.Capacity == nil {
		if initial.Status.Capacity != nil {
			existing.Status.Capacity = initial.Status.Capacity.DeepCopy()
			update = true
		} else {
			existing.Status.Capacity = corev1.ResourceList{}
		}
	}
	if existing.Status.Allocatable == nil {
		if initial.Status.Allocatable != nil {
			existing.Status.Allocatable = initial.Status.Allocatable.DeepCopy()
			update = true
		} else {
			existing.Status.Allocatable = corev1.ResourceList{}
		}
	}
	// huge pages
	supported := map[corev1.ResourceName]bool{}
	for name, c := range initial.Status.Capacity {
		if !isHugePages(name) {
			continue
		}
		supported[name] = true
		a := initial.Status.Allocatable[name]
		have, ok := existing.Status.Capacity[name]
		haveAlloc := existing.Status.Allocatable[name]
		if !ok || have.Cmp(c) != 0 {
			existing.Status.Capacity[name] = c.DeepCopy()
			update = true
		}
		if !ok || haveAlloc.Cmp(a) != 0 {
			existing.Status.Allocatable[name] = a.DeepCopy()
			update = true
		}
	}
	for name := range existing.Status.Capacity {
		if isHugePages(name) && !supported[name] {
			delete(existing.Status.Capacity, name)
			delete(existing.Status.Allocatable, name)
			update = true
		}
	}
	return update
}

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}
