// Package diff is podstart's differential test tier (tier 5 of DESIGN.md):
// it compares podstart's answers with kubelet v1.36.3's own exported
// functions on random inputs. It is a module of its own, so that podstart's
// go.mod never requires k8s.io/kubernetes; run it from this directory:
//
//	go test -tags podstart_api036 ./...                           # every comparison, a new seed each run
//	go test -tags podstart_api036 -run TestHashContainer -seed 42 # replay the seed a failure printed
//	go test -tags podstart_api036 -scale 10                       # ten times as many random cases
//
// The tag podstart_api036 is needed while this module pins k8s.io/api
// v0.36.3 (kubelet v1.36.3's): podstart's validation reads v0.37's alpha
// fields through accessors that, with the tag, see them absent
// (validation/fields_api036.go).
//
// What is compared, each on random inputs (seeded math/rand/v2; a failure
// prints the seed):
//
//   - podsync.HashContainer with kubecontainer.HashContainer;
//   - podsync.ShouldContainerBeRestarted with kubecontainer's, for containers
//     without their own restartPolicy (container restart rules are issue 16);
//   - credentials' node keyring (files searched and read, then Lookup) with
//     kubelet's config readers and BasicDockerKeyring;
//   - credentials.MakeKeyring with kubelet's secrets.MakeDockerKeyring;
//   - defaults.Pod with the API server's defaulting of a v1 Pod
//     (pkg/apis/core/v1 registered in a scheme);
//   - apistatus' ContainersReady, Ready and Initialized conditions with
//     pkg/kubelet/status's generators, and PodStatus's
//     PodReadyToStartContainers condition with
//     GeneratePodReadyToStartContainersCondition on random sandboxes;
//   - criconfig's QoS, OOM score, security-context and sysctl helpers with
//     pkg/kubelet/qos and pkg/securitycontext (see criconfig_test.go);
//   - statusmanager.StatusPatch with kubelet's PatchPodStatus (pkg/util/pod,
//     over client-go's fake clientset): the same patch bytes and the same
//     "unchanged" on random pairs of pod statuses;
//   - apiobjects' SecretPayload, ConfigMapPayload and DownwardAPIPayload
//     with kubelet's secret.MakePayload, configmap.MakePayload and
//     downwardapi.CollectData: files, contents, modes and error messages;
//   - criconfig.ServiceEnvVars with pkg/kubelet/envvars.FromServices, and
//     podsync's env file parser (fileKeyRef) with pkg/kubelet/util/env's
//     ParseEnv (see env_test.go).
//
// # Versions
//
// One build holds one version of each module, and podstart and kubelet
// v1.36.3 disagree on four: podstart requires k8s.io/api, apimachinery,
// cri-api and kubelet v0.37.2, kubelet v1.36.3 their v0.36.3. This module
// replaces every staging module with v0.36.3, as kubelet's own build does
// (../../../shared/kubelet/build/go.mod), except two:
//
//   - k8s.io/cri-api v0.37.2: podstart needs it (v0.37 changed KeyValue.Value
//     from string to []byte, and podsync builds KeyValues). The kubelet
//     packages imported here compile against it.
//   - k8s.io/cri-client v0.37.2: pkg/kubelet/container reaches
//     cri-client/pkg/logs, and cri-client v0.36.3 does not compile against
//     cri-api v0.37.2 (RuntimeService gained CheckpointPod).
//
// k8s.io/api and apimachinery cannot be v0.37.2: client-go v0.36.3, reached
// through pkg/kubelet/container → pkg/volume → client-go/informers, imports
// k8s.io/api/scheduling/v1alpha2, which v0.37 removed; client-go v0.37 in
// turn does not match the rest of kubelet v1.36.3. So podstart's packages are
// compiled here against k8s.io/api and apimachinery v0.36.3 (the API kubelet
// v1.36.3 knows) and k8s.io/kubelet v0.36.3; they compile unchanged. A
// podstart change that uses a field new in k8s.io/api v0.37 breaks this
// module's build, not podstart's: then move these replaces forward with a
// newer k8s.io/kubernetes.
//
// Kubelet's feature gates keep their v1.36 defaults (ContainerRestartRules,
// PodLevelResources and ImageVolume on): the comparisons are against kubelet
// as it runs out of the box.
package diff
