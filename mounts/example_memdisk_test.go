package mounts_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/mounts"
)

// A container's mounts computed with no file system: the subPath is made
// and resolved, the hosts file written and the termination log created
// in memory.
func ExampleMemDisk() {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "1234"},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Containers: []corev1.Container{{
				Name: "nginx", Image: "nginx:1.27", TerminationMessagePath: "/dev/termination-log",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/usr/share/nginx/html", SubPath: "site/html"}},
			}},
		},
	}
	disk := &mounts.MemDisk{}
	podDir := "/var/lib/kubelet/pods/1234"
	volume := podDir + "/volumes/kubernetes.io~empty-dir/data"
	if err := disk.MkdirAll(volume, 0o777); err != nil { // what the volume manager made
		fmt.Println(err)
		return
	}
	ms, err := mounts.Make(context.Background(), mounts.Request{
		Pod: pod, Container: &pod.Spec.Containers[0], PodDir: podDir, PodIPs: []string{"10.1.2.3"},
		Volumes: mounts.VolumeMap{"data": {HostPath: volume}},
	}, mounts.WithDisk(disk))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range ms {
		host := m.HostPath
		if m.ContainerPath == "/dev/termination-log" {
			host = filepath.Dir(host) + "/<random>"
		}
		fmt.Println(m.ContainerPath, "<-", host)
	}
	hosts, _ := disk.ReadFile(ms[1].HostPath)
	lines := strings.Split(strings.TrimSpace(string(hosts)), "\n")
	fmt.Println(lines[len(lines)-1]) // the pod's own line
	// Output:
	// /usr/share/nginx/html <- /var/lib/kubelet/pods/1234/volumes/kubernetes.io~empty-dir/data/site/html
	// /etc/hosts <- /var/lib/kubelet/pods/1234/etc-hosts
	// /dev/termination-log <- /var/lib/kubelet/pods/1234/containers/nginx/<random>
	// 10.1.2.3	web
}
