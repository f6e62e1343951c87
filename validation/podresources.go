package validation

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Pod-level resources (spec.resources) are validated as the v1.37 API
// server's create path validates them with PodLevelResources on (beta, on
// by default since v1.34): validatePodResources, with
// validatePodResourceRequirements, validatePodResourceName and
// validatePodResourceConsistency. InPlacePodLevelResourcesVerticalScaling
// (on in v1.37) only changes the validation of updates (resizes), not of a
// new pod.
//
// What the API server validates is the pod after its defaulting: every
// quantity rounded up to milli-units, containers' missing requests equal to
// their limits (SetDefaults_Pod), then PrepareForCreate's
// DefaultPodLevelResources (PodLevelResourcesFixDefaulting, on in v1.37)
// when pod-level requests or limits are set: a hugepage limit the pod
// neither limits nor requests is the containers' aggregate limit; a cpu or
// memory request it does not set is the containers' aggregate request, then
// any cpu, memory or hugepage request still unset is the pod-level limit;
// and a pod-level request without a limit gets the limit max(request,
// aggregate container limits) when every container (init and ephemeral
// ones included) sets a limit for it. podResources computes those values
// into copies and validates them, so that a pod and the pod defaults.Pod
// gives (v1.36's defaulting of the pod-level requests, which v1.37's
// repeats and extends) get the same answer. One exception is defaults.Pod's,
// not this package's: v1.36 summed the containers' requests before rounding
// them, so containers' requests finer than milli-units (two of 0.0001 cpu)
// can give the defaulted pod an explicit request (1m) below the rounded
// containers' total (2m), which the API server refuses too.
//
// spec.overhead is validated as the API server's validateOverhead does: as
// a container's resource requirements with only limits (which defaulting
// rounds up to milli-units but does not copy into requests).

// podResources is the API server's validatePodResources (pod-level
// resources, PodLevelResources) and validateOverhead. fld is the spec's
// path.
func podResources(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Resources != nil {
		errs = append(errs, podLevelResources(spec, fld.Child("resources"))...)
	}
	if spec.Overhead != nil {
		errs = append(errs, requirements(&corev1.ResourceRequirements{Limits: spec.Overhead}, containerResourceName, false, fld.Child("overhead"))...)
	}
	return errs
}

// podLevelResources is validatePodResources on the defaulted spec.resources;
// fld is its path.
func podLevelResources(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	if spec.OS != nil && spec.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(fld, "may not be set for a windows pod")}
	}
	var errs field.ErrorList
	r := spec.Resources
	if r.Claims != nil {
		errs = append(errs, field.Forbidden(fld.Child("claims"), "claims may not be set for Resources at pod-level"))
	}
	ctrs := effectiveContainers(spec)
	pod := effectivePodResources(spec, ctrs)
	errs = append(errs, requirements(pod, podResourceName, false, fld)...)
	if len(r.Claims) > 0 {
		pc := &podContext{spec: spec}
		errs = append(errs, pc.resourceClaims(r.Claims, fld.Child("claims"))...)
	}
	return append(errs, podResourceConsistency(pod, ctrs, fld)...)
}

// supportedPodLevelResources is the list validatePodResourceName names.
var supportedPodLevelResources = sets.List(resourcehelper.SupportedPodLevelResources())

// podResourceName is validatePodResourceName: a valid resource name that
// pod-level resources support (cpu, memory, hugepages-<size>).
func podResourceName(name corev1.ResourceName, path func() *field.Path) field.ErrorList {
	if errs := resourceName(name, path); len(errs) > 0 {
		return errs
	}
	if !resourcehelper.IsSupportedPodLevelResource(name) {
		return field.ErrorList{field.NotSupported(path(), name, supportedPodLevelResources)}
	}
	return nil
}

// roundedList is list with every quantity rounded up to milli-units, in a
// new map (nil for a nil list).
func roundedList(list corev1.ResourceList) corev1.ResourceList {
	if list == nil {
		return nil
	}
	out := make(corev1.ResourceList, len(list))
	for name, q := range list {
		out[name] = roundedQuantity(q)
	}
	return out
}

// effectiveContainers is a pod holding copies of spec's app and init
// containers with their resources as defaulting leaves them: quantities
// rounded up to milli-units, a missing request equal to its limit. It is
// what resourcehelper aggregates (ephemeral containers have no resources).
func effectiveContainers(spec *corev1.PodSpec) *corev1.Pod {
	copyList := func(list []corev1.Container) []corev1.Container {
		if list == nil {
			return nil
		}
		out := make([]corev1.Container, len(list))
		for i := range list {
			out[i] = list[i]
			r := &out[i].Resources
			r.Limits = roundedList(r.Limits)
			r.Requests = roundedList(r.Requests)
			if r.Limits != nil && r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			for name, q := range r.Limits {
				if _, ok := r.Requests[name]; !ok {
					r.Requests[name] = q
				}
			}
		}
		return out
	}
	return &corev1.Pod{Spec: corev1.PodSpec{
		Containers:     copyList(spec.Containers),
		InitContainers: copyList(spec.InitContainers),
	}}
}

// effectivePodResources is spec.resources' requests and limits after the
// API server's defaulting (rounding, then DefaultPodLevelResources), in new
// maps; ctrs is effectiveContainers(spec).
func effectivePodResources(spec *corev1.PodSpec, ctrs *corev1.Pod) *corev1.ResourceRequirements {
	r := &corev1.ResourceRequirements{
		Limits:   roundedList(spec.Resources.Limits),
		Requests: roundedList(spec.Resources.Requests),
	}
	if len(r.Limits) == 0 && len(r.Requests) == 0 {
		return r
	}
	aggrLimits := resourcehelper.AggregateContainerLimits(ctrs, resourcehelper.PodResourcesOptions{})

	// defaultHugePagePodLevelLimits
	limits := r.Limits
	if limits == nil {
		limits = corev1.ResourceList{}
	}
	for name, total := range aggrLimits {
		if !isHugePages(name) {
			continue
		}
		if _, requested := r.Requests[name]; requested {
			continue
		}
		if _, ok := limits[name]; !ok {
			limits[name] = total
		}
	}
	if len(limits) > 0 {
		r.Limits = limits
	}

	// defaultPodLevelRequests
	requests := r.Requests
	if requests == nil {
		requests = corev1.ResourceList{}
	}
	for name, total := range resourcehelper.AggregateContainerRequests(ctrs, resourcehelper.PodResourcesOptions{}) {
		if _, ok := requests[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) && overcommitAllowed(name) {
			requests[name] = total
		}
	}
	for name, limit := range r.Limits {
		if _, ok := requests[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) {
			requests[name] = limit.DeepCopy()
		}
	}
	if len(requests) > 0 {
		r.Requests = requests
	}

	// defaultPodLevelLimits: a request without a limit, which every
	// container (init, app and ephemeral) limits.
	for name, request := range r.Requests {
		if !resourcehelper.IsSupportedPodLevelResource(name) {
			continue
		}
		if _, ok := r.Limits[name]; ok || !allContainersLimit(spec, name) {
			continue
		}
		total, ok := aggrLimits[name]
		if !ok {
			continue
		}
		if request.Cmp(total) > 0 {
			total = request
		}
		if r.Limits == nil {
			r.Limits = corev1.ResourceList{}
		}
		r.Limits[name] = total
	}
	return r
}

// allContainersLimit: every container of spec, ephemeral ones included,
// sets a limit for name.
func allContainersLimit(spec *corev1.PodSpec, name corev1.ResourceName) bool {
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			if _, ok := list[i].Resources.Limits[name]; !ok {
				return false
			}
		}
	}
	for i := range spec.EphemeralContainers {
		if _, ok := spec.EphemeralContainers[i].Resources.Limits[name]; !ok {
			return false
		}
	}
	return true
}

// sortedNames is list's resource names in order, for errors in a stable
// order (the API server's follows map iteration).
func sortedNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// podResourceConsistency is validatePodResourceConsistency on the defaulted
// pod-level resources pod and containers ctrs: pod-level requests are at
// least the containers' aggregate requests, pod-level hugepage limits at
// least their aggregate limits, and no app container's limit is above the
// pod-level one. fld is spec.resources' path.
func podResourceConsistency(pod *corev1.ResourceRequirements, ctrs *corev1.Pod, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	aggrRequests := resourcehelper.AggregateContainerRequests(ctrs, resourcehelper.PodResourcesOptions{})
	for _, name := range sortedNames(aggrRequests) {
		request, ok := pod.Requests[name]
		if !ok {
			continue
		}
		if total := aggrRequests[name]; total.Cmp(request) > 0 {
			errs = append(errs, field.Invalid(fld.Child("requests").Key(string(name)), request.String(),
				fmt.Sprintf("must be greater than or equal to aggregate container requests of %s", total.String())))
		}
	}
	aggrLimits := resourcehelper.AggregateContainerLimits(ctrs, resourcehelper.PodResourcesOptions{})
	for _, name := range sortedNames(aggrLimits) {
		if !isHugePages(name) {
			continue
		}
		limit, ok := pod.Limits[name]
		if !ok {
			continue
		}
		if total := aggrLimits[name]; total.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(fld.Child("limits").Key(string(name)), limit.String(),
				fmt.Sprintf("must be greater than or equal to aggregate container limits of %s", total.String())))
		}
	}
	for i := range ctrs.Spec.Containers {
		limits := ctrs.Spec.Containers[i].Resources.Limits
		for _, name := range sortedNames(limits) {
			podLimit, ok := pod.Limits[name]
			if !ok {
				continue
			}
			if limit := limits[name]; limit.Cmp(podLimit) > 0 {
				errs = append(errs, field.Invalid(fld.Child("containers").Index(i).Key(string(name)).Child("limits"), limit.String(),
					fmt.Sprintf("must be less than or equal to pod limits of %s", podLimit.String())))
			}
		}
	}
	return errs
}
