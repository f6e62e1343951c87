// Package admission is kubelet v1.37.2's pod admission as pure functions
// over API types: before a pod new to the node gets a sandbox, its admit
// handlers decide whether the node takes it. A refused pod never runs;
// kubelet writes its status Failed, with the handler's reason and the
// message "Pod was rejected: " + the handler's message (StatusMessage;
// podworker.WithAdmission writes it so).
//
// Admitter.Admit runs kubelet's handlers in kubelet's order and returns
// the first refusal, a *Rejection matching ErrRejected:
//
//  1. Config.Before: kubelet's eviction manager comes first (under node
//     pressure: reason Evicted, "The node had condition: [DiskPressure]. ";
//     eviction.Admit, wrapped by the caller);
//  2. sysctls (SysctlAllowlist): a sysctl not in kubelet's safe list for
//     the node's kernel (SafeSysctls) nor allowed by
//     --allowed-unsafe-sysctls, or a namespaced one with the host's
//     namespace: SysctlForbidden, "forbidden sysctl: \"kernel.msgmax\" not
//     allowlisted";
//  3. Config.Resources: kubelet's topology manager calls the device
//     manager's Allocate per container here (devicemanager.Manager.Admit:
//     UnexpectedAdmissionError, "Allocate failed due to <error>, which is
//     unexpected"); its CPU and memory managers (policies "none") admit
//     every pod;
//  4. the predicate handler (its node first adjusted by
//     Config.UpdatePluginResources, if set): no node: InvalidNodeInfo; the pod's
//     kubernetes.io/os label or spec.os naming another OS (OS):
//     PodOSSelectorNodeLabelDoesNotMatch, PodOSNotSupported;
//     supplementalGroupsPolicy Strict on a node without the feature:
//     SupplementalGroupsPolicyNotSupported; then GeneralPredicates, with
//     the pods already admitted: the pods count and every requested
//     resource against the node's allocatable (OutOfpods, OutOfcpu,
//     OutOfmemory, OutOfephemeral-storage, OutOf<extended resource>:
//     "Node didn't have enough resource: cpu, requested: 500, used: 1800,
//     capacity: 2000"), required node affinity and nodeSelector
//     (NodeAffinity; when it is the only failure the node is read again
//     fresh and checked once more, as kubelet does), spec.nodeName
//     (NodeName), host ports (NodePorts) and untolerated NoExecute taints
//     (TaintToleration; not for static pods): "Predicate NodeAffinity
//     failed: node(s) didn't match Pod's node affinity/selector";
//  5. AppArmor (Linux): a Pending pod asking for a profile the host cannot
//     enforce: AppArmor, "Cannot enforce AppArmor: AppArmor is not enabled
//     on the host";
//  6. kubelet's pod features handler (pod-level resources: its gate is
//     on) and its node shutdown manager (graceful shutdown is off by
//     default) admit every pod.
//
// The pods already admitted are kubelet's active pods: admitted, and not
// in a terminal phase unless still being killed; a rejected or finished
// pod does not count. Kubelet admits a pod when it first learns of it, in
// order of creation when several come at once; podworker.WithAdmission
// calls Admit so (see podworker's doc for an agent's restart).
//
// # Differences from kubelet
//
//   - Critical pods (system-node-critical and system-cluster-critical
//     priority) that do not fit are rejected like any other: kubelet's
//     predicate handler first evicts lower-priority pods to make room for
//     them (its critical pod admission handler, preemption). podstart has
//     no preemption; the pod fails with the resource's OutOf reason.
//   - Pods already admitted are counted by their spec and, where larger,
//     their status's resources (a resize under way), as the scheduler's
//     node info counts them; kubelet counts them by the resources it
//     allocated to them (its allocation checkpoint), which are the same
//     except while a resize is pending.
//   - Kubelet reports the first failure of a map's iteration order when
//     several extended resources do not fit; here the first by name.
//   - Kubelet's declared-features handler (NodeDeclaredFeatures, GA in
//     v1.37) is not run: it matches features a pod needs (in-place
//     resize, RestartAllContainers, ...) against those the node declares
//     in status.declaredFeatures, which podstart's node does not publish
//     yet; podstart refuses what it does not support when it builds the
//     pod's sandbox and containers (criconfig).
//   - Kubelet's OS check writes kubernetes.io/os=<its OS> into its cached
//     Node's labels when the label is missing or differs (a side effect
//     later node affinity checks see); the Node is never changed here
//     (nodestatus keeps the label right, as kubelet's status loop does).
//   - Kubelet's handlers for a resize (podResizesAdmitHandler, reason
//     Infeasible) are not part of admission here: podworker and podsync
//     handle resizes.
package admission
