// Package runtime is the seam between podstart and a container runtime: the
// few CRI v1 calls that pod start makes, as two small interfaces, one place
// where runtime errors are classified, and a gRPC client for real runtimes.
//
// # Interfaces
//
// ImageService and RuntimeService hold only what pod start calls. Their
// method signatures are identical to those of k8s.io/cri-api/pkg/apis
// ImageManagerService and RuntimeService, so kubelet's CRI client
// (k8s.io/cri-client), cri-api's testing fakes and runtime/fake all satisfy
// them unchanged. Runtime is both.
//
// # Errors
//
// Every error the client returns is a *Error that matches one class with
// errors.Is: ErrUnavailable, ErrNotFound, ErrDeadlineExceeded, ErrCanceled,
// ErrUnimplemented, ErrUnauthorized, ErrRegistryUnavailable or
// ErrSignatureValidationFailed. CRI has no code for a registry that refuses
// credentials; containerd reports a 401 as code Unknown with
// "401 Unauthorized" in the text, and Classify is the one place that reads
// that text. Errors from other implementations can be classified with
// Classify, which is idempotent.
//
// # Client
//
// Dial connects to a unix socket endpoint ("unix:///run/containerd/containerd.sock";
// a bare path is taken as a unix socket, as kubelet does) and checks that
// the runtime serves CRI v1. Defaults follow kubelet: 2 minutes to connect
// and per call, PullImage bounded only by its context, 16 MiB messages.
//
// One difference from kubelet's client, on purpose: the per-call timeout
// is kept by one watchdog goroutine (alive only while calls are in
// flight) that cancels a call once it is overdue, instead of a gRPC
// deadline on every call. A deadline costs a timer on each end and a
// grpc-timeout header to write and parse: about 8 allocations per call,
// a sixth of podstart's own allocations in a pod start
// (BenchmarkSyncPodOverhead). A call still ends with ErrDeadlineExceeded
// at most an eighth of the timeout (or a second) past it, and the
// runtime sees the call cancelled, not a deadline told in advance.
// StopContainer and ExecSync, whose bounds grow with their grace period
// or command timeout, still send deadlines.
//
// The client is written directly on the generated CRI stubs rather than on
// k8s.io/cri-client, for reasons measured on v0.37.2 (go list -deps): a
// program importing cri-client builds 155 non-standard packages, among them
// 26 of OpenTelemetry, klog and component-base, against 113 for this
// package; it uses one duration both to connect and for every call and fixes
// the message size at 16 MiB, where callers here may set each; and it opens
// one connection per service, where Client shares one. Its retry-free call
// semantics are the same, so behaviour does not change.
package runtime
