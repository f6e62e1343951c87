// Package apiobjects resolves what a pod refers to in the API: Secrets,
// ConfigMaps, its own fields and its service account's tokens, turned into
// what podsync and podworker take, as kubelet v1.36 does it:
//
//   - volumes: Secret, ConfigMap, downward API and projected volumes, their
//     payloads built as kubelet's volume plugins build them and written as
//     its AtomicWriter writes them (mounts.WriteAtomic), under kubelet's
//     <root>/pods/<uid>/volumes/kubernetes.io~<plugin>/<name>;
//   - service account tokens for projected volumes, requested and renewed
//     as kubelet's token manager does;
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
// SELinux-relabelled. A failure is kubelet's "MountVolume.SetUp failed
// for volume ..." and a FailedMount event. Tokens is kubelet's token
// manager (pkg/kubelet/token). Where podstart differs:
//
//   - Secret, downward API and projected volumes are directories on the
//     root dir's disk, not kubelet's tmpfs mounts (a mount needs
//     privileges and a mount namespace podstart does not manage).
//   - clusterTrustBundle and podCertificate projections are refused
//     (ErrProjectionNotSupported): they need kubelet's managers of those
//     API objects. Volume types other than these four, hostPath and
//     emptyDir are refused by name (podsync.ErrVolumeNotSupported).
//   - A failed chown or chmod for fsGroup fails the volume; kubelet logs
//     it and mounts the volume without the group.
//   - The token manager does not ask the API server's discovery whether
//     TokenRequest is enabled (kubelet does, to reword a NotFound); its
//     cleanup runs in Run, which the caller starts and stops.
//   - Node allocatable for resourceFieldRef items is given once
//     (WithNodeAllocatable); kubelet reads the Node each time.
//
// Objects come from a Source (and Services from a ServiceLister): an
// informer's lister, an API client, or a map in a test. The package never
// imports client-go; a node agent adapts its client in a few lines (see
// examples/nodeagent). Objects is a Source and a ServiceLister in memory.
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
