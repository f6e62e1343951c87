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
//     and messages;
//   - image pull secrets, as kubelet's getPullSecretsForPod gathers them.
//
// Objects come from a Source: an informer's lister, an API client, or a
// map in a test. The package never imports client-go; a node agent adapts
// its client in a few lines (see examples/nodeagent). Objects is a Source
// in memory.
//
// # Differences from kubelet
//
//   - Env: podsync adds the keys of one envFrom source in sorted order
//     (kubelet's order is a map's). fileKeyRef (EnvFiles, on by default
//     since v1.35) is refused by podsync, not resolved. Service link
//     variables (enableServiceLinks) are not added by podsync.
//   - PullSecrets: a fetch that fails because the context ended returns
//     the context's error, with no event. The service account's
//     imagePullSecrets are read only when asked (PullSecrets.ServiceAccounts):
//     kubelet leaves that to the ServiceAccount admission plugin.
package apiobjects
