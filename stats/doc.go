// Package stats builds the node's stats Summary (k8s.io/kubelet's
// stats/v1alpha1, what kubelet serves at /stats/summary and metrics-server
// and kubectl top read) and kubelet's /metrics/resource text, from CRI and
// the host, as kubelet v1.37's CRI stats provider with pod and container
// stats strictly from CRI (ListPodSandboxStats).
//
// # Node
//
//   - StartTime: the boot time (/proc/stat btime), as kubelet.
//   - CPU: usageCoreNanoSeconds from /proc/stat (user+nice+system+irq+
//     softirq, what the root cgroup's cpu.stat counts on cgroup v2, in
//     10 ms ticks); usageNanoCores the rate since the previous kept sample
//     (see Get).
//   - Memory: /proc/meminfo as cAdvisor's root cgroup: usage MemTotal −
//     MemFree, workingSet usage − Inactive(file), available MemTotal −
//     workingSet. rssBytes and page faults (the root memory.stat's) nil.
//   - Swap: SwapTotal − SwapFree used, SwapFree available.
//   - Network: /proc/1/net/dev without cAdvisor's ignored interfaces (lo,
//     veth*, docker*, nerdctl*), eth0 as the default interface.
//   - Fs: statfs of the root directory (used = capacity − free blocks).
//   - Runtime: ImageFs from the first filesystem CRI ImageFsInfo names
//     (used bytes and inodes from CRI, size from statfs of its mount point);
//     ContainerFs is the same, as kubelet's CRI stats provider reports it.
//     Without an image filesystem in the answer ImageFs is nil (kubelet
//     fails the whole Summary).
//   - Rlimit: kubelet's pidlimit (min of pid_max and threads-max, tasks
//     from /proc/loadavg).
//   - SystemContainers: those WithSystemContainer gives ("pods", "kubelet",
//     "runtime", "misc" in kubelet), without logs or rootfs; none by
//     default: podstart does not read cgroups here.
//
// A host file that cannot be read leaves its part nil; a failed CRI call
// fails the Summary.
//
// # Pods
//
// One entry per sandbox of ListPodSandboxStats that is current: when the
// runtime is also a Lister (every runtime.RuntimeService), per pod name
// and namespace its ready sandboxes or else its newest (kubelet's
// removeTerminatedPods), and per sandbox its running containers only;
// startTime the sandbox's and containers' CreatedAt. Without a Lister,
// per pod UID the sandbox of the highest attempt and per container name
// its highest attempt, with no start times.
//
//   - podRef, startTime; cpu, memory, network and processStats as CRI
//     gives them for the sandbox (nil where it gives none).
//   - containers: cpu (usageNanoCores the runtime's, else the rate
//     between kept samples, as kubelet's cpuUsageCache), memory
//     (workingSet, usage, rss, available, pageFaults, majorPageFaults),
//     swap, rootfs (the writable layer, sized by statfs of its mount
//     point) and logs (the files of <podLogsDir>/<ns>_<name>_<uid>/<name>,
//     their disk use and one inode each, on nodefs). A container whose
//     CRI stats lack CPU, memory or swap reads 0 there at the Summary's
//     time: kubelet does the same.
//   - ephemeralStorage: the containers' rootfs and logs, the pod log
//     directory's own files and the pod's etc-hosts, on nodefs.
//   - volumeStats: nil. kubelet measures every volume with du in a
//     background loop; emptyDir usage is not cheap enough to walk per
//     request and is not measured here.
//
// CPUAndMemory (?only_cpu_and_memory=true and /metrics/resource) is
// kubelet's GetCPUAndMemoryStats: node CPU, memory, swap, start time;
// per pod CPU, memory and the containers' swap summed; per container CPU,
// memory and swap with missing values as 0, as kubelet writes them.
//
// # CPU samples
//
// usageNanoCores needs two samples. As kubelet, only Get(ctx, true) keeps
// them (kubelet's eviction manager calls it every 10 s; eviction's
// CRISource does here): Summary and CPUAndMemory report the last rate
// computed, or nil before two samples, unless the runtime reports the
// rate itself (containerd does for containers). Samples older than 10
// minutes are forgotten.
//
// # Metrics
//
// WriteResourceMetrics writes the text exposition kubelet's resource
// metrics collector produces through its Prometheus registry, by hand:
// the collector's eleven families are plain counters and gauges, and
// client_golang (with client_model, common and procfs) is not worth
// importing for them.
package stats
