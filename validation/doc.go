// Package validation checks a pod as the Kubernetes API server does before
// a node ever sees it, for everything a node relies on for safety and
// correctness: names that become host paths, paths and modes that become
// files, quantities that become cgroup limits, probe and grace timings,
// sysctls, environment names and security settings.
//
// kubelet acts only on pods the API server (or its static-pod source's
// validation) accepted; podstart takes pods from anywhere, so every podstart
// entry point that writes to disk or starts anything calls [Check] first and
// refuses an invalid pod with an error matching [ErrInvalidPod] that names
// each bad field, with the API server's message.
//
// For a pod that never went through an API server, the documented path is
// defaults.Pod, then [Pod] (or [Check]). [Pod] accepts the empty value of
// every field the API server's defaulting fills (a pull policy, a probe
// threshold, a termination message path): defaulting would set it before
// validation, so [Pod] answers the same for a pod and for the pod defaults
// gives.
//
// Rules are kubelet v1.37.2's API server's (pkg/apis/core/validation,
// ValidatePodCreate, with the feature gates on by default in v1.37), and
// test/validationdiff compares [Pod] with it on random pods. Deliberate
// differences:
//   - metadata.uid must be set and must not contain '/' or NUL nor be "." or
//     "..": the API server assigns UIDs itself, podstart turns them into
//     directory names.
//   - An empty namespace is accepted (the API server takes it from the
//     request); podstart's callers use the pod's namespace as it is.
//   - Fields of the API that the node never reads (affinity, tolerations,
//     topology spread, scheduling gates, ...) are not checked here; the
//     package doc of each field group below says which are covered.
package validation
