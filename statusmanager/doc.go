// Package statusmanager writes the statuses podworker computes to the API
// server: kubelet v1.37.2's status manager (pkg/kubelet/status) and its
// PatchPodStatus (pkg/util/pod) as a library, over a three-method Client
// instead of client-go.
//
// Pass Manager.OnSync to podworker.WithOnSync and run Manager.Run. OnSync
// runs on the pod's goroutine and never waits for the API server: it keeps
// the pod's newest status under a new version, only when it differs from
// the last one in a field kubelet owns (kubelet's isPodStatusByKubeletEqual:
// other components' conditions and resource claim statuses are not
// compared, condition times neither), and wakes Run. A pod with a deletion
// timestamp, or removed by the worker, always gets a new version, as in
// kubelet. Run writes, from one goroutine:
//
//   - when woken, every version not yet written (kubelet's
//     syncBatch(false));
//   - every sync period (DefaultSyncPeriod, 10 s, on the clock of
//     WithClock), also every pod whose status in the API server differs
//     from the manager's in a field kubelet owns, and every pod that may
//     now be deleted (needsUpdate, needsReconcile). The API server's status
//     is the one last seen: the pod OnSync was given (the caller's view,
//     kubelet's pod manager) or the one the last read or patch returned.
//
// Writing one pod is kubelet's syncPod: the pod is read live (Client.GetPod;
// kubelet does not use its cache there); a pod the API server no longer has
// is skipped; one with another UID (deleted and recreated under the same
// name) is not written and its entry is dropped. Static pods: with
// WithMirrorPods (staticpods.Mirrors), the pod read by name is the static
// pod's mirror pod, written when its UID translates to the static pod's;
// a static pod without a mirror is skipped, a recreated mirror gets the
// status again (written versions are kept per mirror UID); a mirror pod is
// never deleted here and a removed static pod's phase is not forced
// terminal, as in kubelet. (A static
// pod's OnSync gives the static pod as the API server's view, so the
// periodic reconcile reads its mirror once more than kubelet would.) The
// status to send is kubelet's mergePodStatus of the API server's and the manager's:
//
//   - conditions kubelet does not own (a scheduler's, a readiness gate's,
//     an eviction's) are kept from the API server's status; kubelet's own
//     (PodScheduled, Initialized, Ready, ContainersReady,
//     PodReadyToStartContainers, resize and AllContainersRestarting) are
//     the manager's;
//   - DisruptionTarget is sent only with the pod's transition to a
//     terminal phase, once no container can run, with a fresh transition
//     time;
//   - a terminal phase is not sent while containers could still run: the
//     API server's phase, reason and message are kept;
//   - a terminal pod is never reported Ready or ContainersReady (reason
//     PodFailed or PodCompleted);
//   - resource claim statuses are the API server's.
//
// The patch is exactly PatchPodStatus's (StatusPatch): a two-way strategic
// merge patch from the API server's status to the merged one, the pod's UID
// in it as a precondition, not sent when it holds nothing else. Once the
// pod is being deleted, its phase in the API server is terminal and the
// worker removed it (podworker's PodState.Removed: killed, everything of it
// removed; kubelet's podIsFinished), the object is deleted with grace
// period 0 and its UID as precondition (kubelet's canBeDeleted).
//
// A failed read, patch or delete is not lost: the version stays unwritten
// (or the pod deletable) and is tried again at the next wake or sync
// period. Run logs failures to the context's logr logger; Sync does the same
// work on the caller's goroutine and returns them (errors.Is and errors.As
// reach the Client's errors).
//
// A pod's entry is dropped when the pod is deleted, when the API server
// holds another pod under its name, when the worker removed it and the API
// server no longer has it, and when the worker removed it and its final
// status was written (the API server keeps an object not being deleted;
// nothing more is written for it). A pod whose status was written and
// that the API server then no longer has (not found, or the node
// authorizer's 403 for a pod no longer bound to the node) while the worker
// still kills it, after a forced deletion, is dropped too, and its
// statuses are ignored until the worker's last.
//
// A Client over client-go:
//
//	func (c apiClient) GetPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
//		return c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
//	}
//	func (c apiClient) PatchPodStatus(ctx context.Context, ns, name string, patch []byte) (*corev1.Pod, error) {
//		return c.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
//	}
//	func (c apiClient) DeletePod(ctx context.Context, ns, name string, uid types.UID) error {
//		return c.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64), Preconditions: metav1.NewUIDPreconditions(string(uid))})
//	}
//
// Package fake is an in-memory Client for tests.
//
// # Differences from kubelet
//
// Static and mirror pods: podstart has no pod sources other than the
// caller, so there is no UID translation between a static pod and its
// mirror pod, a mirror pod's status is not looked up, and a mirror pod is
// not kept from deletion (kubelet's IsMirrorPod check in canBeDeleted): a
// caller must not hand mirror pods to the manager.
//
// "Could have running containers" (kubelet asks its pod workers whether the
// pod is terminated) is read from the state podworker hands over: false
// once the pod was removed, or when the runtime's view of the last sync
// shows no container running or unknown; true before the first sync.
// podworker does not kill a pod that completed on its own, so a pod whose
// containers all exited may report its terminal phase before its sandbox
// is stopped; kubelet stops the sandbox first.
//
// The status of a pod the worker removed is finished as kubelet's
// TerminatePod finishes it: containers that never reached a terminated
// state end as ContainerStatusUnknown (exit code 137), and a phase that is
// not terminal becomes Failed, so that even a pod that never ran (an image
// that cannot be pulled) reaches the terminal phase its deletion waits for.
//
// Left to podworker and apistatus, which build the status OnSync gets:
// transition times, start time, observed generation and normalisation
// (kubelet's updateStatusInternal). Kubelet's check against a container leaving the terminated
// state (checkContainerStateTransition) is not repeated. Not kept: resize
// conditions set by admission (SetPodResizePendingCondition and the like),
// readiness and startup set between syncs (SetContainerReadiness,
// SetContainerStartup: podworker syncs on probe results instead), update
// notifiers and metrics.
package statusmanager
