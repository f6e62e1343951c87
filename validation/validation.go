package validation

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ErrInvalidPod: the pod is one the API server would refuse. Every podstart
// entry point that writes to disk or starts anything returns an error
// matching it (errors.Is) before acting.
var ErrInvalidPod = errors.New("invalid pod")

// Error is an invalid pod and every reason the API server would give.
type Error struct {
	Namespace, Name string
	Errs            field.ErrorList
}

// Error names the pod and each bad field with the API server's message.
func (e *Error) Error() string {
	return fmt.Sprintf("%v: pod %s/%s: %v", ErrInvalidPod, e.Namespace, e.Name, e.Errs.ToAggregate())
}

// Is makes an Error match ErrInvalidPod.
func (e *Error) Is(target error) bool { return target == ErrInvalidPod }

// Check is what every podstart entry point asks before it acts: Pod, and
// no field set that the v1.37 API server drops from a new pod because its
// feature gate is off by default (emptyDir.mode, volume user and
// defaultUser fields, lifecycle.stopSignal, bindMountOptions, probes'
// grpc.mode, httpGet.protocol: kubelet never sees them, podstart does not honour them, and
// running the pod without them would drop them silently). It returns nil
// for a valid pod, otherwise an *Error that matches ErrInvalidPod. A nil
// pod is invalid.
func Check(pod *corev1.Pod) error {
	if pod == nil {
		return &Error{Errs: field.ErrorList{field.Required(field.NewPath("pod"), "")}}
	}
	errs := Pod(pod)
	errs = append(errs, droppedFields(&pod.Spec, field.NewPath("spec"))...)
	if len(errs) == 0 {
		return nil
	}
	return &Error{Namespace: pod.Namespace, Name: pod.Name, Errs: errs}
}

// Pod returns the field errors the API server's ValidatePodCreate would
// return for pod on the fields this package covers, with its paths and
// messages; none for a valid pod. Empty fields that the API server's
// defaulting fills are accepted (see the package doc).
func Pod(pod *corev1.Pod) field.ErrorList {
	if pod == nil {
		return field.ErrorList{field.Required(field.NewPath("pod"), "")}
	}
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	errs = append(errs, objectMeta(&pod.ObjectMeta, meta)...)
	errs = append(errs, podAnnotations(pod.Annotations, &pod.Spec, meta.Child("annotations"))...)
	errs = append(errs, podSpec(&pod.Spec, &pod.ObjectMeta, field.NewPath("spec"))...)
	errs = append(errs, annotationsMatchFields(pod.Annotations, &pod.Spec, field.NewPath("spec"))...)
	return errs
}

// objectMeta is the API server's ValidateObjectMeta for a pod, and
// podstart's own rule for the UID (see the package doc).
func objectMeta(m *metav1.ObjectMeta, fld *field.Path) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(m, m.Namespace != "", apivalidation.NameIsDNSSubdomain, fld)
	switch uid := string(m.UID); {
	case uid == "":
		errs = append(errs, field.Required(fld.Child("uid"), "podstart needs a UID: it names the pod's directories"))
	case uid == "." || uid == ".." || strings.ContainsAny(uid, "/\x00"):
		errs = append(errs, field.Invalid(fld.Child("uid"), uid, "must not contain '/' or NUL, nor be '.' or '..'"))
	}
	return errs
}

// Annotations the API server gives meaning to on a pod.
const (
	mirrorPodAnnotation          = "kubernetes.io/config.mirror"
	deletionCostAnnotation       = "controller.kubernetes.io/pod-deletion-cost"
	seccompPodAnnotation         = "seccomp.security.alpha.kubernetes.io/pod"
	seccompContainerAnnotation   = "container.seccomp.security.alpha.kubernetes.io/"
	appArmorContainerAnnotation  = corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix
	seccompRuntimeDefault        = "runtime/default"
	seccompDockerDefault         = "docker/default"
	seccompLocalhostPrefix       = corev1.SeccompLocalhostProfileNamePrefix
	appArmorLocalhostPrefix      = corev1.DeprecatedAppArmorBetaProfileNamePrefix
	appArmorRuntimeDefault       = corev1.DeprecatedAppArmorBetaProfileRuntimeDefault
	appArmorUnconfinedAnnotation = corev1.DeprecatedAppArmorBetaProfileNameUnconfined
)

// podAnnotations is ValidatePodSpecificAnnotations without the tolerations
// annotation (scheduling, not the node's).
func podAnnotations(ann map[string]string, spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if v, ok := ann[mirrorPodAnnotation]; ok {
		if spec.NodeName == "" {
			errs = append(errs, field.Invalid(fld.Key(mirrorPodAnnotation), v, "must set spec.nodeName if mirror pod annotation is set"))
		}
		if len(spec.EphemeralContainers) > 0 {
			// The ephemeralcontainers subresource's answer for a mirror pod.
			errs = append(errs, field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers"))
		}
	}
	if v, ok := ann[deletionCostAnnotation]; ok && !validDeletionCost(v) {
		errs = append(errs, field.Invalid(fld.Key(deletionCostAnnotation), v, "must be a 32bit integer"))
	}
	for k, v := range ann {
		switch {
		case k == seccompPodAnnotation || strings.HasPrefix(k, seccompContainerAnnotation):
			errs = append(errs, seccompAnnotation(v, fld.Child(k))...)
		case strings.HasPrefix(k, appArmorContainerAnnotation):
			name := strings.TrimPrefix(k, appArmorContainerAnnotation)
			// The pod is created without its ephemeral containers (they
			// come later through their subresource): an annotation naming
			// one names no container then.
			if !hasContainer(spec, name) {
				errs = append(errs, field.Invalid(fld.Key(k), name, "container not found"))
			}
			if v != "" && v != appArmorRuntimeDefault && v != appArmorUnconfinedAnnotation && !strings.HasPrefix(v, appArmorLocalhostPrefix) {
				errs = append(errs, field.Invalid(fld.Key(k), v, fmt.Sprintf("invalid AppArmor profile name: %q", v)))
			}
		}
	}
	return errs
}

// validDeletionCost: a 32-bit decimal integer with no sign but '-' and no
// leading zero (helper.GetDeletionCostFromPodAnnotations).
func validDeletionCost(v string) bool {
	if v == "" || !(v[0] == '-' || v == "0" || (v[0] >= '1' && v[0] <= '9')) {
		return false
	}
	_, err := strconv.ParseInt(v, 10, 32)
	return err == nil
}

// seccompAnnotation is ValidateSeccompProfile, for the deprecated
// annotations.
func seccompAnnotation(p string, fld *field.Path) field.ErrorList {
	switch {
	case p == seccompRuntimeDefault, p == seccompDockerDefault, p == corev1.SeccompProfileNameUnconfined:
		return nil
	case strings.HasPrefix(p, seccompLocalhostPrefix):
		return localDescendingPath(strings.TrimPrefix(p, seccompLocalhostPrefix), fld)
	}
	return field.ErrorList{field.Invalid(fld, p, "must be a valid seccomp profile")}
}

// hasContainer says whether spec has an init or app container named name.
func hasContainer(spec *corev1.PodSpec, name string) bool {
	for i := range spec.InitContainers {
		if spec.InitContainers[i].Name == name {
			return true
		}
	}
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return true
		}
	}
	return false
}

// CheckVolume is Check for a caller that sets up one volume of pod, which
// a caller may hand over apart from the pod (podsync's VolumeProvider
// Volume): the pod must be valid, and so must vol, with the API server's
// rules for a volume of that pod.
func CheckVolume(pod *corev1.Pod, vol *corev1.Volume) error {
	if err := Check(pod); err != nil {
		return err
	}
	if vol == nil {
		return &Error{Namespace: pod.Namespace, Name: pod.Name, Errs: field.ErrorList{field.Required(field.NewPath("volume"), "")}}
	}
	spec := corev1.PodSpec{Volumes: []corev1.Volume{*vol}, ServiceAccountName: pod.Spec.ServiceAccountName}
	_, errs := volumes(&spec, &pod.ObjectMeta, field.NewPath("spec"))
	errs = append(errs, droppedFields(&spec, field.NewPath("spec"))...)
	if len(errs) > 0 {
		return &Error{Namespace: pod.Namespace, Name: pod.Name, Errs: errs}
	}
	return nil
}

// annotationsMatchFields is ValidatePodCreate's
// validateSeccompAnnotationsAndFields and
// validateAppArmorAnnotationsAndFieldsMatchOnCreate: where a deprecated
// seccomp or AppArmor annotation and the field are both set, they must say
// the same. Ephemeral containers are not part of the pod created (they
// come through their subresource, which does not check this), and a
// container AppArmor annotation that makes a valid profile, on a container
// without its own, becomes the container's field before validation
// (applyAppArmorVersionSkew), so it agrees with itself.
func annotationsMatchFields(ann map[string]string, spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	if len(ann) == 0 {
		return nil
	}
	var errs field.ErrorList
	var podSeccomp *corev1.SeccompProfile
	var podAppArmor *corev1.AppArmorProfile
	if sc := spec.SecurityContext; sc != nil {
		podSeccomp, podAppArmor = sc.SeccompProfile, sc.AppArmorProfile
	}
	if v, ok := ann[seccompPodAnnotation]; ok && podSeccomp != nil {
		errs = append(errs, seccompMatches(v, podSeccomp, fld.Child("securityContext", "seccompProfile"))...)
	}
	windows := spec.OS != nil && spec.OS.Name == corev1.Windows
	visit := func(p *field.Path, c *corev1.Container) {
		var seccomp *corev1.SeccompProfile
		appArmor := podAppArmor
		if sc := c.SecurityContext; sc != nil {
			seccomp = sc.SeccompProfile
			if sc.AppArmorProfile != nil {
				appArmor = sc.AppArmorProfile
			}
		}
		if v, ok := ann[seccompContainerAnnotation+c.Name]; ok && seccomp != nil {
			errs = append(errs, seccompMatches(v, seccomp, p.Child("securityContext", "seccompProfile"))...)
		}
		if v, ok := ann[appArmorContainerAnnotation+c.Name]; ok && appArmor != nil && !windows {
			if c.SecurityContext == nil || c.SecurityContext.AppArmorProfile == nil {
				if f := appArmorFieldForAnnotation(v); f != nil && len(AppArmorProfile(f, &field.Path{})) == 0 {
					return
				}
			}
			errs = append(errs, appArmorMatches(v, appArmor, p.Child("securityContext", "appArmorProfile"))...)
		}
	}
	for i := range spec.InitContainers {
		visit(fld.Child("initContainers").Index(i), &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		visit(fld.Child("containers").Index(i), &spec.Containers[i])
	}
	return errs
}

// appArmorFieldForAnnotation is podutil.ApparmorFieldForAnnotation: the
// profile a deprecated AppArmor annotation stands for, or nil.
func appArmorFieldForAnnotation(v string) *corev1.AppArmorProfile {
	switch {
	case v == appArmorUnconfinedAnnotation:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	case v == appArmorRuntimeDefault:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
	case strings.HasPrefix(v, appArmorLocalhostPrefix) && len(v) > len(appArmorLocalhostPrefix):
		p := strings.TrimPrefix(v, appArmorLocalhostPrefix)
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: &p}
	}
	return nil
}

// seccompMatches is validateSeccompAnnotationsAndFieldsMatch.
func seccompMatches(v string, f *corev1.SeccompProfile, fld *field.Path) field.ErrorList {
	switch f.Type {
	case corev1.SeccompProfileTypeUnconfined:
		if v != corev1.SeccompProfileNameUnconfined {
			return field.ErrorList{field.Forbidden(fld.Child("type"), "seccomp type in annotation and field must match")}
		}
	case corev1.SeccompProfileTypeRuntimeDefault:
		if v != seccompRuntimeDefault && v != seccompDockerDefault {
			return field.ErrorList{field.Forbidden(fld.Child("type"), "seccomp type in annotation and field must match")}
		}
	case corev1.SeccompProfileTypeLocalhost:
		if !strings.HasPrefix(v, seccompLocalhostPrefix) {
			return field.ErrorList{field.Forbidden(fld.Child("type"), "seccomp type in annotation and field must match")}
		}
		if f.LocalhostProfile == nil || strings.TrimPrefix(v, seccompLocalhostPrefix) != *f.LocalhostProfile {
			return field.ErrorList{field.Forbidden(fld.Child("localhostProfile"), "seccomp profile in annotation and field must match")}
		}
	}
	return nil
}

// appArmorMatches is validateAppArmorAnnotationsAndFieldsMatchOnCreate's
// check of one container.
func appArmorMatches(v string, f *corev1.AppArmorProfile, fld *field.Path) field.ErrorList {
	switch f.Type {
	case corev1.AppArmorProfileTypeUnconfined:
		if v != appArmorUnconfinedAnnotation {
			return field.ErrorList{field.Forbidden(fld.Child("type"), "apparmor type in annotation and field must match")}
		}
	case corev1.AppArmorProfileTypeRuntimeDefault:
		if v != appArmorRuntimeDefault {
			return field.ErrorList{field.Forbidden(fld.Child("type"), "apparmor type in annotation and field must match")}
		}
	case corev1.AppArmorProfileTypeLocalhost:
		if !strings.HasPrefix(v, appArmorLocalhostPrefix) {
			return field.ErrorList{field.Forbidden(fld.Child("type"), "apparmor type in annotation and field must match")}
		}
		if f.LocalhostProfile == nil || strings.TrimPrefix(v, appArmorLocalhostPrefix) != *f.LocalhostProfile {
			return field.ErrorList{field.Forbidden(fld.Child("localhostProfile"), "apparmor profile in annotation and field must match")}
		}
	}
	return nil
}
