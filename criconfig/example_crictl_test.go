package criconfig_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/mounts"
)

// The files `crictl runp pod-config.json` and `crictl create <pod-id>
// container-config.json pod-config.json` read, as kubelet would send them.
func ExampleSandboxJSON() {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "1234"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}
	node := criconfig.Node{MemoryCapacity: 8 << 30}
	sandbox, err := criconfig.SandboxConfig(pod, 0, node)
	if err != nil {
		fmt.Println(err)
		return
	}
	podJSON, err := criconfig.SandboxJSON(sandbox) // write it to pod-config.json
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := criconfig.ContainerConfig(criconfig.Container{Pod: pod, Container: &pod.Spec.Containers[0], ImageRef: "nginx:1.27"}, node)
	if err != nil {
		fmt.Println(err)
		return
	}
	containerJSON, err := criconfig.ContainerJSON(c) // write it to container-config.json
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(podJSON[:84]))
	fmt.Println(len(containerJSON) > 0)
	// Output:
	// {
	//   "metadata": {
	//     "name": "web",
	//     "uid": "1234",
	//     "namespace": "shop"
	//   },
	// true
}

// A ContainerConfig with its mounts and no disk touched: mounts.Make over
// a MemDisk resolves the subPath and writes the hosts file and the
// termination log in memory; CRIMounts turns the result into CRI mounts.
func ExampleContainerConfig_mounts() {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "1234"},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "html", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
				VolumeMounts: []corev1.VolumeMount{{Name: "html", MountPath: "/usr/share/nginx/html", SubPath: "site", ReadOnly: true}}}},
		},
	}
	node := criconfig.Node{MemoryCapacity: 8 << 30}
	podDir := criconfig.PodDir(node, pod)
	volume := podDir + "/volumes/kubernetes.io~empty-dir/html"
	disk := &mounts.MemDisk{}
	disk.MkdirAll(volume, 0o777)
	ms, err := mounts.Make(context.Background(), mounts.Request{Pod: pod, Container: &pod.Spec.Containers[0],
		Volumes: mounts.VolumeMap{"html": {HostPath: volume}}, PodDir: podDir, PodIPs: []string{"10.1.2.3"}},
		mounts.WithDisk(disk), mounts.WithoutTerminationMessage())
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := criconfig.ContainerConfig(criconfig.Container{Pod: pod, Container: &pod.Spec.Containers[0], ImageRef: "nginx:1.27",
		Mounts: criconfig.CRIMounts(ms, false)}, node)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range c.Mounts {
		fmt.Println(m.ContainerPath, m.HostPath, m.Readonly)
	}
	// Output:
	// /usr/share/nginx/html /var/lib/kubelet/pods/1234/volumes/kubernetes.io~empty-dir/html/site true
	// /etc/hosts /var/lib/kubelet/pods/1234/etc-hosts false
}
