package criconfig_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/criconfig"
)

// What would kubelet send for this pod? No runtime and no node needed.
func Example() {
	nonRoot, noEscalation := true, false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "1234"},
		Spec: corev1.PodSpec{
			DNSPolicy:       corev1.DNSClusterFirst,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &nonRoot},
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &noEscalation}}},
		},
	}
	node := criconfig.Node{ClusterDNS: []string{"10.96.0.10"}, MemoryCapacity: 8 << 30}

	sandbox, _ := criconfig.SandboxConfig(pod, 0, node)
	fmt.Println("sandbox:", sandbox.Linux.CgroupParent, sandbox.DnsConfig.Servers, sandbox.Linux.SecurityContext.Seccomp.ProfileType)

	uid := int64(101) // from ImageStatus
	c, _ := criconfig.ContainerConfig(criconfig.Container{Pod: pod, Container: &pod.Spec.Containers[0],
		ImageRef: "sha256:0123", ImageUser: criconfig.ImageUser{UID: &uid}}, node)
	sc := c.Linux.SecurityContext
	fmt.Println("container:", sc.RunAsUser.Value, sc.NoNewPrivs, len(sc.MaskedPaths), "masked paths, oom_score_adj", c.Linux.Resources.OomScoreAdj)

	_, err := criconfig.ContainerConfig(criconfig.Container{Pod: pod, Container: &pod.Spec.Containers[0],
		ImageRef: "sha256:0123", ImageUser: criconfig.ImageUserFromStatus(nil)}, node)
	fmt.Println("root image:", err)
	// Output:
	// sandbox: /kubepods/besteffort/pod1234 [10.96.0.10] RuntimeDefault
	// container: 101 true 12 masked paths, oom_score_adj 1000
	// root image: container has runAsNonRoot and image will run as root (pod: "web_shop(1234)", container: app)
}
