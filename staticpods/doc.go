// Package staticpods is kubelet v1.37.2's static pod sources and mirror
// pods (pkg/kubelet/config's file and HTTP sources, common.go's defaults,
// config.go's merge; pkg/kubelet/pod's mirror client; kubelet.go's
// tryReconcileMirrorPods and orphan cleanup) as a library over the v1 API
// types, with no client-go.
//
// A FileSource reads kubelet's staticPodPath: a directory of YAML or JSON
// manifests (names starting with "." ignored, one pod per file, symbolic
// links followed, subdirectories not entered, FIFOs and devices never
// opened, at most MaxManifestSize bytes), or one manifest file; it is
// watched with inotify and read again every DefaultFileCheckFrequency. A
// URLSource polls kubelet's staticPodURL (with headers) every
// DefaultHTTPCheckFrequency; its body is a Pod or a PodList. Each pod is
// decoded and defaulted as kubelet's applyDefaults (DecodePod): the v1
// API defaults kubelet's decoder applies (not the pod registry's pod-level
// resources defaulting, which a static pod never goes through); the UID
// from the manifest's hash, equal to kubelet's (Hash), unless it sets one;
// the name suffixed "-<node name, lowercased>"; namespace "default" if
// empty; spec.nodeName; the kubernetes.io/config.hash
// annotation; for files a NoExecute toleration with operator Exists; then
// the API server's create validation (scheduling gates and ephemeral
// containers refused) and kubelet's refusal of pods that refer to API
// objects. Both sources send Updates (OpAdd, OpUpdate, OpRemove, as
// kubelet's config merge: a changed manifest is a new UID, so the old pod
// is removed and the new one added), with the kubernetes.io/config.source
// and config.seen annotations set. Refused manifests are reported by name
// (WithOnRefused) and the other pods are kept.
//
// Mirrors keeps each static pod's mirror pod in the API server: created
// with the kubernetes.io/config.mirror annotation (the config hash) and the
// Node as controlling owner, deleted and recreated when its hash differs or
// it is being deleted, recreated when deleted, deleted when its static pod
// goes (once it stopped). Static pods are never killed because their mirror
// went. Statuses go to the mirror: statusmanager keys them by the static
// pod's UID and, given Mirrors (statusmanager.WithMirrorPods: its
// TranslatePodUID and MirrorPodUID), writes them to the mirror pod of the
// same name.
//
// Admission: kubelet admits the pods that arrive together oldest first
// (SortForAdmission); static pods have no creation time, so they come
// first. IsStaticPod, IsMirrorPod and IsCriticalPod are kubelet's.
//
// Checked by hand against kubelet (and so matched): kubelet accepts a
// manifest with a hostPath volume of the manifest directory itself; it
// follows a manifest directory replaced by a symbolic link (the next read
// sees the new target: its pods are added, the old ones removed); of two
// manifests defining the same pod name, the later file (in name order) is
// kept; a manifest that turns invalid has its pod removed at the next read
// of a directory, but a single-file path that turns invalid keeps its pod.
//
// # Differences from kubelet
//
//   - A manifest whose pod-level limit of a resource is below its
//     containers' aggregate request, with no pod-level request of that
//     resource, is refused: validation.Pod judges the request the API
//     server's defaulting would set (the aggregate) against the limit.
//     Kubelet never defaults a static pod's pod-level request and keeps
//     the pod.
//   - A manifest directory that cannot be listed (permissions) keeps its
//     pods and is reported; kubelet's glob reads it as empty and removes
//     them.
//   - An inotify event re-reads the whole directory (kubelet re-reads the
//     one file and reaches the same state at its next periodic read).
//   - A manifest shadowed by a later one of the same pod name, and the
//     later of two same-named pods of one HTTP PodList, are reported
//     (ErrDuplicateName); kubelet keeps the same pod silently (files) or
//     records an event (HTTP).
//   - Errors never hold the manifest's contents (kubelet's HTTP source
//     puts the body in its "couldn't parse" message).
//   - kubelet's RECONCILE (a status-only change from a source) is not
//     sent: a file or HTTP pod has no status of its own.
//   - Mirrors acts whenever the caller calls Sync (examples/nodeagent: on
//     every mirror pod event and every 2 s). Kubelet v1.37.2 replaces a
//     mirror pod being deleted, or whose hash is outdated, only at its
//     static pod's next sync: HandlePodUpdates skips the mirror pod's own
//     update (its UID has no allocated resources), so a deleted mirror
//     comes back at the static pod's periodic resync (syncFrequency, 1 min
//     with up to 50% jitter). Orphans are deleted at housekeeping in both.
package staticpods
