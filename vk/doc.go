// Package vk is a virtual-kubelet provider over podstart: VK v1.14's
// node.PodLifecycleHandler and node.PodNotifier, backed by a
// podworker.Workers, so a virtual-kubelet runs its pods through kubelet's
// pod path (podsync, images, mounts, criconfig, apistatus) on any CRI
// runtime. It is a module of its own (github.com/podstart/podstart/vk), so
// podstart's go.mod never requires virtual-kubelet.
//
//	provider := vk.New(syncer, vk.WithWorkerOptions(podworker.WithRuntimeName("containerd")))
//	defer provider.Close()
//	pc, _ := node.NewPodController(node.PodControllerConfig{Provider: provider, ...})
//	go pc.Run(ctx, workers)
//	<-pc.Ready()
//	provider.SourcesReady() // only on a runtime no other agent uses
//
// # What maps to what
//
//   - CreatePod, UpdatePod: podworker.Workers.Upsert of the pod VK gives (a
//     pod with a DeletionTimestamp is deleted as by DeletePod). A pod the
//     API server would refuse (validation.ErrInvalidPod) is an
//     errdefs.InvalidInput error; VK then writes ProviderFailed into its
//     status. A pod held under the same namespace/name with another UID is
//     deleted first.
//   - DeletePod: podworker.Workers.Delete: the pod is killed with kubelet's
//     effective grace period (the DeletionGracePeriodSeconds VK passes),
//     then its containers, sandboxes and directories are removed. It
//     returns at once; once nothing of the pod is left, its final status,
//     terminal (Succeeded when every container exited 0, else Failed; every
//     container terminated) goes to NotifyPods and the provider forgets
//     it. From the DeletePod call on, GetPod, GetPodStatus and GetPods no
//     longer show the pod (as VK's own mock provider); DeletePod again while
//     it ends is nil, and errdefs.NotFound once it is gone. A pod never held
//     is errdefs.NotFound, after it is removed from the runtime if the
//     runtime has it (an earlier process's).
//   - GetPod, GetPodStatus, GetPods: the provider's index, namespace/name →
//     the pod VK gave, with the newest status its worker computed (copies;
//     errdefs.NotFound for a name not held). Before a pod's first sync its
//     status is VK's, Pending.
//   - NotifyPods: podworker.WithOnSync. Each sync's status
//     (PodState.APIStatus, kubelet's corev1.PodStatus from apistatus:
//     phase, conditions, container states and reasons, IPs, QoS) that
//     differs from the last one notified is handed to VK's callback, on a
//     goroutine per pod, newest status only, one call at a time per pod, so
//     neither the pod workers nor other pods wait on VK (its callback may
//     block for up to 3 s). Statuses computed before NotifyPods are handed
//     over when it is called.
//
// # Differences from a kubelet
//
//   - Status writes are VK's: it replaces the pod's status whole
//     (UpdateStatus), where kubelet's status manager patches the fields it
//     owns. The provider keeps the conditions other components own (a
//     readiness gate's, DisruptionTarget) from the status VK gave it with
//     the pod, so they are not erased; one set after CreatePod/UpdatePod is
//     overwritten by the next status change. Kubelet's other merge rules
//     (no terminal phase while containers could run) are apistatus's own.
//   - The API object goes when VK deletes it: DeletionGracePeriodSeconds
//     after the pod's DeletionTimestamp was seen, even when the pod ended
//     sooner (kubelet deletes it as soon as the pod is terminal and
//     cleaned up). The provider's terminal status is written before then
//     when the pod ends within its grace period.
//   - Environment: VK resolves env references (ConfigMaps, Secrets,
//     downward API, service links) into values before CreatePod, unless
//     PodControllerConfig.SkipDownwardAPIResolution; give the Syncer a
//     podsync.WithEnvResolver (apiobjects.Env) in that case. Volumes,
//     pull secrets, probes and pod cgroups come from the Syncer's and
//     Workers' options (podsync.WithVolumes, podworker.WithPullSecrets,
//     WithProbes, WithPodCgroups), as in examples/nodeagent. A running
//     pod's Secret, ConfigMap and projected volumes follow their objects
//     when the caller wakes the pods that refer to a changed one
//     (Workers().ResyncReferencing, as examples/nodeagent does from its
//     watches) or asks for kubelet's periodic rewrite
//     (podworker.WithPeriodicRemount); label and annotation changes reach
//     downward API volumes through UpdatePod.
//   - Orphans: VK's deleteDanglingPods only sees pods the provider holds;
//     pods an earlier process left on the runtime go by garbage collection
//     once the caller calls SourcesReady, as kubelet after its sources are
//     ready. Without it they stay.
//   - A pod deleted and made again under the same name before VK calls
//     DeletePod for the first one: VK asks GetPod by name and, when the old
//     spec equals the new, does not call CreatePod; the new pod then runs
//     only once VK syncs it again. CreatePod and UpdatePod with a new UID
//     replace the old pod.
//   - Node status, leases, logs, exec, stats: VK's node controller and its
//     API server, not this package (podstart's nodestatus, nodeapi and
//     stats packages serve them for a node agent of its own).
package vk
