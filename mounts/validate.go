package mounts

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	podvalidation "github.com/podstart/podstart/validation"
)

// ErrInvalidName: a pod, container or volume name that becomes part of a
// host path is not one the API server would accept. It is
// validation.ErrInvalidPod: a bad name is one way a pod is invalid.
var ErrInvalidName = podvalidation.ErrInvalidPod

// ValidatePodNames checks, as the API server would, every name of pod that
// podstart turns into a host path: the UID (non-empty, no '/', no NUL, not
// "." or ".."), the namespace (a DNS-1123 label; empty is allowed, as for
// a pod not yet defaulted), the name (a DNS-1123 subdomain), the names of
// containers, init and ephemeral containers and volumes (DNS-1123 labels)
// and the volume names of volumeMounts. Make and podsync's SyncPod check
// the whole pod (validation.Check); ValidatePodNames is for code that
// only turns a pod's names into paths, such as cleanup of a pod whose
// spec may be gone. The error matches ErrInvalidName and names every bad
// field.
func ValidatePodNames(pod *corev1.Pod) error {
	if pod == nil {
		return fmt.Errorf("%w: pod is nil", ErrInvalidName)
	}
	if podNamesValid(pod) {
		return nil // every sync checks: the common case costs no allocation
	}
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	switch uid := string(pod.UID); {
	case uid == "":
		errs = append(errs, field.Required(meta.Child("uid"), ""))
	case uid == "." || uid == ".." || strings.ContainsAny(uid, "/\x00"):
		errs = append(errs, field.Invalid(meta.Child("uid"), uid, "must not contain '/' or NUL, nor be '.' or '..'"))
	}
	if pod.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(pod.Namespace) {
			errs = append(errs, field.Invalid(meta.Child("namespace"), pod.Namespace, msg))
		}
	}
	if pod.Name == "" {
		errs = append(errs, field.Required(meta.Child("name"), ""))
	}
	for _, msg := range validation.IsDNS1123Subdomain(pod.Name) {
		if pod.Name != "" {
			errs = append(errs, field.Invalid(meta.Child("name"), pod.Name, msg))
		}
	}
	spec := field.NewPath("spec")
	label := func(p *field.Path, name string) {
		if name == "" {
			errs = append(errs, field.Required(p, ""))
			return
		}
		for _, msg := range validation.IsDNS1123Label(name) {
			errs = append(errs, field.Invalid(p, name, msg))
		}
	}
	container := func(p *field.Path, c *corev1.Container) {
		label(p.Child("name"), c.Name)
		for j := range c.VolumeMounts {
			if c.VolumeMounts[j].Name == "" {
				continue // Make's own "has no volume name" error
			}
			label(p.Child("volumeMounts").Index(j).Child("name"), c.VolumeMounts[j].Name)
		}
	}
	for i := range pod.Spec.Volumes {
		label(spec.Child("volumes").Index(i).Child("name"), pod.Spec.Volumes[i].Name)
	}
	for i := range pod.Spec.InitContainers {
		container(spec.Child("initContainers").Index(i), &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		container(spec.Child("containers").Index(i), &pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		c := corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		container(spec.Child("ephemeralContainers").Index(i), &c)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: pod %s/%s: %v", ErrInvalidName, pod.Namespace, pod.Name, errs.ToAggregate())
}

// podNamesValid is ValidatePodNames' answer for a valid pod, without field
// paths or messages; anything it does not accept goes the long way, which
// names what is wrong.
func podNamesValid(pod *corev1.Pod) bool {
	uid := string(pod.UID)
	if uid == "" || uid == "." || uid == ".." || strings.ContainsAny(uid, "/\x00") {
		return false
	}
	if (pod.Namespace != "" && !isLabel(pod.Namespace)) || !isSubdomain(pod.Name) {
		return false
	}
	for i := range pod.Spec.Volumes {
		if !isLabel(pod.Spec.Volumes[i].Name) {
			return false
		}
	}
	container := func(name string, vms []corev1.VolumeMount) bool {
		if !isLabel(name) {
			return false
		}
		for j := range vms {
			if vms[j].Name != "" && !isLabel(vms[j].Name) {
				return false
			}
		}
		return true
	}
	for i := range pod.Spec.InitContainers {
		if !container(pod.Spec.InitContainers[i].Name, pod.Spec.InitContainers[i].VolumeMounts) {
			return false
		}
	}
	for i := range pod.Spec.Containers {
		if !container(pod.Spec.Containers[i].Name, pod.Spec.Containers[i].VolumeMounts) {
			return false
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if !container(pod.Spec.EphemeralContainers[i].Name, pod.Spec.EphemeralContainers[i].VolumeMounts) {
			return false
		}
	}
	return true
}

// isLabel and isSubdomain are the API server's name checks without
// regular expressions.
var (
	isLabel     = podvalidation.IsDNSLabel
	isSubdomain = podvalidation.IsDNSSubdomain
)
