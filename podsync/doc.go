// Package podsync decides what to do with a pod and does it.
//
// ComputePodActions is kubelet's computePodActions (v1.33–v1.35) as a pure
// function of the pod, what the runtime reports (PodStatus) and the probe
// results:
//
//   - Sandbox: none, several ready, the newest not ready, a changed network
//     namespace (sandbox ID then ""), or no IP for a pod-network pod means a
//     new sandbox with attempt max+1; otherwise attempt stays at the
//     maximum. Under restartPolicy Never a sandbox is not recreated once
//     containers ran; under OnFailure not when every container succeeded.
//   - Init containers run strictly one at a time, in order; a failed one
//     (exit non-zero, OOMKilled whatever the code, or unknown) is retried,
//     or under Never the pod is killed; one stuck in created is started
//     again; app containers start only after the last init container is
//     done. Sidecars (restartPolicy: Always) count as done once started and
//     past their startup probe, and are restarted even under Never until
//     every app container has finished.
//   - App containers: started when absent, restarted per restart policy,
//     killed and restarted on a hash change (even under Never) or a
//     liveness or startup failure; unknown ones are killed before restart.
//   - HashContainer equals kubelet's container hash (name and image only).
//   - BackOff is CrashLoopBackOff: 10 s doubling to 300 s, reset after 10
//     minutes of run time, on an injectable clock. WithBackOff(initial, max)
//     sets the delays, as images.WithBackOff does for pulls;
//     WithSharedBackOff shares one BackOff between Syncers.
//
// Each decision carries a reason a person can read (Actions.SandboxReason,
// KillPodReason, Waiting, the kill messages) and Actions.String() sums
// them up for a log line.
//
// # Differences from kubelet
//
// Only the sidecar-aware path exists: kubelet's legacy path (feature gate
// LegacySidecarContainers, off by default and being removed) is not
// implemented, nor are in-place resize, container restart rules or
// restart-all-containers. Kubelet cannot tell whether an exited app
// container ran in the current sandbox, so with a sidecar running and
// every app container crashed it may re-run init containers instead of
// restarting the apps (kubernetes#136969); when ContainerStatus.SandboxID
// is set (Syncer.Status sets it), an app container that exited in the
// current sandbox counts as proof of initialisation. Without it the
// behaviour is kubelet's.
//
// SyncPod takes pods from anywhere, not only from the API server, so it
// first refuses (Result.SyncError matching mounts.ErrInvalidName, nothing
// created) a pod whose UID, namespace, name, container or volume names the
// API server would reject, since they become host paths. DefaultVolumes
// refuses a hostPath volume with an empty path ("path is empty").
//
// # Logs and concurrency
//
// SyncPod logs to the logr.Logger in its context
// (logr.FromContextOrDiscard; attach one with logr.NewContext), so logs are
// discarded by default; the decisions at V(3), failed starts at V(2). No log
// line carries credentials: pull secrets go only to the image manager.
//
// A Syncer may sync many pods at once, but must not sync one pod twice at
// once: two concurrent SyncPod calls for the same pod can both see no
// sandbox and both create one. Callers serialise per pod (one worker per pod UID,
// as kubelet's pod workers do).
package podsync
