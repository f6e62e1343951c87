// Package eviction is kubelet v1.37.2's eviction manager
// (pkg/kubelet/eviction) as a library: what a node under memory, disk or
// PID pressure reports, which pod it evicts, with which status, and which
// pods it refuses meanwhile.
//
// # Signals and thresholds
//
// A Threshold is met when a Signal's available amount is below its value:
// memory.available, allocatableMemory.available, nodefs.available,
// nodefs.inodesFree, imagefs.available, imagefs.inodesFree,
// containerfs.available, containerfs.inodesFree, pid.available.
// ParseThresholds reads kubelet's flags (--eviction-hard, --eviction-soft,
// --eviction-soft-grace-period, --eviction-minimum-reclaim): a quantity
// ("100Mi") or a percentage of the signal's capacity ("10%"); "0%" and
// "100%" are ignored; soft thresholds need a grace period. Errors match
// ErrUnsupportedSignal, ErrInvalidThreshold or ErrMissingGracePeriod with
// errors.Is and keep kubelet's text. DefaultThresholds is kubelet's Linux
// default, memory.available<100Mi, nodefs.available<10%,
// nodefs.inodesFree<5%, imagefs.available<15%, imagefs.inodesFree<5%, with
// allocatableMemory.available<100Mi because kubelet enforces allocatable on
// pods by default. containerfs thresholds are never taken as given: New
// derives them from nodefs's or imagefs's for the node's DiskLayout
// (UpdateContainerFsThresholds), as kubelet does.
//
// # Observations
//
// Stats come from a StatsSource as the Summary API's type
// (k8s.io/kubelet/pkg/apis/stats/v1alpha1, what kubelet's /stats/summary
// serves), so an existing stats provider plugs in unchanged. Observe
// derives the signals from it: memory from Node.Memory (available, and
// available + working set as capacity) and from the "pods" system
// container, nodefs from Node.Fs, imagefs and containerfs from
// Node.Runtime, PIDs from Node.Rlimit. Per pod it reads the pod's and its
// containers' working set, writable layer (Rootfs), logs, volumes,
// ephemeral storage and process count. A signal whose stats are missing is
// not observed and its thresholds are never met.
//
// CRISource is a StatsSource over a stats.Provider (package stats: CRI
// ListPodSandboxStats and the host, as kubelet's CRI stats provider),
// keeping CPU samples on every pass as kubelet's eviction manager does.
// The provider reports the image filesystem as the container filesystem
// too, as kubelet's CRI stats provider does. Volumes are measured only
// with WithVolumeStats (or a provider with stats.WithVolumeStats): CSI
// volumes through volumemanager, which are not local, so they count
// neither in the disk rankings nor in the ephemeral storage limits, as
// kubelet's; in-tree volumes are not measured, so the disk rankings and
// emptyDir limits see writable layers, logs and etc-hosts. It does not
// measure the pods cgroup unless WithPodsMemory gives it
// (allocatableMemory.available is otherwise not observed).
//
// # One pass (Manager.Synchronize)
//
// Each pass, as kubelet's synchronize: observe; the thresholds met, plus
// those met before whose minimum reclaim is not reached; the node
// conditions of all of them, each kept for the pressure transition period
// (5 minutes) after its last threshold stops being met; the thresholds
// whose grace period has passed and whose stats are newer than the last
// pass's. Pods over a local storage limit (an emptyDir sizeLimit, the
// pod's ephemeral-storage limits, a container's) are evicted first, all of
// them, with 1 s of grace and no DisruptionTarget condition. Then the
// first threshold in kubelet's order (memory first) is reclaimed: for disk
// signals the ContainerGC and ImageGC run first (which, depends on the
// layout, as kubelet), and if a fresh observation shows every threshold
// back past its minimum reclaim, no pod is evicted. Otherwise the active
// pods are ranked for the signal and the first that is not critical
// (static, mirror, or priority ≥ 2000000000) is evicted: 1 s of grace for
// a hard threshold, min(maxPodGracePeriodSeconds, the pod's
// terminationGracePeriodSeconds) for a soft one.
//
// # Ranking
//
// RankMemoryPressure: pods without stats first, then pods whose working
// set exceeds their memory request, then by priority (lowest first), then
// by working set above the request (largest first). Disk
// (RankDiskPressure): the same with the bytes or inodes of what the layout
// counts (RankFor: writable layers, logs, local volumes). PID
// (RankPIDPressure): priority, then process count. The comparisons are
// kubelet's and the sort is the same (sort.Sort), so pods that compare
// equal end in kubelet's order too. Requests are the pod-level ones when
// set, else the containers', plus overhead (RequestOf).
//
// # What a caller writes
//
// The Killer gets an Eviction: the pod, the grace period, kubelet's
// message ("The node was low on resource: memory. Threshold quantity:
// 100Mi, available: 50Mi. Container c was using 300Mi, request is 100Mi,
// has larger consumption of memory. ") and event annotations
// (offending_containers, offending_containers_usage, offending_pod,
// offending_pod_usage, starved_resource). Eviction.Status writes phase
// Failed, reason Evicted, the message, and the condition DisruptionTarget
// True with reason TerminationByKubelet and the pod's generation. Events
// go to an EventRecorder (client-go's fits): EvictionThresholdMet on the
// node (WithNodeRef), Evicted on the pod.
//
// # Conditions and admission
//
// Manager.Conditions, IsUnderMemoryPressure, IsUnderDiskPressure and
// IsUnderPIDPressure feed the node's MemoryPressure, DiskPressure and
// PIDPressure conditions. Admit (and Manager.Admit) refuse as kubelet's
// admit handler: nothing under no pressure; critical pods are always
// admitted; under MemoryPressure alone only BestEffort pods that do not
// tolerate node.kubernetes.io/memory-pressure:NoSchedule are refused;
// under any other pressure every other pod is refused. The error is an
// *AdmitError matching ErrNodePressure, with kubelet's reason (Evicted)
// and message ("The node had condition: [DiskPressure]. ").
//
// # Differences from kubelet
//
//   - Order where kubelet's is Go's map order: ParseThresholds sorts each
//     flag map by signal; the thresholds past their grace period keep the
//     configuration's order (kubelet takes them from a map, and its
//     priority sort keeps that order among disk signals, so with two disk
//     thresholds met kubelet may reclaim either); Conditions lists
//     MemoryPressure, DiskPressure, PIDPressure in that order (kubelet's
//     admission message lists them in map order).
//   - The disk layout is given (WithDiskLayout) rather than detected from
//     cAdvisor; a split layout is allowed, as KubeletSeparateDiskGC (on by
//     default in v1.37) allows it.
//   - Kernel memcg notifications (kernelMemcgNotification, off by default)
//     are not used: memory is observed each pass only.
//   - A stats source error makes Synchronize return it (matching ErrStats);
//     kubelet logs it and does nothing that pass, as Run does.
//   - A failed kill still counts as the pass's eviction, as in kubelet, and
//     Synchronize returns the error too (matching ErrEvict).
//   - Without a ContainerGC or ImageGC only the collectors given run; with
//     none for a signal no fresh observation is taken, as kubelet does for
//     signals with no collector.
//   - Taint comparison operators in tolerations (TaintTolerationComparisonOperators,
//     alpha, off) and memory-backed emptyDir sizing
//     (InPlacePodVerticalScalingMemoryBackedVolumes, alpha, off) follow the
//     gates' defaults and cannot be turned on.
//   - No metrics are recorded.
package eviction
