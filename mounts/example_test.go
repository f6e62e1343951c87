package mounts_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/mounts"
)

// The docker bind strings for a small pod: a read-only config volume, a
// data volume shared back to the host, and the termination log.
func ExampleDockerBinds() {
	hostToContainer := corev1.MountPropagationHostToContainer
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "1234"},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nginx-conf"}}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/web/data"}}},
			},
			Containers: []corev1.Container{{
				Name:  "nginx",
				Image: "nginx:1.27",
				VolumeMounts: []corev1.VolumeMount{
					{Name: "config", MountPath: "/etc/nginx", ReadOnly: true},
					{Name: "data", MountPath: "/data", MountPropagation: &hostToContainer},
				},
			}},
		},
	}
	volumes := mounts.VolumeMap{
		"config": {HostPath: "/srv/web/config", SELinuxRelabel: true},
		"data":   {HostPath: "/srv/web/data"},
	}
	ms, err := mounts.Make(context.Background(), mounts.Request{
		Pod: pod, Container: &pod.Spec.Containers[0], Volumes: volumes,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	binds, _ := mounts.DockerBinds(ms, true) // true: the node has SELinux
	for _, b := range binds {
		fmt.Println(b)
	}
	// Output:
	// /srv/web/config:/etc/nginx:ro,Z
	// /srv/web/data:/data:rslave
}
