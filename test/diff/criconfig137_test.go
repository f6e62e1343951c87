package diff

import (
	"errors"
	"maps"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	podresource "k8s.io/kubernetes/pkg/api/v1/resource"
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

// kubeletResourceFieldValue is kubelet v1.37.2's value of an env var's
// resourceFieldRef: defaultPodLimitsForDownwardAPI (a Kubelet method, so
// its few lines are restated here over the exported
// MergeContainerResourceLimits), then containerResourceRuntimeValue
// (unexported, restated over ExtractContainerResourceValue and
// ExtractResourceValueByContainerName).
func kubeletResourceFieldValue(ref *corev1.ResourceFieldSelector, pod *corev1.Pod, c *corev1.Container, allocatable corev1.ResourceList) (string, error) {
	alloc := allocatable.DeepCopy()
	if resourcehelper.IsPodLevelLimitsSet(pod) {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
			if !resourcehelper.IsSupportedPodLevelResource(name) {
				continue
			}
			if v, ok := pod.Spec.Resources.Limits[name]; ok && !v.IsZero() {
				if _, ok := alloc[name]; ok {
					alloc[name] = v.DeepCopy()
				}
			}
		}
	}
	outPod := pod.DeepCopy()
	for i := range outPod.Spec.Containers {
		podresource.MergeContainerResourceLimits(&outPod.Spec.Containers[i], alloc)
	}
	outC := c.DeepCopy()
	podresource.MergeContainerResourceLimits(outC, alloc)
	if ref.ContainerName == "" {
		return podresource.ExtractContainerResourceValue(ref, outC)
	}
	return podresource.ExtractResourceValueByContainerName(ref, outPod, ref.ContainerName)
}

var downwardEnvResources = []string{"limits.cpu", "limits.memory", "limits.ephemeral-storage", "requests.cpu", "requests.memory",
	"requests.ephemeral-storage", "limits.hugepages-2Mi", "requests.hugepages-1Gi", "limits.example.com/gpu", "cpu", "limits"}

// TestResourceFieldRefEnv compares criconfig.FieldRefValue for
// resourceFieldRef env vars with kubelet's, on random pods (container and
// pod-level limits, init containers, containerName), divisors and node
// allocatable. With the whole allocatable known the values and error
// messages must be equal; with part of it unknown podstart must either
// give kubelet's value or refuse with ErrUnknownNodeFact, never "0".
func TestResourceFieldRefEnv(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	n := cases(20000)
	full := corev1.ResourceList{"cpu": resource.MustParse("6"), "memory": resource.MustParse("4Gi"), "ephemeral-storage": resource.MustParse("100Gi")}
	for range n {
		pod := randResourcePod(r)
		pod.Status.QOSClass = ""
		all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
		c := &all[r.IntN(len(all))]
		ref := &corev1.ResourceFieldSelector{Resource: pick(r, downwardEnvResources)}
		if r.IntN(3) == 0 {
			ref.ContainerName = pick(r, []string{"c0", "c1", "i0", "i1", "none", c.Name})
		}
		if r.IntN(2) == 0 {
			ref.Divisor = resource.MustParse(pick(r, []string{"1", "1m", "1Mi", "1Gi", "100m", "3"}))
		}
		src := &corev1.EnvVarSource{ResourceFieldRef: ref}
		want, wantErr := kubeletResourceFieldValue(ref, pod, c, full)
		got, _, err := criconfig.FieldRefValue(pod, c, src, nil, criconfig.Node{Allocatable: full})
		if got != want || (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			d.add("%+v of %s in %+v = %q, %v; kubelet %q, %v", ref, c.Name, pod.Spec, got, err, want, wantErr)
			continue
		}
		partial := corev1.ResourceList{}
		for k, v := range full {
			if r.IntN(2) == 0 {
				partial[k] = v
			}
		}
		got, _, err = criconfig.FieldRefValue(pod, c, src, nil, criconfig.Node{Allocatable: partial})
		if !errors.Is(err, criconfig.ErrUnknownNodeFact) && (got != want || (err == nil) != (wantErr == nil)) {
			d.add("with allocatable %v: %+v of %s in %+v = %q, %v; kubelet (whole allocatable) %q, %v", partial, ref, c.Name, pod.Spec, got, err, want, wantErr)
		}
	}
	d.report(n, "env vars")
}
