// Package apistatus turns what the runtime says of a pod into the
// corev1.PodStatus a user or an API server expects: kubelet v1.37.2's
// generateAPIPodStatus, its probe manager's UpdatePodStatus and its status
// manager's bookkeeping, as one pure function, PodStatus.
//
// From the pod, the runtime's view (podsync.PodStatus), the containers'
// last start failures (Reasons, kubelet's reason cache, fed with each
// podsync.Result), probe results and the previous status, it builds:
//
//   - phase, as kubelet's getPhase with container restart rules (on by
//     default since v1.35): init failures that will not restart fail the
//     pod; sidecars count while they run; Always/OnFailure/Never; a
//     terminal phase, once reached, stays;
//   - container statuses for init, app and ephemeral containers: waiting
//     (ContainerCreating, PodInitializing, or the last start failure:
//     CrashLoopBackOff "back-off 40s restarting failed container=…",
//     ErrImagePull, ImagePullBackOff, CreateContainerConfigError,
//     RunContainerError, …), running or terminated (exit code, reason,
//     termination message, times), lastState from the previous instance,
//     restart count, image and image ID, container ID "<runtime>://<id>",
//     started and ready from the probes;
//   - conditions PodReadyToStartContainers (False with reason
//     PodSandboxNotReady and kubelet's message for why a new sandbox is
//     needed, v1.37), Initialized, Ready (with readiness gates),
//     ContainersReady and PodScheduled, with kubelet's reasons and
//     messages; LastTransitionTime kept while a condition's
//     status does not change; conditions set by others kept;
//   - pod IPs (the first of the node's family, then the first of the
//     other, parsed as kubelet parses them), host IPs (Input.HostIPs cut
//     to one per family, as GetNodeHostIPs), QoS class, start time (kept
//     once set), observed generation (never lowered below the previous
//     status's);
//   - kubelet's normalisation: times to whole seconds, termination
//     messages cut to 12 KiB shared by the pod's containers, app
//     statuses sorted by name, init statuses in spec order.
//
// Termination messages are read by podsync's Status when an instance
// exits (the file, or with FallbackToLogsOnError the log's last 80 lines,
// kubelet's limits), so PodStatus itself touches no file.
//
// # Differences from kubelet
//
// In-place resize: container statuses carry Resources (what the runtime
// reports, kubelet's convertContainerStatusResources) and
// AllocatedResources (the spec's requests); PodResizeInProgress is set
// while podsync.ResizeInProgress holds, with reason Error after a failed
// resize (Input.ResizeError). PodResizePending belongs to admission, which
// is the caller's.
//
// Pod-level Resources and AllocatedResources (kubelet's
// InPlacePodLevelResourcesVerticalScaling, beta and on since v1.36) are
// kubelet v1.37.2's convertToAPIPodLevelResourcesStatus on a node without
// pod cgroups, as podstart makes none (kubelet with cgroupsPerQOS false):
// AllocatedResources are the pod's effective requests; Resources are the
// effective requests and limits while the API server does not have the
// pod Running, and once it does, the spec's pod-level values with a memory
// request from the containers' and the previous status's CPU request and
// limits kept while that status is Running too. A status that ends the
// pod gets what kubelet's terminating sync leaves, whatever the API server
// shows then: kubelet's own answer for a pod that ends quickly depends on
// whether its Running status reached the API server before the container
// died (the side-by-side test saw both); this is the answer when it did.
// So an ended pod without
// pod-level resources shows its memory request alone, as the kubelet
// beside podstart in examples/nodeagent's side-by-side test (cgroupsPerQOS
// false) does, and as the kubelet with pod cgroups left it for 5 of 5
// ended pods (issue 36): an ended pod's status takes nothing from the pod
// cgroup (Input.PodCgroup is ignored once the status ends the pod). A
// kubelet with pod cgroups (its default) reads them for a Running pod
// once the API server has it Running, and may show values rounded as the
// cgroup stores them (CPU shares; v1.37 keeps the allocated CPU
// request when the cgroup v2 weight round trip explains the difference). A
// container's Resources carry no memory request from the runtime (no CRI
// runtime reports one, so kubelet never has one either); kubelet's own
// test feeds one.
//
// PodStatus includes the status manager's normalisation, so its times
// are whole seconds where kubelet's generateAPIPodStatus alone keeps
// nanoseconds; kubelet sends the normalised ones.
//
// The kubelet tests this package's tests port (kubelet_test.go,
// kubelet_pods_test.go, status/generate_test.go,
// status/status_manager_test.go of v1.36.3; generateAPIPodStatus, getPhase
// and the condition generators are unchanged in v1.37.2 but for
// PodReadyToStartContainers' reason and message, whose test is v1.37.2's)
// are named in each test's doc; ../test/diff compares the condition generators with kubelet's on
// random inputs.
//
// Not built, as in podsync: RestartAllContainers (no
// AllContainersRestarting condition), image volumes, container users and
// stop signals, Windows.
//
// After an agent restart, a container that ran before it and has not been
// probed yet keeps the readiness of a pod the API server has Ready, as
// kubelet's setReadyStateOnKubeletRestart does (Input.ProberStart;
// podworker passes its own start).
package apistatus
