// Package apiobjects resolves what a pod refers to in the API: Secrets,
// ConfigMaps, its own fields and its service account's tokens, turned into
// what podsync and podworker take, as kubelet v1.37.2 does it:
//
//   - volumes: Secret, ConfigMap, downward API and projected volumes, their
//     payloads built as kubelet's volume plugins build them and written as
//     its AtomicWriter writes them (mounts.WriteAtomic), under kubelet's
//     <root>/pods/<uid>/volumes/kubernetes.io~<plugin>/<name>, never
//     through a symlink below <root>;
//   - service account tokens for projected volumes, requested and renewed
//     as kubelet's token manager does;
//   - pod certificates for podCertificate projections (GA and on in
//     v1.37): a key of the projection's type made on the node, a
//     PodCertificateRequest to its signer, the issued chain, renewed from
//     beginRefreshAt, as kubelet's pod certificate manager does
//     (PodCertificates, over a PodCertificateClient);
//   - trust anchors for clusterTrustBundle projections (GA and on in
//     v1.37): the certificates of a ClusterTrustBundle by name, or of a
//     signer's bundles selected by labels, each once, with kubelet's
//     optional rules and messages, as kubelet's ClusterTrustBundle manager
//     gives them (ClusterTrustBundlePayload, over a
//     ClusterTrustBundleSource: WithClusterTrustBundles, or a Source that
//     is one);
//   - environment values and envFrom sources from Secrets and ConfigMaps
//     (a podsync.EnvResolver), with kubelet's optional and missing-key rules
//     and messages, and the service variables kubelet adds from Services
//     (KUBERNETES_SERVICE_HOST, ...; a podsync.ServiceEnvResolver);
//   - image pull secrets, as kubelet's getPullSecretsForPod gathers them.
//
// Volumes (Volumes, and the payload builders SecretPayload,
// ConfigMapPayload, DownwardAPIPayload, ProjectedPayload) follow kubelet's
// pkg/volume/{secret,configmap,downwardapi,projected}: the same file
// names, default and per-item modes, optional objects and keys, errors
// and messages (aggregated for downward API and projected volumes), a
// projected token 0600 owned by the pod's single runAsUser when the pod
// has one or an fsGroup, fsGroup ownership with kubelet's read-only mask
// applied before a new payload becomes visible, volumes read-only and
// SELinux-relabelled. Secret, downward API and projected volumes are a
// tmpfs, as kubelet's plugins wrap a Memory emptyDir: mounted (through a
// mounts.Mounter, WithMounter) before the payload is written and only
// when not already mounted, sized as kubelet sizes it
// (podsync.MemoryVolumeSize: node allocatable, the pod's memory limit),
// with noswap where the kernel has it, so secrets and service account
// tokens never reach the node's disk; a setup that fails after the mount
// unmounts and removes the volume, and podsync's RemovePod unmounts them
// all. Without the privilege to mount, the volume fails
// (mounts.ErrMountNotPermitted), as kubelet's mount does;
// WithDiskBackedVolumes puts them on disk instead, which is weaker and
// meant for unprivileged tests. A failure is kubelet's
// "MountVolume.SetUp failed for volume ..." and a FailedMount event.
// Tokens is kubelet's token manager (pkg/kubelet/token). Where podstart
// differs:
//
//   - The tmpfs is mounted in podstart's own mount namespace with
//     mount(2); kubelet runs mount(8) outside systemd. noswap is tried on
//     the first mount and dropped if the kernel refuses it; kubelet probes
//     once with a throw-away mount. Kubelet knows that a volume is set up
//     from a ready file in its plugins directory; podstart from the mount
//     itself (a tmpfs at the volume's path).
//   - Volume types other than these four, hostPath and emptyDir are
//     refused by name (podsync.ErrVolumeNotSupported).
//   - PodCertificates reads a pending PodCertificateRequest with a GET
//     (at each setup of the volume and at each Run interval, 10 s by
//     default) where kubelet watches them through an informer; its node
//     UID is given once (kubelet reads its Node from a cache). A
//     certificate issued or renewed reaches the volume at the pod's next
//     sync (WithPodCertificateNotify asks for one); kubelet's volume
//     manager remounts periodically. The Denied and Failed events carry
//     their message as text (kubelet passes the condition's reason as the
//     format, so its events read as the reason and fmt's EXTRA noise).
//     No metrics (kubelet reports states per signer). Without a manager
//     (WithPodCertificates) the projection fails with
//     ErrNoPodCertificateClient; kubelet's standalone manager says
//     "unimplemented".
//   - clusterTrustBundle projections read their bundles at each setup
//     of the volume; kubelet caches an answer up to 5 minutes (dropped
//     when its informer sees a bundle change). The certificates are
//     ordered by their DER bytes; kubelet shuffles them. A projection
//     without labelSelector always matches no bundle; kubelet's cache
//     keys it as one with an empty selector, so after such a projection
//     of the same signer it gets all the signer's bundles. Without a
//     ClusterTrustBundleSource the projection fails with
//     ErrNoClusterTrustBundles, kubelet's message when the API server
//     serves no ClusterTrustBundle API.
//   - A failed chown or chmod for fsGroup fails the volume; kubelet logs
//     it and mounts the volume without the group.
//   - The payload builders refuse a defaultMode or item mode outside
//     0–0777 (ErrInvalidMode, naming the field with the API server's
//     message) rather than convert it; kubelet trusts the API server's
//     validation, and as a file mode such a value is setuid or setgid.
//   - A payload is written beneath the root dir without following a
//     symlink (mounts.WriteAtomic): a volume directory replaced by a
//     symlink fails the volume (mounts.ErrUnsafeVolumeDir) and the
//     tear-down removes the link, not what it points to. Files in the
//     volume directory that no payload wrote are kept; a payload name
//     taken by one fails the volume (mounts.ErrForeignEntry).
//   - The token manager does not ask the API server's discovery whether
//     TokenRequest is enabled (kubelet does, to reword a NotFound); its
//     cleanup runs in Run, which the caller starts and stops.
//   - Node allocatable for resourceFieldRef items is given once
//     (WithNodeAllocatable); kubelet reads the Node each time.
//   - A running pod's volumes are set up again (RemountVolumes, a
//     podsync.VolumeRemounter) at each of its syncs, as kubelet remounts
//     them; podsync asks only at the end of a sync that started no
//     container, and podworker does not resync a steady pod every minute
//     (see podworker): its caller wakes the pods whose objects changed
//     (Workers.ResyncReferencing), and RemountVolumes says when the pod's
//     next token renewal is due (Tokens.NextRefresh: 80% of its lifetime
//     or 24 hours, without kubelet's jitter of up to 10 s, which only
//     brings a renewal earlier) so that the pod is synced then. Objects
//     are read from the Source at each setup; kubelet's watch-based
//     managers serve them from a cache of their own.
//
// Objects come from a Source (and Services from a ServiceLister): an
// informer's lister, an API client, or a map in a test. The package never
// imports client-go; a node agent adapts its client in a few lines (see
// examples/nodeagent). Objects is a Source, a ServiceLister and a
// ClusterTrustBundleSource in memory.
//
// # Differences from kubelet
//
//   - Env: podsync adds the keys of one envFrom source, and the service
//     variables, in sorted order (kubelet's order is a map's). A pod whose
//     enableServiceLinks is unset gets its namespace's service variables,
//     as the API server's default (true) gives them; kubelet, which never
//     sees such a pod, refuses it. Services are listed once per sync and
//     per namespace through Env.Services (kubelet reads its informer's
//     cache for each container); without Services no service variable is
//     added, as kubelet without an API client adds none.
//   - PullSecrets: a fetch that fails because the context ended returns
//     the context's error, with no event. The service account's
//     imagePullSecrets are read only when asked (PullSecrets.ServiceAccounts):
//     kubelet leaves that to the ServiceAccount admission plugin.
package apiobjects
