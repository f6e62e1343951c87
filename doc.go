// Package podstart is the kubelet's pod-start path as a library: small
// packages that a node agent, an operator or a unit test can import without
// importing kubelet.
//
// runtime is the seam to a container runtime: two small interfaces over the
// CRI v1 calls pod start makes, one place where runtime errors are
// classified for errors.Is, a gRPC client (Dial) for containerd, CRI-O and
// any CRI endpoint, and runtime/fake, an in-memory runtime that can also be
// served on a unix socket.
//
// credentials is the node keyring: kubelet's docker config search order and
// registry matching, keyrings from pod pull secrets, caching, exec
// credential provider plugins (service-account tokens included) and,
// beyond kubelet, credential helpers.
//
// images is EnsureImageExists: default tag, pull policy, per pod and image
// back-off, serial or parallel pulls with a limit, one runtime pull shared
// by concurrent callers whose requests are equal, and kubelet's errors and
// events; images/pullrecords keeps kubelet's records of which credentials
// pulled which image (ensure secret-pulled images).
//
// mounts turns a container's volume mounts into runtime mounts: safe
// subPaths that never resolve outside their volume, the managed /etc/hosts,
// mount propagation, the termination message file, CRI mounts and docker
// bind strings; it also writes volume payloads as kubelet's AtomicWriter
// and mounts the tmpfs of memory-backed volumes.
//
// criconfig is pure: a pod and the node's settings to the PodSandboxConfig
// and ContainerConfig kubelet sends; defaults applies the API server's
// defaults to a pod that never went through one, and validation checks it
// as the API server would (every entry point that writes to disk or starts
// anything refuses an invalid pod with validation.ErrInvalidPod).
//
// podsync decides what to do with a pod (sandbox, init containers in order,
// sidecars, restarts with back-off, in-place resize) as a pure function,
// carries it out over CRI with SyncPod, kills pods and collects what they
// leave. apistatus turns the runtime's view into a corev1.PodStatus;
// probes runs liveness, readiness and startup probes; apiobjects resolves
// what a pod refers to in the API (Secret, ConfigMap, downward API and
// projected volumes, service account tokens, env, pull secrets); podworker
// drives each pod with one loop; statusmanager writes its statuses to an
// API server; nodestatus keeps the Node and its Lease. None imports
// client-go: a node agent adapts its client to small interfaces
// (examples/nodeagent).
//
// The layers import strictly downward: statusmanager above podworker,
// above apistatus, apiobjects and probes, above podsync, above images,
// criconfig and mounts, all above runtime; nodestatus needs only criconfig
// and runtime; credentials and mounts stand alone (no gRPC). podstart is
// Linux-only.
package podstart
