package criconfig

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func tenContainerPod() *corev1.Pod {
	return testPod(func(p *corev1.Pod) {
		p.Spec.Containers = nil
		for i := 0; i < 10; i++ {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
				Name: fmt.Sprintf("c%d", i), Image: "busybox:1.35", Command: []string{"sh", "-c", "echo $(A)"},
				Resources:       res(rl("cpu", "100m", "memory", "64Mi"), rl("cpu", "200m", "memory", "128Mi")),
				Ports:           []corev1.ContainerPort{{ContainerPort: int32(8000 + i), Protocol: corev1.ProtocolTCP}},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false), RunAsUser: ptr(int64(1000))},
			})
		}
	})
}

func BenchmarkSandboxConfig(b *testing.B) {
	p, n := tenContainerPod(), node()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SandboxConfig(p, 0, n); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkContainerConfig builds the configs of all ten containers.
func BenchmarkContainerConfig(b *testing.B) {
	p, n := tenContainerPod(), node()
	env := []EnvVar{{"A", "1"}, {"B", "2"}}
	b.ReportAllocs()
	for b.Loop() {
		for i := range p.Spec.Containers {
			if _, err := ContainerConfig(Container{Pod: p, Container: &p.Spec.Containers[i], ImageRef: "sha256:abc", Env: env}, n); err != nil {
				b.Fatal(err)
			}
		}
	}
}
