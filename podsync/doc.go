// Package podsync decides what to do with a pod and does it.
//
// ComputePodActions is kubelet's computePodActions (checked against
// v1.37.2) as a pure function of the pod, what the runtime reports
// (PodStatus) and the probe results:
//
//   - Sandbox: none, several ready, the newest not ready, a changed network
//     namespace (sandbox ID then ""), or no IP for a pod-network pod means a
//     new sandbox with attempt max+1; otherwise attempt stays at the
//     maximum (kubelet takes the newest sandbox's attempt, which is the
//     maximum unless an older sandbox outlived a newer one: then kubelet's
//     next sandbox can take a name the runtime still holds). Under restartPolicy Never a sandbox is not recreated once
//     containers ran; under OnFailure not when every container succeeded.
//     The reason is kubelet's message (SandboxMessageNone, ...), which
//     apistatus puts in the PodReadyToStartContainers condition.
//   - Init containers run strictly one at a time, in order; a failed one
//     (exit non-zero, OOMKilled whatever the code, or unknown) is retried,
//     or under Never the pod is killed; one stuck in created is started
//     again; app containers start only after the last init container is
//     done. Sidecars (restartPolicy: Always) count as done once started and
//     past their startup probe, and are restarted even under Never until
//     every app container has finished. As in kubelet v1.37, only the
//     current sandbox's instances count (ActiveContainerStatuses): init
//     containers that completed in an old sandbox run again in a new one,
//     and an app container of the current sandbox, in any state, proves
//     the pod initialised even when the runtime has removed the init
//     containers (which fixed kubernetes#136969).
//   - App containers: started when absent, restarted per restart policy,
//     killed and restarted on a hash change (even under Never) or a
//     liveness or startup failure; unknown ones are killed before restart.
//   - HashContainer equals kubelet's container hash (name and image only).
//   - BackOff is CrashLoopBackOff: 10 s doubling to 300 s, reset after 10
//     minutes of run time, on an injectable clock. WithBackOff(initial, max)
//     sets the delays, as images.WithBackOff does for pulls;
//     WithSharedBackOff shares one BackOff between Syncers.
//
// # Ending pods and cleaning up
//
//   - KillPod is kubelet's killPodWithSyncResult: every running container
//     stopped at once, each after its pre-stop hook (within the grace
//     period; a failed hook's event says only "PreStopHook failed", as
//     kubelet, since a command line may hold secrets); sidecars wait for
//     every app container and for each sidecar declared after them, at
//     most their grace period; then every sandbox. The grace period is
//     kubelet's: the deletion's, else the pod's, else a liveness or
//     startup probe's own for kills that probe caused, never under 2 s at
//     StopContainer; EffectiveGracePeriod is the pod worker's for a whole
//     pod. With a nil pod the containers' annotations restore grace
//     periods and hooks (kubelet's restoreSpecsFromContainerLabels).
//   - SyncPod kills a pod with a DeletionTimestamp, with its effective
//     grace period, and never starts anything in it again.
//   - GarbageCollect is kubelet's container GC (GCPolicy, DefaultGCPolicy:
//     one dead instance per container): oldest dead instances first, with
//     their log files; sandboxes neither ready, newest nor in use; and,
//     given the pods the caller still wants, everything of the others,
//     directories included. RemovePod removes one pod entirely; before a
//     pod directory goes, the tmpfs of its memory-backed volumes (emptyDir
//     medium Memory, Secret, downward API, projected) is unmounted, as
//     kubelet's TearDown does (UnmountMemoryVolumes, through WithMounter's
//     mounts.Mounter), so a pod that crashed mid-setup leaves nothing
//     mounted; a pod directory with anything else mounted under it is
//     kept (ErrPodDirInUse).
//     ListPods groups the runtime's pods by UID with two calls.
//   - A result's NextSync (MinBackOffExpiration) is the earliest end of a
//     crash-loop back-off (BackOffError), so a loop sleeps until then. An
//     image pull's back-off has none, as in kubelet v1.37.2: the pod is
//     retried at the loop's error period (ErrImagePull and
//     ImagePullBackOff then alternate in its status, as on kubelet).
//   - Status goes through StatusCache: per call one ListPodSandbox and one
//     ListContainers, and a status call only for an instance that is new
//     or changed state, or that failed (non-zero exit code) less than
//     ExitSettleTime (10 s) ago with a reason other than OOMKilled, since a
//     runtime may record an OOM kill after it reports the exit (a fresh
//     2-init, 3-app pod: 45 calls against 50 for the bare sequence).
//     Relist does the same for the whole node, and counts a late reason as
//     a change of the pod.
//   - Lost answers: an instance the runtime created but whose
//     CreateContainer answer was lost (a dead connection, a deadline) is
//     listed as created and never started. The next start of that
//     container removes it and reuses its attempt number, so the restart
//     count stays true (kubelet creates attempt+1 and counts a restart
//     that never ran); GarbageCollect removes such instances whenever a
//     newer one exists. A sandbox whose RunPodSandbox answer was lost is
//     found by its labels and used if ready, else replaced and collected.
//
// Each decision carries a reason a person can read (Actions.SandboxReason,
// KillPodReason, Waiting, the kill messages) and Actions.String() sums
// them up for a log line.
//
// # Differences from kubelet
//
// Only the sidecar-aware path exists: kubelet's legacy path (feature gate
// LegacySidecarContainers, off by default and being removed) is not
// implemented. Container restart rules (ContainerRestartRules, beta and on
// since v1.35, as in v1.37.2) are kubelet's throughout: ContainerShouldRestart decides whether
// an exited container or a failed init container restarts; a container
// killed by a probe, or an init container in unknown state, follows its
// own restartPolicy; a new sandbox skips a succeeded container whose own
// policy is OnFailure. As in kubelet, whether a sandbox is recreated at
// all still follows the pod's restartPolicy.
// A RestartAllContainers rule is refused (criconfig.ErrUnsupported), not
// carried out as a single restart. The current sandbox's instances are
// those whose ContainerStatus.SandboxID is the newest, ready sandbox's
// (Syncer.Status sets it); an instance with no SandboxID (a PodStatus
// built by hand) counts as the current sandbox's, and then, as in kubelet
// v1.36, only a created or running app container proves initialisation.
//
// SyncPod's order is kubelet v1.37's: kill, create the sandbox, resize
// running containers in place, then build the sandbox config (only when a
// container is to start: a config error fails the sync only then) and
// start ephemeral, init and app containers.
//
// In-place resize (GA in v1.35) is kubelet's for containers: a running
// app container, sidecar or init container whose CPU or memory differs
// from what was last applied (PodStatus.ActuatedResources, kept in
// <root>/pods/<uid>/actuated-resources as kubelet's checkpoint; a pod
// without one, made before records, counts as running its spec) is updated
// with UpdateContainerResources (runtime.ResourceUpdater), memory before
// CPU and decreases before increases, or restarted when its resize policy
// says RestartContainer; a memory limit is not lowered below the
// container's use (runtime.ContainerStatsReader). The spec is taken as
// allocated: admission (PodResizePending, node capacity) is the caller's.
// podstart sets no pod-level cgroup (the runtime makes the pod's cgroup
// from the sandbox's parent), so kubelet's pod cgroup steps and
// UpdatePodSandboxResources are not sent; huge page limits stay as the
// spec has them in an update, where kubelet's update sends zero. A
// runtime without UpdateContainerResources gets a ResizePodInPlaceError,
// never a silent skip.
//
// User namespaces (hostUsers: false, GA in v1.36) need a runtime that has
// them (criconfig.Node.UserNamespaces; containerd 1.6 has not, so such a
// pod is refused there with kubelet's message). A Syncer on such a node
// allocates ID ranges as kubelet's user-namespace manager
// (UserNamespaces: 65536 IDs per pod above the first 65536, recorded in
// <root>/pods/<uid>/userns in kubelet's format, freed with the pod
// directory). Kubelet takes its range from getsubids for the "kubelet"
// user; podstart takes it from NewUserNamespaces's arguments.
//
// Both records (userns, actuated-resources) are read more warily than
// kubelet's os.ReadFile: only a regular file, opened without following a
// symlink and without blocking on a FIFO, of at most 64 KiB (userns) or
// 1 MiB (actuated-resources; a larger file is refused from its size,
// unread). Anything else is a damaged record, treated as one: a userns
// record stops allocation, as kubelet refuses to start; an
// actuated-resources record is ignored (SyncPod logs why, once) and
// seeded from the spec as a missing one.
//
// A container's environment is kubelet's makeEnvironmentVariables (see
// Syncer.Environment): envFrom, then env in order with $(VAR) expanded
// (from the variables before it, then the service variables), field and
// resource references resolved here, Secret and ConfigMap references
// through an EnvResolver (apiobjects.Env), an optional one that is absent
// leaving its variable out (ErrSkipEnvVar); then the service variables
// that neither envFrom nor env set. Keys of one envFrom source, and the
// service variables, go in sorted order (kubelet's is a map's).
//
// Service variables (kubelet's getServiceEnvVarMap: the "kubernetes"
// Service of "default" always, the pod namespace's Services with
// enableServiceLinks; criconfig.ServiceEnv) come from an EnvResolver that
// is a ServiceEnvResolver (apiobjects.Env with Services), asked once per
// sync. Without one none is added, as kubelet without an API client adds
// none; a pod that reads KUBERNETES_SERVICE_HOST (client-go's in-cluster
// config) then cannot find the API server.
//
// fileKeyRef (EnvFiles, beta and on since v1.35) is kubelet's: the key
// read from the env file at the path inside the named volume as the
// VolumeProvider mounted it (resolved once per sync, on first need), with
// kubelet's parser (single-quoted values, 64 KiB lines), messages ("couldn't
// parse env file", an *EnvFileError; "environment variable key %q not
// found in file %q"; "cannot find the volume %q referenced by FileKeyRef")
// and its reading of an empty value as a missing key. Two differences,
// both for pods the API server would not have accepted or that would
// hang kubelet: a volume that is not an emptyDir is refused
// (ErrNotEmptyDir, the API server's rule), and the file is opened scoped
// to its volume and read only if it is a regular file (a FIFO blocks
// kubelet for ever).
//
// SyncPod takes pods from anywhere, not only from the API server, so it
// first refuses (Result.SyncError matching validation.ErrInvalidPod,
// nothing created) a pod the API server would reject (validation.Check):
// names that become host paths, paths, modes, quantities, timings and
// security settings kubelet never sees unchecked. DefaultVolumes checks
// the same before it creates a directory. KillPod, RemovePod and
// GarbageCollect do not: they must clean up whatever exists, so they check
// each name they turn into a path instead, and never leave the root. DefaultVolumes
// refuses a hostPath volume with an empty path ("path is empty"), and
// emptyDir's HugePages media by name (ErrVolumeNotSupported); medium
// Memory is a tmpfs of kubelet's size (MemoryVolumeSize: node allocatable,
// the pod's memory limit, sizeLimit), mounted once. Without the privilege
// to mount such a volume fails (mounts.ErrMountNotPermitted), as with
// kubelet; DefaultVolumes.DiskBacked puts it on disk instead, which is
// weaker and only for callers that cannot mount. When the node's
// allocatable memory is unknown (kubelet always knows it) the pod's limit
// and sizeLimit bound the size alone.
//
// Volumes are set up by the first container start of a sync that needs
// them (VolumeProvider.Volumes). Kubelet also remounts a running pod's
// Secret, ConfigMap, downward API and projected volumes at every sync, so
// that they follow their objects and the pod's labels and annotations; a
// provider that is a VolumeRemounter (apiobjects.Volumes) is asked to do
// so at the end of every sync of a pod with a running container in which
// no container start set the volumes up. A failed remount is
// Result.RemountError, not a failed sync: the containers keep the volume
// as last written and the status does not change, as with kubelet, whose
// reconciler retries it with a back-off (0.5 s doubling to about 2 min)
// where podsync retries it at the pod's next sync (podworker resyncs such
// a pod after its resync period). Result.RefreshAt says when the volumes
// change with time alone (a token's renewal).
//
// Image volumes (ImageVolume, GA and on in v1.37) are SyncPod's own, as
// kubelet's kuberuntime pulls them: before the first container start of
// a sync, every image volume's image is made present as its pull policy
// says, with the pod's pull secrets, the image manager's back-off and
// events on the pod (an ImageEnsurer that is an ImageVolumeEnsurer, such
// as *images.Manager); a failed pull fails only the containers that
// mount the volume, with the pull's error as their waiting reason and a
// Failed event. The runtime mounts the image read-only (CRI Mount.Image
// and ImageSubPath); nothing is written on the host. Providers skip image
// volumes.
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
// sandbox and both create one. Callers serialise per pod (one worker per
// pod UID, as kubelet's pod workers do); package podworker does it.
package podsync
