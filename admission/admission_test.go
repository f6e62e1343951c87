package admission

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func testNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"kubernetes.io/os": "linux", "zone": "a"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse("2"),
			corev1.ResourceMemory:           resource.MustParse("4Gi"),
			corev1.ResourceEphemeralStorage: resource.MustParse("10Gi"),
			corev1.ResourcePods:             resource.MustParse("3"),
			"example.com/dongle":            resource.MustParse("2"),
			"hugepages-2Mi":                 resource.MustParse("0"),
		}},
	}
}

func testPod(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)},
		Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func requests(rl ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		r := corev1.ResourceList{}
		for i := 0; i < len(rl); i += 2 {
			r[corev1.ResourceName(rl[i])] = resource.MustParse(rl[i+1])
		}
		p.Spec.Containers[0].Resources.Requests = r
	}
}

func hostPortOn(ip string, port int32, proto corev1.Protocol) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: 80, HostPort: port, HostIP: ip, Protocol: proto})
	}
}

// wantRejection checks err against a reason and message ("" for admitted).
func wantRejection(t *testing.T, err error, reason, message string) {
	t.Helper()
	if reason == "" {
		if err != nil {
			t.Fatalf("rejected: %v, want admitted", err)
		}
		return
	}
	var r *Rejection
	if !errors.As(err, &r) || !errors.Is(err, ErrRejected) {
		t.Fatalf("got %v, want a rejection %s", err, reason)
	}
	if r.Reason() != reason || r.Message() != message {
		t.Fatalf("got %q / %q\nwant %q / %q", r.Reason(), r.Message(), reason, message)
	}
}

func TestGeneralPredicates(t *testing.T) {
	sidecar := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name            string
		pod             *corev1.Pod
		admitted        []*corev1.Pod
		node            func(*corev1.Node)
		reason, message string
	}{
		{name: "fits", pod: testPod("p", requests("cpu", "1", "memory", "1Gi")), admitted: []*corev1.Pod{testPod("a", requests("cpu", "1"))}},
		{name: "cpu", pod: testPod("p", requests("cpu", "500m")), admitted: []*corev1.Pod{testPod("a", requests("cpu", "1800m"))},
			reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 500, used: 1800, capacity: 2000"},
		{name: "memory", pod: testPod("p", requests("memory", "3Gi")), admitted: []*corev1.Pod{testPod("a", requests("memory", "2Gi"))},
			reason: "OutOfmemory", message: "Node didn't have enough resource: memory, requested: 3221225472, used: 2147483648, capacity: 4294967296"},
		{name: "ephemeral storage", pod: testPod("p", requests("ephemeral-storage", "11Gi")),
			reason: "OutOfephemeral-storage", message: "Node didn't have enough resource: ephemeral-storage, requested: 11811160064, used: 0, capacity: 10737418240"},
		{name: "pods count", pod: testPod("p"), admitted: []*corev1.Pod{testPod("a"), testPod("b"), testPod("c")},
			reason: "OutOfpods", message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
		{name: "pods count first", pod: testPod("p", requests("cpu", "3")), admitted: []*corev1.Pod{testPod("a"), testPod("b"), testPod("c")},
			reason: "OutOfpods", message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
		{name: "extended resource", pod: testPod("p", requests("example.com/dongle", "2")), admitted: []*corev1.Pod{testPod("a", requests("example.com/dongle", "1"))},
			reason: "OutOfexample.com/dongle", message: "Node didn't have enough resource: example.com/dongle, requested: 2, used: 1, capacity: 2"},
		{name: "extended resource the node lacks is not checked", pod: testPod("p", requests("example.com/gadget", "5"))},
		{name: "hugepages", pod: testPod("p", requests("hugepages-2Mi", "2Mi", "memory", "2Mi")),
			reason: "OutOfhugepages-2Mi", message: "Node didn't have enough resource: hugepages-2Mi, requested: 2097152, used: 0, capacity: 0"},
		{name: "init containers count at their max", pod: testPod("p", requests("cpu", "100m"), func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("2500m")}}}}
		}), reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 2500, used: 0, capacity: 2000"},
		{name: "pod overhead counts", pod: testPod("p", requests("cpu", "1900m"), func(p *corev1.Pod) {
			p.Spec.Overhead = corev1.ResourceList{"cpu": resource.MustParse("200m")}
		}), reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 2100, used: 0, capacity: 2000"},
		{name: "pod-level requests", pod: testPod("p", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{"memory": resource.MustParse("5Gi")}}
		}), reason: "OutOfmemory", message: "Node didn't have enough resource: memory, requested: 5368709120, used: 0, capacity: 4294967296"},
		{name: "node selector", pod: testPod("p", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} }),
			reason: "NodeAffinity", message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{name: "node selector matches", pod: testPod("p", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} })},
		{name: "required node affinity", pod: testPod("p", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"b", "c"}}}}}}}}
		}), reason: "NodeAffinity", message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{name: "node name", pod: testPod("p", func(p *corev1.Pod) { p.Spec.NodeName = "node-2" }),
			reason: "NodeName", message: "Predicate NodeName failed: node(s) didn't match the requested node name"},
		{name: "host port taken", pod: testPod("p", hostPortOn("", 8080, "")), admitted: []*corev1.Pod{testPod("a", hostPortOn("10.0.0.1", 8080, corev1.ProtocolTCP))},
			reason: "NodePorts", message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		{name: "host port on another address", pod: testPod("p", hostPortOn("10.0.0.2", 8080, "")), admitted: []*corev1.Pod{testPod("a", hostPortOn("10.0.0.1", 8080, corev1.ProtocolTCP))}},
		{name: "host port other protocol", pod: testPod("p", hostPortOn("", 8080, corev1.ProtocolUDP)), admitted: []*corev1.Pod{testPod("a", hostPortOn("", 8080, ""))}},
		{name: "host port of a sidecar", pod: testPod("p", hostPortOn("", 9090, "")), admitted: []*corev1.Pod{testPod("a", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "s", RestartPolicy: &sidecar, Ports: []corev1.ContainerPort{{ContainerPort: 1, HostPort: 9090}}}}
		})}, reason: "NodePorts", message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		{name: "host port of a plain init container is free", pod: testPod("p", hostPortOn("", 9090, "")), admitted: []*corev1.Pod{testPod("a", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Ports: []corev1.ContainerPort{{ContainerPort: 1, HostPort: 9090}}}}
		})}},
		{name: "NoExecute taint", pod: testPod("p"), node: func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute}}
		}, reason: "TaintToleration", message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"},
		{name: "NoExecute taint tolerated", pod: testPod("p", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
		}), node: func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute}}
		}},
		{name: "NoSchedule taint is the scheduler's", pod: testPod("p"), node: func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
		}},
		{name: "static pod ignores taints", pod: testPod("p", func(p *corev1.Pod) { p.Annotations = map[string]string{"kubernetes.io/config.source": "file"} }),
			node: func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoExecute}} }},
		{name: "resources before affinity", pod: testPod("p", requests("cpu", "3"), func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} }),
			reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"},
		{name: "admitted pod's larger status resources count", pod: testPod("p", requests("cpu", "1")), admitted: []*corev1.Pod{testPod("a", requests("cpu", "500m"), func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("1500m")}}}}
		})}, reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := testNode()
			if tt.node != nil {
				tt.node(node)
			}
			wantRejection(t, GeneralPredicates(tt.pod, node, tt.admitted), tt.reason, tt.message)
		})
	}
}

func TestSysctlAllowlist(t *testing.T) {
	sysctls := func(hostNet, hostIPC bool, hostUsers *bool, names ...string) *corev1.Pod {
		return testPod("p", func(p *corev1.Pod) {
			p.Spec.HostNetwork, p.Spec.HostIPC, p.Spec.HostUsers = hostNet, hostIPC, hostUsers
			p.Spec.SecurityContext = &corev1.PodSecurityContext{}
			for _, n := range names {
				p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: n, Value: "1"})
			}
		})
	}
	no := false
	tests := []struct {
		name            string
		unsafe          []string
		pod             *corev1.Pod
		reason, message string
	}{
		{name: "none", pod: testPod("p")},
		{name: "safe", pod: sysctls(false, false, nil, "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_keepalive_time")},
		{name: "slash form", pod: sysctls(false, false, nil, "net/ipv4/ip_local_port_range")},
		{name: "unsafe", pod: sysctls(false, false, nil, "kernel.shm_rmid_forced", "kernel.msgmax"),
			reason: "SysctlForbidden", message: `forbidden sysctl: "kernel.msgmax" not allowlisted`},
		{name: "unsafe allowed", unsafe: []string{"kernel.msg*", "net.core.somaxconn"}, pod: sysctls(false, false, nil, "kernel.msgmax", "net.core.somaxconn")},
		{name: "net with host network", pod: sysctls(true, false, nil, "net.ipv4.tcp_syncookies"),
			reason: "SysctlForbidden", message: `forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host Net enabled`},
		{name: "ipc with host ipc", pod: sysctls(false, true, nil, "kernel.shm_rmid_forced"),
			reason: "SysctlForbidden", message: `forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled`},
		{name: "user namespace sysctl with host users", unsafe: []string{"user.max_user_namespaces"}, pod: sysctls(false, false, nil, "user.max_user_namespaces"),
			reason: "SysctlForbidden", message: `forbidden sysctl: "user.max_user_namespaces" not allowed with host User enabled`},
		{name: "user namespace sysctl in a user namespace", unsafe: []string{"user.max_user_namespaces"}, pod: sysctls(false, false, &no, "user.max_user_namespaces")},
		{name: "prefix with host network", unsafe: []string{"net.core.*"}, pod: sysctls(true, false, nil, "net.core.somaxconn"),
			reason: "SysctlForbidden", message: `forbidden sysctl: "net.core.somaxconn" not allowed with host Net enabled`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := NewSysctlAllowlist(append(SafeSysctls("6.1.0-18-amd64"), tt.unsafe...))
			if err != nil {
				t.Fatal(err)
			}
			wantRejection(t, w.Admit(tt.pod), tt.reason, tt.message)
		})
	}
}

func TestNewSysctlAllowlistRefuses(t *testing.T) {
	for pattern, want := range map[string]string{
		"vm.swappiness": `the sysctls "vm.swappiness" are not known to be namespaced`,
		"kernel.*":      `the sysctls "kernel." are not known to be namespaced`,
		"Net.Core":      `sysctl "Net.Core" must have at most 253 characters and match regex ([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]`,
	} {
		if _, err := NewSysctlAllowlist([]string{pattern}); err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %s", pattern, err, want)
		}
	}
}

func TestSafeSysctls(t *testing.T) {
	for kernel, want := range map[string]int{"6.1.0-18-amd64": 14, "4.5.0": 9, "4.6": 11, "3.10.0-1160.el7.x86_64": 5, "3.16": 6, "garbage": 5} {
		if got := SafeSysctls(kernel); len(got) != want {
			t.Errorf("%s: %d sysctls %v, want %d", kernel, len(got), got, want)
		}
	}
}

func TestOS(t *testing.T) {
	tests := []struct {
		name            string
		pod             *corev1.Pod
		reason, message string
	}{
		{name: "none", pod: testPod("p")},
		{name: "linux label and field", pod: testPod("p", func(p *corev1.Pod) {
			p.Labels = map[string]string{"kubernetes.io/os": "linux"}
			p.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
		})},
		{name: "windows label", pod: testPod("p", func(p *corev1.Pod) { p.Labels = map[string]string{"kubernetes.io/os": "windows"} }),
			reason: "PodOSSelectorNodeLabelDoesNotMatch", message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"},
		{name: "windows field", pod: testPod("p", func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} }),
			reason: "PodOSNotSupported", message: "Failed to admit pod as the OS field doesn't match node OS"},
		{name: "nodeSelector is not this check's", pod: testPod("p", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "windows"} })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantRejection(t, OS(tt.pod, "linux"), tt.reason, tt.message)
		})
	}
}

func TestSupplementalGroupsPolicy(t *testing.T) {
	strict := corev1.SupplementalGroupsPolicyStrict
	merge := corev1.SupplementalGroupsPolicyMerge
	yes := true
	withPolicy := func(p *corev1.SupplementalGroupsPolicy) *corev1.Pod {
		return testPod("p", func(pod *corev1.Pod) {
			pod.Spec.SecurityContext = &corev1.PodSecurityContext{SupplementalGroupsPolicy: p}
		})
	}
	supported := testNode()
	supported.Status.Features = &corev1.NodeFeatures{SupplementalGroupsPolicy: &yes}
	wantRejection(t, SupplementalGroupsPolicy(withPolicy(&strict), testNode()), "SupplementalGroupsPolicyNotSupported", "SupplementalGroupsPolicy=Strict is not supported in this node")
	wantRejection(t, SupplementalGroupsPolicy(withPolicy(&strict), supported), "", "")
	wantRejection(t, SupplementalGroupsPolicy(withPolicy(&merge), testNode()), "", "")
	wantRejection(t, SupplementalGroupsPolicy(withPolicy(nil), testNode()), "", "")
}

func TestAppArmor(t *testing.T) {
	runtimeDefault := &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
	empty := ""
	tests := []struct {
		name            string
		pod             *corev1.Pod
		enabled         bool
		reason, message string
	}{
		{name: "none", pod: testPod("p")},
		{name: "unconfined", pod: testPod("p", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}
		})},
		{name: "pod profile without AppArmor", pod: testPod("p", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: runtimeDefault}
		}), reason: "AppArmor", message: "Cannot enforce AppArmor: AppArmor is not enabled on the host"},
		{name: "container profile without AppArmor", pod: testPod("p", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AppArmorProfile: runtimeDefault}
		}), reason: "AppArmor", message: "Cannot enforce AppArmor: AppArmor is not enabled on the host"},
		{name: "annotation without AppArmor", pod: testPod("p", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/c": "runtime/default"}
		}), reason: "AppArmor", message: "Cannot enforce AppArmor: AppArmor is not enabled on the host"},
		{name: "with AppArmor", enabled: true, pod: testPod("p", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: runtimeDefault}
		})},
		{name: "running pod", pod: testPod("p", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: runtimeDefault}
		})},
		{name: "empty localhost name", enabled: true, pod: testPod("p", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: &empty}}
		}), reason: "AppArmor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := AppArmor(tt.pod, tt.enabled)
			var r *Rejection
			if tt.reason == "AppArmor" && tt.message == "" && errors.As(err, &r) && r.Reason() == "AppArmor" {
				return // the message prints a pointer, as kubelet's
			}
			wantRejection(t, err, tt.reason, tt.message)
		})
	}
}

func TestAdmitterOrderAndFreshNode(t *testing.T) {
	allow, err := NewSysctlAllowlist(SafeSysctls("6.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	cached := testNode()
	fresh := testNode()
	fresh.Labels["zone"] = "b"
	var freshReads int
	nodeErr := errors.New("no node")
	var failNode bool
	nodeFn := func(_ context.Context, f bool) (*corev1.Node, error) {
		if failNode {
			return nil, nodeErr
		}
		if f {
			freshReads++
			return fresh, nil
		}
		return cached, nil
	}
	pressure := errors.New("pressure")
	var evict bool
	a, err := New(Config{Node: nodeFn, Sysctls: allow, Before: []Handler{func(_ context.Context, pod *corev1.Pod, admitted []*corev1.Pod) error {
		if evict {
			return &testAdmitError{cause: pressure}
		}
		return nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// Node affinity alone fails on the cached node: the fresh one admits.
	zoneB := testPod("p", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} })
	wantRejection(t, a.Admit(ctx, zoneB, nil), "", "")
	if freshReads != 1 {
		t.Errorf("fresh node reads: %d, want 1", freshReads)
	}
	// With another failure too, the node is not read again.
	big := testPod("q", requests("cpu", "3"), func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} })
	wantRejection(t, a.Admit(ctx, big, nil), "OutOfcpu", "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000")
	if freshReads != 1 {
		t.Errorf("fresh node reads: %d, want 1", freshReads)
	}
	// The pod itself among the admitted ones is not counted.
	self := testPod("r", requests("cpu", "1500m"))
	wantRejection(t, a.Admit(ctx, self, []*corev1.Pod{self}), "", "")

	// Sysctls come before the predicates.
	both := testPod("s", requests("cpu", "3"), func(p *corev1.Pod) {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}}
	})
	wantRejection(t, a.Admit(ctx, both, nil), "SysctlForbidden", `forbidden sysctl: "kernel.msgmax" not allowlisted`)

	// The Before handlers (eviction) come first, and keep their error.
	evict = true
	err = a.Admit(ctx, both, nil)
	wantRejection(t, err, "Evicted", "The node had condition: [DiskPressure]. ")
	if !errors.Is(err, pressure) {
		t.Errorf("%v does not match the handler's error", err)
	}
	evict = false

	// No node: InvalidNodeInfo.
	failNode = true
	wantRejection(t, a.Admit(ctx, testPod("t"), nil), "InvalidNodeInfo", "Kubelet cannot get node info.")
}

// Config.Resources run after the sysctls and before the predicates;
// Config.UpdatePluginResources adjusts the node the predicates see.
func TestAdmitterResourcesSlot(t *testing.T) {
	allow, err := NewSysctlAllowlist(SafeSysctls("6.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	node := testNode()
	node.Status.Allocatable["example.com/dongle"] = resource.MustParse("1")
	var order []string
	var allocErr error
	a, err := New(Config{
		Node:    func(context.Context, bool) (*corev1.Node, error) { return node, nil },
		Sysctls: allow,
		Resources: []Handler{func(_ context.Context, pod *corev1.Pod, admitted []*corev1.Pod) error {
			order = append(order, "resources:"+pod.Name)
			return allocErr
		}},
		UpdatePluginResources: func(pod *corev1.Pod, n *corev1.Node) *corev1.Node {
			order = append(order, "update:"+pod.Name)
			c := n.DeepCopy()
			c.Status.Allocatable["example.com/dongle"] = resource.MustParse("2")
			return c
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	two := testPod("two", func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"example.com/dongle": resource.MustParse("2")}
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"example.com/dongle": resource.MustParse("2")}
	})
	// Admitted: the predicates saw the updated allocatable (2, not 1).
	wantRejection(t, a.Admit(ctx, two, nil), "", "")
	if want := []string{"resources:two", "update:two"}; !reflect.DeepEqual(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	// A sysctl refusal comes before the Resources handlers.
	order = nil
	sys := testPod("sys", func(p *corev1.Pod) {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}}
	})
	wantRejection(t, a.Admit(ctx, sys, nil), "SysctlForbidden", `forbidden sysctl: "kernel.msgmax" not allowlisted`)
	if len(order) != 0 {
		t.Errorf("handlers ran for a sysctl refusal: %v", order)
	}
	// A Resources refusal comes before the predicates and keeps its reason.
	allocErr = Reject(ReasonUnexpectedAdmissionError, "Allocate failed due to x, which is unexpected")
	order = nil
	wantRejection(t, a.Admit(ctx, two, nil), "UnexpectedAdmissionError", "Allocate failed due to x, which is unexpected")
	if want := []string{"resources:two"}; !reflect.DeepEqual(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
}

type testAdmitError struct{ cause error }

func (e *testAdmitError) Reason() string  { return "Evicted" }
func (e *testAdmitError) Message() string { return "The node had condition: [DiskPressure]. " }
func (e *testAdmitError) Error() string   { return e.Message() }
func (e *testAdmitError) Unwrap() error   { return e.cause }

func TestNewRequires(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New without Node succeeded")
	}
	if _, err := New(Config{Node: func(context.Context, bool) (*corev1.Node, error) { return nil, nil }}); err == nil {
		t.Error("New without Sysctls succeeded")
	}
}

func TestStatusMessage(t *testing.T) {
	r := Reject("OutOfcpu", "Node didn't have enough resource: cpu, requested: 1, used: 2, capacity: 2")
	if got := StatusMessage(r.Message()); got != "Pod was rejected: Node didn't have enough resource: cpu, requested: 1, used: 2, capacity: 2" {
		t.Error(got)
	}
	if got := fmt.Sprint(r); got != "OutOfcpu: Node didn't have enough resource: cpu, requested: 1, used: 2, capacity: 2" {
		t.Error(got)
	}
}
