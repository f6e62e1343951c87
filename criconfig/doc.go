// Package criconfig turns a pod into the CRI requests kubelet v1.37.2
// sends for it: PodSandboxConfig (SandboxConfig) and ContainerConfig
// (ContainerConfig), with their Linux parts.
//
// Every function but FromHost is pure: it takes the pod, the container,
// what the node is (Node) and what was learnt at run time (the image's
// user from ImageStatus, the pod's IPs, the resolved environment, the
// mounts) as arguments and touches no runtime and no disk. podsync uses it
// to create sandboxes and containers; an operator or a test can ask "what
// exactly would kubelet send for this pod?" with no node at all.
// SandboxJSON and ContainerJSON write the result as the files `crictl
// runp` and `crictl create` read.
//
// # What is built, as kubelet builds it
//
// Sandbox: metadata, kubelet's labels, the pod's annotations, hostname
// (none with host network; the FQDN with setHostnameAsFQDN), log directory
// <podLogsDir>/<ns>_<name>_<uid>, port mappings, DNS from dnsPolicy
// (DNSConfig: ClusterFirst with the cluster's servers and searches and
// ndots:5, Default from the node's resolv.conf, None, spec.dnsConfig
// merged, at most 3 servers and 32 searches of 2048 characters; with no
// cluster domain, kubelet's default, no cluster searches and a subdomain's
// domain "<subdomain>.<namespace>.svc."), cgroup parent by QoS class
// (QOSClass: kubelet v1.37's per-container classes, a pod-level block only
// when it names cpu, memory or huge pages; cgroupfs or systemd; the cgroup
// root with cgroupsPerQOS off), sysctls (names normalised to dots as
// kubelet's SyncPod does: kernel/shm_rmid_forced becomes
// kernel.shm_rmid_forced), namespaces (host network, PID, IPC,
// shareProcessNamespace, the node's user namespace), the security
// context (RuntimeDefault seccomp always, privileged when any container
// is, run-as user and group, fsGroup then supplementalGroups, the policy,
// SELinux) and the pod's resources and overhead.
//
// Container: runAsNonRoot verified against the image's user with kubelet's
// CreateContainerConfigError messages (ErrRunAsNonRoot); the effective
// security context (pod settings under the container's); seccomp (field,
// Unconfined by default, RuntimeDefault with Node.SeccompDefault,
// Localhost under <rootDir>/seccomp); AppArmor (fields and the beta
// annotations, sent both as a profile and in the older string form);
// SELinux; the image's user when no runAsUser is set; no_new_privs from
// allowPrivilegeEscalation: false; capabilities; kubelet's 12 masked and 5
// read-only /proc and /sys paths unless procMount is Unmasked;
// supplemental groups; resources (CPU shares from the request, quota from
// the limit with a 100ms period, the memory limit, pod-level limits where
// the container sets none, OOM score adjustment by QoS class, a limit for
// each huge page size of the node, NoSwap: the swap limit equal to the
// memory limit on cgroup v1, memory.swap.max 0 on v2; on cgroup v2,
// MemoryQoS, beta and on by default since v1.37: memory.min and
// memory.low by Node.MemoryReservationPolicy, "0" under kubelet's default
// None, memory.high with a Node.MemoryThrottlingFactor, memory.high "max"
// with Node.MemoryQoS false; the same on an in-place resize,
// ContainerResources); env with field and resource references resolved
// (FieldRefValue: a resourceFieldRef limit the container does not set
// reads as the pod-level limit, then the node's allocatable, as kubelet's
// defaultPodLimitsForDownwardAPI), the service variables a
// container gets (ServiceEnv, ServiceEnvVars: kubelet's
// getServiceEnvVarMap and envvars.FromServices) and $(VAR) expansion of
// command and args; labels and annotations (hash, restart count,
// termination message, grace periods, preStop handler, ports); log path.
// The differential tier (test/diff) compares QOSClass, OOMScoreAdj,
// PodMemoryLimit, DNSConfig, the sandbox's sysctls and resourceFieldRef
// env values with kubelet v1.37.2's own functions on random inputs. The
// real-kubelet tier (test/kubelet) compares both requests field by field
// with kubelet v1.37.2's on 37 pods (pod-level resources among them).
//
// # No silent drops
//
// A pod setting that affects isolation and that podstart cannot honour on
// the node is refused with an error naming it that matches ErrUnsupported
// (podsync reports CreateContainerConfigError, or a failed sandbox), never
// ignored. The list is Refusals:
//
//   - spec.os.name: windows;
//   - spec.hostUsers: false on a node whose runtime lacks user namespaces
//     (Node.UserNamespaces false, as containerd 1.6; kubelet's own
//     message) or without a Node.UserNamespaceMapper; with both, the
//     sandbox and containers get the pod's mapping (mode POD) and every
//     mount is ID-mapped, as kubelet sends them;
//   - spec.resourceClaims, containers' resources.claims (DRA) on a node
//     without a DRA manager (Node.DynamicResourceAllocation);
//   - volumeDevices (raw block volumes) on a node whose volume manager
//     does not map them (Node.BlockVolumes), and with it a volumeDevice
//     whose device is not among the container's Devices;
//   - an AppArmor profile other than Unconfined on a node without AppArmor
//     (Node.AppArmorEnabled), refused before any sandbox as kubelet's
//     admission does;
//   - supplementalGroupsPolicy: Strict on a runtime that does not report it
//     (Node.SupplementalGroupsPolicyStrict), likewise.
//
// Windows options are not refused: kubelet v1.37.2 on Linux reads
// securityContext.windowsOptions (pod or container, hostProcess true
// included) nowhere, builds no Windows sandbox or container config, and
// checks hostProcess only on Windows; podstart does the same and sends
// nothing for them. What the API server refuses is validation's: any
// windowsOptions in a pod with spec.os.name linux, and (spec.os unset) a
// hostProcess container without hostNetwork or beside non-hostProcess
// containers. A pod with spec.os.name windows is refused (above).
//
// Kubelet always knows its node; podstart knows what Node carries (FromHost
// reads what the host can tell). A value that needs a node fact Node lacks
// is refused with an error naming the field and the fact, matching
// ErrUnknownNodeFact, never sent as "" or "0":
//
//   - env fieldRef status.hostIP and status.hostIPs without Node.HostIPs,
//     and status.podIP and status.podIPs of a host-network pod (whose IPs
//     are the node's, one per family, as kubelet's GetNodeHostIPs);
//   - env resourceFieldRef limits.cpu, limits.memory or
//     limits.ephemeral-storage of a container without that limit, in a pod
//     without a pod-level one, when Node.Allocatable lacks the resource;
//   - the OOM score of a Burstable container without Node.MemoryCapacity;
//   - MemoryQoS's memory.high (with a Node.MemoryThrottlingFactor) for a
//     container without a memory limit when Node.Allocatable has no memory.
//
// # Deliberate differences from kubelet
//
//   - Environment order: kubelet builds it in a Go map, so its order is
//     random per call; podstart keeps envFrom then env in spec order. Where
//     two Services would set one variable, ServiceEnv lets the Service
//     whose name sorts last win (kubelet: a map's order decides). A
//     Service with a cluster IP and no ports gives no variable (the API
//     server stores none; kubelet's FromServices would panic).
//   - DNS options: kubelet merges them through a map (random order);
//     podstart sorts them.
//   - subPath mounts: kubelet bind-mounts the checked path under
//     <rootDir>/pods/<uid>/volume-subpaths/<volume>/<container>/<index> so
//     the runtime mounts exactly what was checked; podstart passes the path
//     that mounts' OSDisk resolved and checked (through an fd, with
//     filepath-securejoin). A path swapped for a link after the check and
//     before the runtime's mount is not caught: the window kubelet closes.
//   - Admission checks beyond isolation (unsafe sysctls, node resources)
//     are the caller's: criconfig builds what kubelet would send once a pod
//     is admitted.
//   - Devices from device plugins and DRA are the caller's to find
//     (Container.Devices, CDIDevices, Annotations; podsync.WithDevices);
//     criconfig only places them. Windows configs are not built. MemoryQoS is built for
//     containers only: kubelet also sets the pod cgroup's memory.high,
//     and podstart sets no pod-level cgroup values (see podsync).
//   - Node allocatable from FromHost is kubelet's default configuration's
//     (no kube-reserved or system-reserved; the default hard eviction
//     thresholds memory.available 100Mi and nodefs.available 10%
//     subtracted); a node with other settings passes Node.Allocatable.
//
// # Logs
//
// This package writes no logs: every function returns what it built or an
// error. The packages that log (images, podsync) use the logr.Logger in the
// context (logr.FromContextOrDiscard), discarded by default, and never log
// credentials.
package criconfig
