package diff

import (
	"maps"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/kubelet/sysctl"

	"github.com/podstart/podstart/criconfig"
)

// sysctlPieces build sysctl names with dots and slashes in every order.
var sysctlPieces = []string{"net", "ipv4", "conf", "eno2", "100", "rp_filter", "kernel", "shm_rmid_forced", "fs", "mqueue", ".", "/", "."}

func randSysctlName(r *rand.Rand) string {
	s := ""
	for range r.IntN(8) {
		s += pick(r, sysctlPieces)
	}
	return s
}

// TestSandboxSysctls compares the sysctls of criconfig.SandboxConfig with
// the names kubelet's SyncPod sends after
// sysctl.ConvertPodSysctlsVariableToDotsSeparator.
func TestSandboxSysctls(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	n := cases(20000)
	for range n {
		pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{}, Containers: []corev1.Container{{Name: "c"}}}}
		for range r.IntN(4) {
			pod.Spec.SecurityContext.Sysctls = append(pod.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: randSysctlName(r), Value: pick(r, []string{"0", "1", "1024 65535"})})
		}
		cfg, err := criconfig.SandboxConfig(pod, 0, criconfig.Node{})
		if err != nil {
			d.add("SandboxConfig(%v): %v", pod.Spec.SecurityContext.Sysctls, err)
			continue
		}
		k := pod.DeepCopy()
		sysctl.ConvertPodSysctlsVariableToDotsSeparator(k.Spec.SecurityContext)
		want := map[string]string{}
		for _, s := range k.Spec.SecurityContext.Sysctls {
			want[s.Name] = s.Value
		}
		if !maps.Equal(cfg.Linux.Sysctls, want) {
			d.add("sysctls of %v = %v, kubelet %v", pod.Spec.SecurityContext.Sysctls, cfg.Linux.Sysctls, want)
		}
	}
	d.report(n, "pods")
}
