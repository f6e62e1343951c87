package admission

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	resourcehelper "k8s.io/component-helpers/resource"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// The scheduler's filter reasons kubelet's predicate messages carry.
const (
	nodeAffinityReason    = "node(s) didn't match Pod's node affinity/selector"
	nodeNameReason        = "node(s) didn't match the requested node name"
	nodePortsReason       = "node(s) didn't have free ports for the requested pod ports"
	taintTolerationReason = "node(s) had taints that the pod didn't tolerate"
)

// GeneralPredicates is kubelet's general predicates for a pod new to node,
// with admitted the pods already admitted and active there (the pod
// itself not among them): the node's allocatable resources (the "pods"
// count, cpu, memory, ephemeral-storage, hugepages and extended
// resources) against the requests of admitted plus the pod's, the pod's
// required node affinity and nodeSelector, spec.nodeName, host ports,
// and the node's NoExecute taints (not for static pods). It returns the
// first failure as kubelet reports it: an insufficient resource as
// "OutOf<resource>" with "Node didn't have enough resource: cpu,
// requested: 500, used: 1800, capacity: 2000"; the others as the
// scheduler plugin's name with "Predicate NodeAffinity failed: node(s)
// didn't match Pod's node affinity/selector". Extended resources the node
// does not have are not checked (kubelet's cluster-level resources).
func GeneralPredicates(pod *corev1.Pod, node *corev1.Node, admitted []*corev1.Pod) error {
	if f := generalFailures(pod, node, admitted); len(f) > 0 {
		return f[0]
	}
	return nil
}

func onlyNodeAffinity(failures []*Rejection) bool {
	for _, f := range failures {
		if f.reason != ReasonNodeAffinity {
			return false
		}
	}
	return len(failures) > 0
}

func predicateFailure(name, desc string) *Rejection {
	return Reject(name, fmt.Sprintf("Predicate %s failed: %s", name, desc))
}

// generalFailures is every failure, in kubelet's order.
func generalFailures(pod *corev1.Pod, node *corev1.Node, admitted []*corev1.Pod) []*Rejection {
	var out []*Rejection
	out = append(out, fits(withoutMissingExtendedResources(pod, node), node, admitted)...)
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		out = append(out, predicateFailure(ReasonNodeAffinity, nodeAffinityReason))
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		out = append(out, predicateFailure(ReasonNodeName, nodeNameReason))
	}
	if !portsFit(pod, admitted) {
		out = append(out, predicateFailure(ReasonNodePorts, nodePortsReason))
	}
	if !isStaticPod(pod) {
		noExecute := func(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }
		// TaintTolerationComparisonOperators is off by default.
		if _, untolerated := schedcorev1.FindMatchingUntoleratedTaint(logr.Discard(), node.Spec.Taints, pod.Spec.Tolerations, noExecute, false); untolerated {
			out = append(out, predicateFailure(ReasonTaintToleration, taintTolerationReason))
		}
	}
	return out
}

// isStaticPod is kubelet's: a pod whose config source annotation names a
// source other than the API server.
func isStaticPod(pod *corev1.Pod) bool {
	source, ok := pod.Annotations["kubernetes.io/config.source"]
	return ok && source != "api"
}

// insufficient is the scheduler's InsufficientResource as kubelet reports
// it.
func insufficient(name corev1.ResourceName, requested, used, capacity int64) *Rejection {
	var reason string
	switch name {
	case corev1.ResourceCPU:
		reason = ReasonOutOfCPU
	case corev1.ResourceMemory:
		reason = ReasonOutOfMemory
	case corev1.ResourceEphemeralStorage:
		reason = ReasonOutOfEphemeralStorage
	case corev1.ResourcePods:
		reason = ReasonOutOfPods
	default:
		reason = InsufficientResourcePrefix + string(name)
	}
	return Reject(reason, fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, requested, used, capacity))
}

// amounts is the scheduler's Resource: cpu in millicores, the rest in
// units.
type amounts struct {
	milliCPU, memory, ephemeral int64
	scalar                      map[corev1.ResourceName]int64
}

func (a *amounts) add(rl corev1.ResourceList) {
	for name, q := range rl {
		switch name {
		case corev1.ResourceCPU:
			a.milliCPU += q.MilliValue()
		case corev1.ResourceMemory:
			a.memory += q.Value()
		case corev1.ResourceEphemeralStorage:
			a.ephemeral += q.Value()
		case corev1.ResourcePods:
		default:
			if isScalarResourceName(name) {
				if a.scalar == nil {
					a.scalar = map[corev1.ResourceName]int64{}
				}
				a.scalar[name] += q.Value()
			}
		}
	}
}

// fits is the scheduler's noderesources.Fits as kubelet's admission calls
// it: the pods count, then cpu, memory, ephemeral-storage, then the
// scalar resources (in name order; kubelet's order is a map's).
func fits(pod *corev1.Pod, node *corev1.Node, admitted []*corev1.Pod) []*Rejection {
	var out []*Rejection
	alloc := node.Status.Allocatable
	allowedPods := alloc.Pods().Value()
	if int64(len(admitted))+1 > allowedPods {
		out = append(out, insufficient(corev1.ResourcePods, 1, int64(len(admitted)), allowedPods))
	}
	var req, used, capacity amounts
	// A new pod is counted by its spec (pod-level resources included,
	// the PodLevelResources gate being on); an admitted one also by its
	// status's resources where larger (a resize in progress), as the
	// scheduler's node info counts it.
	req.add(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
	for _, p := range admitted {
		used.add(resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{UseStatusResources: true, InPlacePodLevelResourcesVerticalScalingEnabled: true}))
	}
	capacity.add(alloc)
	if req.milliCPU == 0 && req.memory == 0 && req.ephemeral == 0 && len(req.scalar) == 0 {
		return out
	}
	if req.milliCPU > 0 && req.milliCPU > capacity.milliCPU-used.milliCPU {
		out = append(out, insufficient(corev1.ResourceCPU, req.milliCPU, used.milliCPU, capacity.milliCPU))
	}
	if req.memory > 0 && req.memory > capacity.memory-used.memory {
		out = append(out, insufficient(corev1.ResourceMemory, req.memory, used.memory, capacity.memory))
	}
	if req.ephemeral > 0 && req.ephemeral > capacity.ephemeral-used.ephemeral {
		out = append(out, insufficient(corev1.ResourceEphemeralStorage, req.ephemeral, used.ephemeral, capacity.ephemeral))
	}
	names := make([]corev1.ResourceName, 0, len(req.scalar))
	for name := range req.scalar {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if q := req.scalar[name]; q > 0 && q > capacity.scalar[name]-used.scalar[name] {
			out = append(out, insufficient(name, q, used.scalar[name], capacity.scalar[name]))
		}
	}
	return out
}

// withoutMissingExtendedResources is kubelet's removeMissingExtendedResources:
// the pod without the requests of extended resources the node does not
// have (cluster-level resources, or ones a DRA claim backs).
func withoutMissingExtendedResources(pod *corev1.Pod, node *corev1.Node) *corev1.Pod {
	backedByDRA := func(name corev1.ResourceName, container string) bool {
		st := pod.Status.ExtendedResourceClaimStatus
		if st == nil {
			return false
		}
		for _, m := range st.RequestMappings {
			if corev1.ResourceName(m.ResourceName) == name && m.ContainerName == container {
				return true
			}
		}
		return false
	}
	filter := func(cs []corev1.Container) {
		for i, c := range cs {
			kept := corev1.ResourceList{}
			for name, q := range c.Resources.Requests {
				if (isExtendedResourceName(name) || strings.HasPrefix(string(name), "deviceclass.resource.kubernetes.io/")) && backedByDRA(name, c.Name) {
					continue
				}
				if isExtendedResourceName(name) {
					if _, ok := node.Status.Allocatable[name]; !ok {
						continue
					}
				}
				kept[name] = q
			}
			cs[i].Resources.Requests = kept
		}
	}
	out := pod.DeepCopy()
	filter(out.Spec.Containers)
	filter(out.Spec.InitContainers)
	return out
}

// isExtendedResourceName is v1helper.IsExtendedResourceName: a name with
// a domain other than kubernetes.io, not a quota "requests." name.
func isExtendedResourceName(name corev1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) || strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+s)) == 0
}

// isScalarResourceName is the scheduler's: extended resources, hugepages,
// kubernetes.io-prefixed native resources and attachable volumes.
func isScalarResourceName(name corev1.ResourceName) bool {
	s := string(name)
	return isExtendedResourceName(name) || strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) ||
		strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) || strings.HasPrefix(s, corev1.ResourceAttachableVolumesPrefix)
}

// hostPort is one port a pod holds on the host, with the scheduler's
// defaults (all addresses, TCP).
type hostPort struct {
	ip, protocol string
	port         int32
}

// hostPorts is the scheduler's GetHostPorts: the host ports of the app
// containers and of the sidecars (restartPolicy Always init containers).
func hostPorts(pod *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(c *corev1.Container) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			hp := hostPort{ip: p.HostIP, protocol: string(p.Protocol), port: p.HostPort}
			if hp.ip == "" {
				hp.ip = "0.0.0.0"
			}
			if hp.protocol == "" {
				hp.protocol = string(corev1.ProtocolTCP)
			}
			out = append(out, hp)
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return out
}

// portsFit is the scheduler's nodeports.Fits: no host port of the pod is
// held by an admitted pod on the same protocol and port, on the same
// address or where either side binds all addresses (0.0.0.0).
func portsFit(pod *corev1.Pod, admitted []*corev1.Pod) bool {
	want := hostPorts(pod)
	if len(want) == 0 {
		return true
	}
	var used []hostPort
	for _, p := range admitted {
		used = append(used, hostPorts(p)...)
	}
	for _, w := range want {
		for _, u := range used {
			if u.protocol == w.protocol && u.port == w.port && (w.ip == "0.0.0.0" || u.ip == "0.0.0.0" || u.ip == w.ip) {
				return false
			}
		}
	}
	return true
}
