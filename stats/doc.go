// Package stats builds the node's stats Summary (k8s.io/kubelet's
// stats/v1alpha1, what kubelet serves at /stats/summary and metrics-server
// and kubectl top read) and kubelet's /metrics/resource text, from CRI and
// the host, as kubelet v1.37's CRI stats provider with pod and container
// stats strictly from CRI (ListPodSandboxStats), completed from the
// cgroups (WithCgroupDir, default /sys/fs/cgroup) where kubelet's default
// configuration (PodAndContainerStatsFromCRI off: cAdvisor's cgroup stats
// over CRI's) defines a field by the cgroup: PSI, availableBytes and
// swapAvailableBytes only under a known limit, the pod's swap.
//
// # Node
//
//   - StartTime: the boot time (/proc/stat btime), as kubelet.
//   - CPU: usageCoreNanoSeconds from /proc/stat (user+nice+system+irq+
//     softirq, what the root cgroup's cpu.stat counts on cgroup v2, in
//     10 ms ticks); usageNanoCores the rate since the previous kept sample
//     (see Get). psi: /proc/pressure/cpu.
//   - Memory: /proc/meminfo as cAdvisor's root cgroup: usage MemTotal −
//     MemFree, workingSet usage − Inactive(file), available MemTotal −
//     workingSet. rssBytes, pageFaults and majorPageFaults from the root
//     cgroup's memory.stat as cAdvisor reads it (anon on cgroup v2,
//     total_rss on v1, rss when memory.use_hierarchy is 0; pgfault and
//     pgmajfault; a missing key 0); nil when that file cannot be read.
//     psi: /proc/pressure/memory.
//   - IO (Get only, as kubelet): psi from /proc/pressure/io; nil without.
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
//     default: kubelet's are cAdvisor's full stats of a cgroup (with CPU
//     rates from its housekeeping), which podstart does not rebuild.
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
//     gives them for the sandbox (nil where it gives none), but
//     memory.availableBytes, which is kubelet's: the pod cgroup's limit −
//     workingSet when the limit is known (at most 2^62), else nil
//     (containerd writes 0 for no limit).
//   - swap: the pod cgroup's, as kubelet's addSwapStats: used from
//     memory.swap.current (v2) or memory.stat's total_swap (v1),
//     swapAvailableBytes the swap limit (memory.swap.max, or
//     memory.memsw.limit_in_bytes; a missing file is 0, as cAdvisor) −
//     used when known. Without the pod's cgroup: none in Get, the
//     containers' summed in CPUAndMemory (kubelet's strict-CRI path).
//   - io (Get only): CRI's when it reports it, else {time, psi} from the
//     pod cgroup's io.pressure; nil without either.
//   - containers: cpu (usageNanoCores the runtime's, else the rate
//     between kept samples, as kubelet's cpuUsageCache), memory
//     (workingSet, usage, rss, available, pageFaults, majorPageFaults),
//     swap, rootfs (the writable layer, sized by statfs of its mount
//     point) and logs (the files of <podLogsDir>/<ns>_<name>_<uid>/<name>,
//     their disk use and one inode each, on nodefs). A container whose
//     CRI stats lack CPU, memory or swap reads 0 there at the Summary's
//     time: kubelet does the same. CPU and memory (psi and availableBytes
//     included) are CRI's alone, as kubelet's CRI stats provider's
//     makeContainerStats takes them on containerd (side by side with
//     kubelet v1.37.2 on containerd 1.6: a container's availableBytes
//     from CRI, no container psi); with the container's cgroup found,
//     swap used is the cgroup's where CRI gives none. io (Get only, as
//     makeContainerStats): always, its psi CRI's.
//   - ephemeralStorage: the containers' rootfs and logs, the local
//     ephemeral volumes' stats (below), the pod log directory's own files
//     and the pod's etc-hosts, on nodefs.
//   - volumeStats: with WithVolumeStats, the pod's volume stats from the
//     cache of a VolumeAnalyzer (kubelet's fs resource analyzer: a
//     calculator per pod, measuring its mounted volumes when it starts
//     and then every period to twice the period, --volume-stats-agg-period
//     1m by default; never measured per request): the local ephemeral
//     volumes (disk emptyDir, configMap, gitRepo) first, which count in
//     ephemeralStorage, then the others (PVCs, generic ephemeral and CSI
//     inline volumes), which do not; pvcRef for a persistentVolumeClaim
//     (its claim) and a generic ephemeral volume (<pod>-<volume>). Each
//     kind sorted by name (kubelet's order is a map's). A volume whose
//     driver cannot measure it (ErrVolumeMetricsNotSupported: a CSI
//     driver without GET_VOLUME_STATS) or whose measure fails is left
//     out; a unit the driver does not report is 0, as kubelet writes it.
//     The VolumeSource says which volumes are measured: volumemanager's
//     Manager lists the CSI volumes (NodeGetVolumeStats); in-tree volumes
//     (emptyDir, configMap, secret, projected, ...), which kubelet
//     measures with du and statfs, are not measured, so the emptyDir
//     sizeLimit and ephemeral storage do not see them. Without
//     WithVolumeStats volumeStats is nil.
//
// # Cgroups
//
// A pod's cgroup is found as kubelet names it under the cgroup root
// (WithCgroupRoot, kubelet's --cgroup-root, default /), in the memory hierarchy (<dir>/memory on cgroup v1
// and hybrid hosts, <dir> on v2): kubepods[/burstable|/besteffort]/
// pod<uid> (cgroupfs driver) or kubepods.slice/kubepods[-qos].slice/
// kubepods[-qos]-pod<uid, - as _>.slice (systemd); a container's is the
// child named <id> or <prefix>-<id>.scope (kubelet's
// extractIDFromCgroupPath). A pod or container whose cgroup is not found
// keeps CRI's values and has no PSI.
//
// # PSI
//
// psi (cpu, memory and io; some and full; avg10, avg60, avg300 in percent
// and total in microseconds, as the kernel writes it: kubelet copies
// runc's parse unconverted, though its API comment says nanoseconds) is
// CRI's where the runtime reports it, else read from pressure files: the
// node's from /proc/pressure (the same numbers as the root cgroup's on
// cgroup v2), a pod's or container's from its cgroup in the cgroup v2
// hierarchy (<dir> on v2, <dir>/unified on a hybrid host, where the
// kernel keeps per-cgroup pressure whatever the controllers).
//
// Deliberate difference: kubelet (through cAdvisor) writes psi on every
// cAdvisor-backed CPU and memory stat, and all its numbers are 0 when its
// source has none: always on cgroup v1 and hybrid hosts (runc's v1
// manager never reads pressure files, even where the unified hierarchy
// has them), and on v2 without a pressure file (kernel without PSI,
// psi=0). podstart never writes those zeros, which would claim "no
// pressure": where a pressure file exists its numbers are reported (so on
// a hybrid host podstart's psi is real where kubelet's is 0, with the
// same shape), and where none exists psi is nil (so kubelet has psi
// fields there that podstart does not).
//
// CPUAndMemory (?only_cpu_and_memory=true and /metrics/resource) is
// kubelet's GetCPUAndMemoryStats: node CPU, memory (with psi), swap,
// start time; per pod CPU, memory and swap (the pod cgroup's, else the
// containers' summed); per container CPU, memory and swap with missing
// values as 0, as kubelet writes them (but availableBytes and
// swapAvailableBytes under the rule above when the cgroup is found). No
// IO anywhere, as kubelet.
//
// # Still different from kubelet's default configuration
//
//   - Pods' and containers' CPU and memory values are CRI's (kubelet
//     replaces them with cAdvisor's reading of the same cgroups: equal
//     counters, taken at a slightly different time; pod rss and page
//     faults are CRI's, nil from containerd 1.6).
//   - The node's memory usage and working set come from /proc/meminfo on
//     cgroup v1 too (cAdvisor reads the v1 root's memory.usage_in_bytes);
//     kubelet also lowers availableBytes by hugepages (HugepageAwareEviction).
//   - No system containers unless given (above).
//   - Pods under a non-default --cgroup-root are not found (CRI's values).
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
