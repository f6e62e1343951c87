// Package criconfig turns a pod into the CRI requests kubelet v1.36 sends
// for it: PodSandboxConfig (SandboxConfig) and ContainerConfig
// (ContainerConfig), with their Linux parts — security context, seccomp,
// AppArmor, SELinux, masked and read-only /proc paths, user and group IDs,
// resources and OOM score, cgroup parent, namespaces, DNS, sysctls, ports,
// labels, annotations, env and mounts.
//
// Every function is pure: it takes the pod, the container, what the node
// is (Node) and what was learnt at run time (the image's user, the pod's
// IPs, the mounts) as arguments, and touches no runtime and no disk. podsync
// uses it to create sandboxes and containers; an operator or a test can ask
// "what exactly would kubelet send for this pod?" with no node at all.
//
// No silent drops: a pod setting that affects isolation and that podstart
// cannot honour is refused with an error that names it (ErrUnsupported,
// reported by podsync as CreateContainerConfigError), never ignored.
package criconfig
