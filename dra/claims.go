package dra

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
)

// claimName is kubelet's resourceclaim.Name: the name of the
// ResourceClaim a pod claim stands for, nil when none was generated (a
// template the controller decided needs no claim), and whether the claim
// must be owned by the pod (made from a template).
func claimName(pod *corev1.Pod, pc *corev1.PodResourceClaim) (name *string, mustCheckOwner bool, err error) {
	switch {
	case pc.ResourceClaimName != nil:
		return pc.ResourceClaimName, false, nil
	case pc.ResourceClaimTemplateName != nil:
		for _, st := range pod.Status.ResourceClaimStatuses {
			if st.Name == pc.Name {
				return st.ResourceClaimName, true, nil
			}
		}
		return nil, false, &classErr{msg: fmt.Sprintf(`pod "%s/%s": %v`, pod.Namespace, pod.Name, ErrClaimNotFound), class: ErrClaimNotFound}
	default:
		return nil, false, &classErr{msg: fmt.Sprintf(`pod "%s/%s", spec.resourceClaim %q: %v`, pod.Namespace, pod.Name, pc.Name, ErrAPIUnsupported), class: ErrAPIUnsupported}
	}
}

// podClaims are the pod's claims as kubelet prepares them: spec's, then
// the claim the scheduler made for extended resources backed by DRA
// (DRAExtendedResource, GA in v1.37), which has no pod claim name.
func podClaims(pod *corev1.Pod) []corev1.PodResourceClaim {
	st := pod.Status.ExtendedResourceClaimStatus
	if st == nil {
		return pod.Spec.ResourceClaims
	}
	out := make([]corev1.PodResourceClaim, 0, len(pod.Spec.ResourceClaims)+1)
	out = append(out, pod.Spec.ResourceClaims...)
	name := st.ResourceClaimName
	return append(out, corev1.PodResourceClaim{ResourceClaimName: &name})
}

// isForPod is kubelet's resourceclaim.IsForPod (PodGroup owners are
// DRAWorkloadResourceClaims, off by default).
func isForPod(pod *corev1.Pod, claim *resourcev1.ResourceClaim) error {
	if claim.Namespace != pod.Namespace {
		return &classErr{msg: fmt.Sprintf("ResourceClaim %s/%s is not in the same namespace as Pod %s/%s", claim.Namespace, claim.Name, pod.Namespace, pod.Name), class: ErrClaimNotUsable}
	}
	if !metav1.IsControlledBy(claim, pod) {
		return &classErr{msg: fmt.Sprintf("ResourceClaim %s/%s was not created for Pod %s/%s (Pod is not owner)", claim.Namespace, claim.Name, pod.Namespace, pod.Name), class: ErrClaimNotUsable}
	}
	return nil
}

// isReservedForPod is kubelet's resourceclaim.IsReservedForPod: the pod's
// UID among the claim's consumers.
func isReservedForPod(pod *corev1.Pod, claim *resourcev1.ResourceClaim) bool {
	for _, r := range claim.Status.ReservedFor {
		if r.UID == pod.UID {
			return true
		}
	}
	return false
}

// newClaimInfo is kubelet's newClaimInfoFromClaim: an allocated claim's
// entry with one driver state per driver of its allocation results.
func newClaimInfo(claim *resourcev1.ResourceClaim) (*claimInfo, error) {
	if claim.Status.Allocation == nil {
		return nil, &classErr{msg: "not allocated", class: ErrClaimNotUsable}
	}
	states := make(map[string]DriverState)
	for _, r := range claim.Status.Allocation.Devices.Results {
		if len(r.SkipNodeOperations) > 0 {
			// Kubelet with its default gates refuses these claims with
			// this text.
			return nil, &classErr{msg: "DRAOptionalNodeOperations feature gate is disabled on kubelet", class: ErrUnsupported}
		}
		states[r.Driver] = DriverState{}
	}
	return &claimInfo{ClaimInfo: ClaimInfo{
		ClaimUID:    claim.UID,
		ClaimName:   claim.Name,
		Namespace:   claim.Namespace,
		PodUIDs:     sets.New[string](),
		DriverState: states,
	}}, nil
}

// cdiDevices is kubelet's cdiDevicesAsList: the CDI device IDs of the
// claim's devices for one request ("" for all; a device naming no request
// serves every request). Drivers come in name order (kubelet's in map
// order, which varies).
func (c *ClaimInfo) cdiDevices(request string, out []string) []string {
	drivers := make([]string, 0, len(c.DriverState))
	for name := range c.DriverState {
		drivers = append(drivers, name)
	}
	slices.Sort(drivers)
	for _, name := range drivers {
		for _, d := range c.DriverState[name].Devices {
			if request == "" || len(d.RequestNames) == 0 || slices.Contains(d.RequestNames, request) {
				out = append(out, d.CDIDeviceIDs...)
			}
		}
	}
	return out
}

// isDRAExtendedResourceName is the scheduler's IsDRAExtendedResourceName:
// an extended resource name (v1helper.IsExtendedResourceName) or a device
// class's implicit one.
func isDRAExtendedResourceName(name corev1.ResourceName) bool {
	s := string(name)
	if strings.HasPrefix(s, resourcev1.ResourceDeviceClassPrefix) {
		return true
	}
	if !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) || strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+s)) == 0
}
