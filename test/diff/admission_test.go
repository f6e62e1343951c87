package diff

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
	kubesysctl "k8s.io/kubernetes/pkg/kubelet/sysctl"
	schedulerframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/podstart/podstart/admission"
)

// ours turns an admission answer into kubelet's PodAdmitResult.
func ours(err error) lifecycle.PodAdmitResult {
	if err == nil {
		return lifecycle.PodAdmitResult{Admit: true}
	}
	var r *admission.Rejection
	if !errors.As(err, &r) {
		return lifecycle.PodAdmitResult{Reason: "not a rejection", Message: err.Error()}
	}
	return lifecycle.PodAdmitResult{Reason: r.Reason(), Message: r.Message()}
}

var diffSysctls = []string{
	"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net/ipv4/tcp_syncookies", "net.ipv4.tcp_rmem", "net.ipv4.tcp_notsent_lowat",
	"kernel.msgmax", "kernel.shmmax", "kernel.sem", "net.core.somaxconn", "net.ipv4.conf.all.rp_filter", "fs.mqueue.msg_max",
	"user.max_user_namespaces", "kernel.domainname", "vm.swappiness", "kernel.msgmnb",
}

var diffSysctlPatterns = []string{
	"kernel.msg*", "kernel.shmmax", "net.core.*", "net.*", "fs.mqueue.*", "user.max_user_namespaces", "kernel.sem",
	"vm.swappiness", "kernel.*", "Net.Core", "net..x", "kernel.domainname",
}

// kubelet's sysctl admit handler (its safe list for this host's kernel
// plus random unsafe patterns) and admission's, on random pods.
func TestAdmissionSysctls(t *testing.T) {
	r := newRand(t)
	ctx := context.Background()
	kernel, err := admission.KernelVersion()
	if err != nil {
		t.Fatal(err)
	}
	d := &differences{t: t}
	n := cases(3000)
	for i := 0; i < n; i++ {
		var patterns []string
		for range r.IntN(3) {
			patterns = append(patterns, pick(r, diffSysctlPatterns))
		}
		k, kerr := kubesysctl.NewAllowlist(append(kubesysctl.SafeSysctlAllowlist(ctx), patterns...))
		o, oerr := admission.NewSysctlAllowlist(append(admission.SafeSysctls(kernel), patterns...))
		if (kerr == nil) != (oerr == nil) || (kerr != nil && kerr.Error() != oerr.Error()) {
			d.add("patterns %q: kubelet %v, ours %v", patterns, kerr, oerr)
			continue
		}
		if kerr != nil {
			continue
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u"}}
		pod.Spec.HostNetwork, pod.Spec.HostIPC = r.IntN(4) == 0, r.IntN(4) == 0
		if r.IntN(3) == 0 {
			pod.Spec.HostUsers = new(r.IntN(2) == 0)
		}
		if r.IntN(5) > 0 {
			pod.Spec.SecurityContext = &corev1.PodSecurityContext{}
			for range r.IntN(4) {
				pod.Spec.SecurityContext.Sysctls = append(pod.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: pick(r, diffSysctls), Value: "1"})
			}
		}
		want := k.Admit(ctx, &lifecycle.PodAdmitAttributes{Pod: pod})
		if got := ours(o.Admit(pod)); got != want {
			d.add("patterns %q, pod %+v:\nkubelet %+v\nours    %+v", patterns, pod.Spec, want, got)
		}
	}
	d.report(n, "sysctl admissions")
}

// randAdmissionPod gives a pod with random requests, host ports, node
// selector, affinity, tolerations and OS.
func randAdmissionPod(r *rand.Rand, i int) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: "ns", UID: types.UID(fmt.Sprintf("uid-%d", i))}}
	pod.Spec.NodeName = pick(r, []string{"node-1", "node-1", "node-1", "", "node-2"})
	res := func() corev1.ResourceRequirements {
		rl := corev1.ResourceList{}
		if r.IntN(2) == 0 {
			rl[corev1.ResourceCPU] = randQty(r, "m")
		}
		if r.IntN(2) == 0 {
			rl[corev1.ResourceMemory] = randQty(r, "Mi")
		}
		if r.IntN(6) == 0 {
			rl[corev1.ResourceEphemeralStorage] = randQty(r, "Mi")
		}
		if r.IntN(5) == 0 {
			rl["example.com/dongle"] = resource.MustParse(fmt.Sprint(r.IntN(4)))
		}
		if r.IntN(8) == 0 {
			rl["example.com/cluster-level"] = resource.MustParse("1")
		}
		return corev1.ResourceRequirements{Requests: rl}
	}
	port := func() []corev1.ContainerPort {
		if r.IntN(4) > 0 {
			return nil
		}
		return []corev1.ContainerPort{{ContainerPort: 80, HostPort: int32(8000 + r.IntN(3)), HostIP: pick(r, []string{"", "0.0.0.0", "10.0.0.1", "10.0.0.2"}),
			Protocol: pick(r, []corev1.Protocol{"", corev1.ProtocolTCP, corev1.ProtocolUDP})}}
	}
	for c := range 1 + r.IntN(2) {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", c), Resources: res(), Ports: port()})
	}
	if r.IntN(4) == 0 {
		ic := corev1.Container{Name: "init", Resources: res(), Ports: port()}
		if r.IntN(2) == 0 {
			ic.RestartPolicy = new(corev1.ContainerRestartPolicyAlways)
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, ic)
	}
	if r.IntN(8) == 0 {
		pod.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: randQty(r, "m")}
	}
	if r.IntN(8) == 0 {
		pod.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: randQty(r, "Mi")}}
	}
	if r.IntN(5) == 0 {
		pod.Spec.NodeSelector = map[string]string{"zone": pick(r, []string{"a", "b"})}
	}
	if r.IntN(6) == 0 {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone",
				Operator: pick(r, []corev1.NodeSelectorOperator{corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists}), Values: []string{"a"}}}}}}}}
		if pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Operator == corev1.NodeSelectorOpExists {
			pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values = nil
		}
	}
	if r.IntN(3) == 0 {
		pod.Spec.Tolerations = []corev1.Toleration{{Key: pick(r, []string{"dedicated", "gpu"}), Operator: corev1.TolerationOpExists,
			Effect: pick(r, []corev1.TaintEffect{"", corev1.TaintEffectNoExecute, corev1.TaintEffectNoSchedule})}}
	}
	switch r.IntN(10) {
	case 0:
		pod.Labels = map[string]string{"kubernetes.io/os": pick(r, []string{"linux", "windows"})}
	case 1:
		pod.Spec.OS = &corev1.PodOS{Name: pick(r, []corev1.OSName{corev1.Linux, corev1.Windows})}
	case 2:
		pod.Annotations = map[string]string{"kubernetes.io/config.source": pick(r, []string{"file", "api"})}
	case 3:
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{SupplementalGroupsPolicy: new(pick(r, []corev1.SupplementalGroupsPolicy{
			corev1.SupplementalGroupsPolicyStrict, corev1.SupplementalGroupsPolicyMerge}))}
	}
	return pod
}

func randAdmissionNode(r *rand.Rand) *corev1.Node {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"kubernetes.io/os": "linux", "zone": pick(r, []string{"a", "b"})}}}
	node.Status.Allocatable = corev1.ResourceList{
		corev1.ResourceCPU:              randQty(r, "m"),
		corev1.ResourceMemory:           randQty(r, "Mi"),
		corev1.ResourceEphemeralStorage: randQty(r, "Mi"),
		corev1.ResourcePods:             resource.MustParse(fmt.Sprint(r.IntN(6))),
	}
	if r.IntN(2) == 0 {
		node.Status.Allocatable["example.com/dongle"] = resource.MustParse(fmt.Sprint(r.IntN(5)))
	}
	for range r.IntN(3) {
		node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: pick(r, []string{"dedicated", "gpu"}), Value: "x",
			Effect: pick(r, []corev1.TaintEffect{corev1.TaintEffectNoExecute, corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule})})
	}
	if r.IntN(2) == 0 {
		node.Status.Features = &corev1.NodeFeatures{SupplementalGroupsPolicy: new(r.IntN(2) == 0)}
	}
	return node
}

// kubelet's predicate admit handler (with its failure handler stub: no
// preemption) and admission's Admitter, on random nodes and pods.
func TestAdmissionPredicates(t *testing.T) {
	r := newRand(t)
	ctx := context.Background()
	allow, err := admission.NewSysctlAllowlist(admission.SafeSysctls("6.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	d := &differences{t: t}
	n := cases(3000)
	for i := 0; i < n; i++ {
		node := randAdmissionNode(r)
		var others []*corev1.Pod
		for j := range r.IntN(5) {
			other := randAdmissionPod(r, j)
			other.UID = types.UID(fmt.Sprintf("other-%d", j)) // kubelet's handler is given the others without the pod itself
			others = append(others, other)
		}
		pod := randAdmissionPod(r, i)
		getNode := func(context.Context, bool) (*corev1.Node, error) { return node.DeepCopy(), nil }
		k := lifecycle.NewPredicateAdmitHandler(getNode, lifecycle.NewAdmissionFailureHandlerStub(),
			func(*schedulerframework.NodeInfo, *lifecycle.PodAdmitAttributes) error { return nil })
		want := k.Admit(ctx, &lifecycle.PodAdmitAttributes{Pod: pod.DeepCopy(), OtherPods: others, Operation: lifecycle.AddOperation})
		a, err := admission.New(admission.Config{Node: getNode, Sysctls: allow})
		if err != nil {
			t.Fatal(err)
		}
		if got := ours(a.Admit(ctx, pod, others)); got != want {
			d.add("pod %+v\nnode %+v\nothers %d:\nkubelet %+v\nours    %+v", pod.Spec, node, len(others), want, got)
		}
	}
	d.report(n, "predicate admissions")
}
