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
// its client in a few lines (see examples/nodeagent).
package apiobjects
