package validation_test

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/defaults"
	"github.com/podstart/podstart/validation"
)

// A pod from a file or a test, not from an API server: default it as the
// API server would, then check it as the API server would, before anything
// acts on it.
func ExampleCheck() {
	mode := int32(0o4755) // a setuid file whose content comes from a Secret
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "../../etc"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
				VolumeMounts: []corev1.VolumeMount{{Name: "creds", MountPath: "/creds", SubPath: "../.."}}}},
			Volumes: []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: "creds", DefaultMode: &mode}}}},
		},
	}
	defaults.Pod(pod)
	err := validation.Check(pod)
	// As the API server, an invalid volume is no volume for the mounts.
	fmt.Println(errors.Is(err, validation.ErrInvalidPod))
	var invalid *validation.Error
	if errors.As(err, &invalid) {
		for _, e := range invalid.Errs {
			fmt.Println(e)
		}
	}
	// Output:
	// true
	// metadata.uid: Invalid value: "../../etc": must not contain '/' or NUL, nor be '.' or '..'
	// spec.volumes[0].secret.defaultMode: Invalid value: 2541: must be a number between 0 and 0777 (octal), both inclusive
	// spec.containers[0].volumeMounts[0].name: Not found: "creds"
	// spec.containers[0].volumeMounts.subPath: Invalid value: "../..": must not contain '..'
}
