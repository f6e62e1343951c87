// Package validation checks a pod as the Kubernetes API server does before
// a node ever sees it, for everything a node relies on for safety and
// correctness: names that become host paths, paths and modes that become
// files, quantities that become cgroup limits, probe and grace timings,
// sysctls, environment names and security settings.
//
// kubelet acts only on pods the API server (or its static-pod source's
// validation) accepted; podstart takes pods from anywhere, so every podstart
// entry point that writes to disk or starts anything (podsync's SyncPod and
// DefaultVolumes, mounts.Make, apiobjects' Volumes, podworker's Upsert)
// calls [Check] first and refuses an invalid pod with an error matching
// [ErrInvalidPod] that names each bad field, with the API server's message.
//
// For a pod that never went through an API server, the documented path is
// defaults.Pod, then [Check]. [Pod] accepts the empty value of every field
// the API server's defaulting fills (a pull policy, a probe threshold, a
// termination message path, requests copied from limits): defaulting would
// set it before validation, so [Pod] answers the same for a pod and for the
// pod defaults.Pod gives (FuzzPod checks this).
//
// The rules are those of the v1.37.2 API server's create path (defaulting,
// PrepareForCreate, ValidatePodCreate) with the feature gates at their
// v1.37 defaults; test/diff/validation compares [Pod] with it on random
// valid and mutated pods. Covered: metadata (names, namespace, labels,
// annotations with the pod-specific ones), every volume type, containers,
// init containers (sidecars) and ephemeral containers (names, images,
// ports, env and envFrom, volume mounts and devices, probes, lifecycle
// hooks, resources, resize and restart policies and rules, security
// context), and the pod-level fields (restart and DNS policy, dnsConfig,
// host namespaces and user namespaces, pod security context with sysctls,
// seccomp and AppArmor, hostname, subdomain and hostnameOverride, host
// aliases, service account, node, priority and runtime class names,
// activeDeadlineSeconds, readiness gates, OS, pod-level resources and
// overhead).
//
// Deliberate differences:
//   - metadata.uid must be set and must not contain '/' or NUL nor be "." or
//     "..": the API server assigns UIDs itself, podstart turns them into
//     directory names.
//   - An empty namespace is accepted (the API server takes it from the
//     request).
//   - privileged containers are accepted, as by an API server run with
//     --allow-privileged=true (kubeadm's, and every distribution's, setting;
//     the flag's own default refuses them).
//   - Ephemeral containers are checked as the API server checks them when
//     they are added (the ephemeralcontainers subresource); its create path
//     refuses any, but a node runs pods that got them later.
//   - [Check], unlike [Pod], refuses the fields the API server drops from a
//     new pod because their gates are off in v1.37 (emptyDir.mode, the
//     user and defaultUser fields of Secret, ConfigMap, downward API and
//     projected volumes, lifecycle.stopSignal, bindMountOptions, gRPC probes'
//     mode, httpGet.protocol): kubelet never sees them and podstart does not
//     honour them.
//   - Fields only a scheduler or a controller reads are not checked:
//     affinity, tolerations (and their annotation), topology spread,
//     scheduling gates and groups, resource claims' templates beyond their
//     names, finalizers' names. Windows-only rules are not checked
//     beyond what a Linux pod must not set: criconfig refuses Windows pods.
package validation
