package diff

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	v1qos "k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"
	"k8s.io/kubernetes/pkg/kubelet/qos"
	"k8s.io/kubernetes/pkg/securitycontext"

	"github.com/podstart/podstart/criconfig"
)

var (
	resNames = []corev1.ResourceName{"cpu", "memory", "cpu", "memory", "ephemeral-storage", "example.com/gpu"}
	resQty   = []string{"0", "1", "100m", "250m", "2", "64Mi", "128Mi", "1Gi", "3Gi"}
)

func randList(r *rand.Rand) corev1.ResourceList {
	if r.IntN(3) == 0 {
		return nil
	}
	l := corev1.ResourceList{}
	for range r.IntN(4) {
		l[pick(r, resNames)] = resource.MustParse(pick(r, resQty))
	}
	return l
}

func randRequirements(r *rand.Rand) corev1.ResourceRequirements {
	switch r.IntN(4) {
	case 0:
		return corev1.ResourceRequirements{}
	case 1:
		l := randList(r)
		return corev1.ResourceRequirements{Limits: l, Requests: l.DeepCopy()}
	}
	return corev1.ResourceRequirements{Requests: randList(r), Limits: randList(r)}
}

// randResourcePod has random container, init container, sidecar and
// pod-level resources, priority, static-pod source and QoS status.
func randResourcePod(r *rand.Rand) *corev1.Pod {
	pod := &corev1.Pod{}
	for i := range 1 + r.IntN(3) {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: fmt.Sprint("c", i), Resources: randRequirements(r)})
	}
	always := corev1.ContainerRestartPolicyAlways
	for i := range r.IntN(3) {
		c := corev1.Container{Name: fmt.Sprint("i", i), Resources: randRequirements(r)}
		if r.IntN(2) == 0 {
			c.RestartPolicy = &always
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
	}
	if r.IntN(4) == 0 {
		rr := randRequirements(r)
		pod.Spec.Resources = &rr
	}
	if r.IntN(5) == 0 {
		pod.Annotations = map[string]string{"kubernetes.io/config.source": pick(r, []string{"api", "file", "http"})}
	}
	if r.IntN(5) == 0 {
		pod.Spec.PriorityClassName = "system-node-critical"
	}
	if r.IntN(5) == 0 {
		p := pick(r, []int32{0, 1000, 2000000000, 2000001000})
		pod.Spec.Priority = &p
	}
	if r.IntN(10) == 0 {
		pod.Status.QOSClass = pick(r, []corev1.PodQOSClass{corev1.PodQOSBestEffort, corev1.PodQOSBurstable, corev1.PodQOSGuaranteed})
	}
	return pod
}

// TestQOSAndOOMScore compares criconfig.QOSClass and OOMScoreAdj with
// kubelet's GetPodQOS and GetContainerOOMScoreAdjust.
func TestQOSAndOOMScore(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	n := cases(20000)
	const capacity = 4 << 30
	for range n {
		pod := randResourcePod(r)
		if got, want := criconfig.QOSClass(pod), v1qos.GetPodQOS(pod); got != want {
			d.add("QOSClass(%+v) = %s, kubelet %s", pod.Spec, got, want)
		}
		for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range list {
				got := criconfig.OOMScoreAdj(pod, &list[i], capacity)
				want := int64(qos.GetContainerOOMScoreAdjust(pod, &list[i], capacity))
				if got != want {
					d.add("OOMScoreAdj(%s in %+v) = %d, kubelet %d", list[i].Name, pod.Spec, got, want)
				}
			}
		}
	}
	d.report(n, "pods")
}

func randBool(r *rand.Rand) *bool {
	if r.IntN(3) == 0 {
		return nil
	}
	b := r.IntN(2) == 0
	return &b
}

func randInt64(r *rand.Rand) *int64 {
	if r.IntN(3) == 0 {
		return nil
	}
	v := pick(r, []int64{0, 1, 1000, 65534})
	return &v
}

func randSecurityPod(r *rand.Rand) (*corev1.Pod, *corev1.Container) {
	pod := &corev1.Pod{}
	if r.IntN(4) > 0 {
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: randInt64(r), RunAsGroup: randInt64(r), RunAsNonRoot: randBool(r)}
		if r.IntN(3) == 0 {
			pod.Spec.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Level: "s0:c1"}
		}
	}
	c := &corev1.Container{Name: "c"}
	if r.IntN(4) > 0 {
		c.SecurityContext = &corev1.SecurityContext{Privileged: randBool(r), RunAsUser: randInt64(r), RunAsGroup: randInt64(r),
			RunAsNonRoot: randBool(r), ReadOnlyRootFilesystem: randBool(r), AllowPrivilegeEscalation: randBool(r)}
		if r.IntN(3) == 0 {
			c.SecurityContext.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}
		}
		if r.IntN(3) == 0 {
			pm := pick(r, []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount})
			c.SecurityContext.ProcMount = &pm
		}
		if r.IntN(3) == 0 {
			c.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t"}
		}
	}
	return pod, c
}

// TestSecurityContext compares criconfig's effective security context,
// no_new_privs and masked and read-only paths with pkg/securitycontext.
func TestSecurityContext(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	n := cases(20000)
	for range n {
		pod, c := randSecurityPod(r)
		got, want := criconfig.EffectiveSecurityContext(pod, c), securitycontext.DetermineEffectiveSecurityContext(pod, c)
		if !reflect.DeepEqual(got, want) {
			d.add("EffectiveSecurityContext(%+v, %+v) = %+v, kubelet %+v", pod.Spec.SecurityContext, c.SecurityContext, got, want)
			continue
		}
		uid := int64(1000)
		cfg, err := criconfig.ContainerConfig(criconfig.Container{Pod: pod, Container: c, ImageUser: criconfig.ImageUser{UID: &uid}}, criconfig.Node{})
		if errors.Is(err, criconfig.ErrRunAsNonRoot) {
			// kubelet's verifyRunAsNonRoot is unexported: check its rule.
			if want.RunAsNonRoot == nil || !*want.RunAsNonRoot || want.RunAsUser == nil || *want.RunAsUser != 0 {
				d.add("runAsNonRoot refused %+v: %v", want, err)
			}
			continue
		}
		if err != nil {
			d.add("ContainerConfig: %v", err)
			continue
		}
		sc := cfg.Linux.SecurityContext
		if sc.NoNewPrivs != securitycontext.AddNoNewPrivileges(want) ||
			!slices.Equal(sc.MaskedPaths, securitycontext.ConvertToRuntimeMaskedPaths(want.ProcMount)) ||
			!slices.Equal(sc.ReadonlyPaths, securitycontext.ConvertToRuntimeReadonlyPaths(want.ProcMount)) {
			d.add("container security context %v for %+v", sc, want)
		}
	}
	d.report(n, "security contexts")
}
