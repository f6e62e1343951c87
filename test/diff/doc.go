// Package diff is podstart's differential test tier (tier 5 of DESIGN.md):
// it compares podstart's answers with kubelet v1.37.2's own exported
// functions on random inputs. It is a module of its own, so that podstart's
// go.mod never requires k8s.io/kubernetes; run it from this directory:
//
//	go test ./...                           # every comparison, a new seed each run
//	go test -run TestHashContainer -seed 42 # replay the seed a failure printed
//	go test -scale 10                       # ten times as many random cases
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
//     (pkg/apis/core/v1 registered in a scheme, then the registry's
//     pod-level resources defaulting, podutil.DefaultPodLevelResources);
//   - apistatus' ContainersReady, Ready and Initialized conditions with
//     pkg/kubelet/status's generators, and PodStatus's
//     PodReadyToStartContainers condition with
//     GeneratePodReadyToStartContainersCondition on random sandboxes;
//   - criconfig's QoS, OOM score, security-context and sysctl helpers with
//     pkg/kubelet/qos and pkg/securitycontext (see criconfig_test.go), and
//     the sandbox's sysctl names with pkg/kubelet/sysctl's
//     ConvertPodSysctlsVariableToDotsSeparator, criconfig.DNSConfig with
//     pkg/kubelet/network/dns's GetPodDNS (clusterDomain empty, kubelet's
//     default, among others), and resourceFieldRef env values with
//     kubelet's defaultPodLimitsForDownwardAPI over pkg/api/v1/resource
//     (criconfig137_test.go);
//   - statusmanager.StatusPatch with kubelet's PatchPodStatus (pkg/util/pod,
//     over client-go's fake clientset): the same patch bytes and the same
//     "unchanged" on random pairs of pod statuses;
//   - apiobjects' SecretPayload, ConfigMapPayload and DownwardAPIPayload
//     with kubelet's secret.MakePayload, configmap.MakePayload and
//     downwardapi.CollectData: files, contents, modes and error messages;
//   - apiobjects.ClusterTrustBundlePayload with kubelet's ClusterTrustBundle
//     manager (NewGAInformerManager over client-go's fake clientset) on
//     random bundles and projections: the same messages and certificates,
//     kubelet's shuffled order sorted (see clustertrustbundle_test.go);
//   - criconfig.ServiceEnvVars with pkg/kubelet/envvars.FromServices, and
//     podsync's env file parser (fileKeyRef) with pkg/kubelet/util/env's
//     ParseEnv (see env_test.go);
//   - containerlogs.ReadLogs with kubelet's reader
//     (k8s.io/cri-client/pkg/logs.ReadLogs) on random CRI and Docker JSON
//     log files and options, byte for byte (containerlogs/, its own
//     package here);
//   - cgroups' ResourceConfigForPod and QoS tiers, imagegc's choice and
//     eviction's thresholds and ranking with kubelet's (cgroups_test.go,
//     imagegc_test.go, eviction_test.go);
//   - nodeapi.RequestAttributes with kubelet's
//     NewNodeAuthorizerAttributesGetter (pkg/kubelet/server) on random
//     request paths and methods: verbs, subresources and their order
//     (nodeapi_test.go);
//   - validation.Pod with the API server's create path for pods, in the
//     package validation below (its own doc says how to run and replay it);
//   - pluginmanager with kubelet's plugin manager (pkg/kubelet/pluginmanager)
//     on scripted registration sockets, not random ones: each run with its
//     own directory, the handler calls and NotifyRegistrationStatus each
//     plugin saw, in order (pluginmanager_test.go).
//   - csi.Plugin with kubelet's CSI volume plugin (pkg/volume/csi on
//     volume/testing's fake kubelet host), each against its own csi/fake
//     driver: registration (the Node and CSINode kubelet writes), stage,
//     publish, unpublish, unstage of a PersistentVolume, an inline volume
//     and a block volume; CSI calls and requests, vol_data.json and the
//     files left compared (one scenario: kubelet's plugin keeps global
//     state); then the staging, publish and block paths and kubelet's
//     block vol_data.json on 2,000 random driver names, handles, spec
//     names and pod UIDs (csi_test.go).
//   - staticpods' file source with kubelet's own (config.NewSourceFile
//     through PodConfig's exported channel) on random manifest directories:
//     the same manifests kept and refused, the kept pods equal in full but
//     for the UID and config.hash values (kubelet hashes its internal type;
//     see staticpods' differences) and config.seen; then, the directory
//     rewritten at the same paths (re-encoded or changed), kubelet's UID
//     stays the same exactly when staticpods' does; and its HTTP source
//     with config.NewSourceURL on random Pod and PodList bodies, accepted
//     or refused alike, the pods equal but for the UID values
//     (staticpods_test.go).
//
// # Versions
//
// This module requires k8s.io/kubernetes v1.37.2 and replaces every staging
// module with its v0.37.2 release, as kubelet's own build does
// (../kubelet/build/go.mod, the recipe in ../../../shared/kubelet): podstart
// and kubelet are compiled against the same k8s.io/api, apimachinery,
// cri-api and kubelet modules, the ones podstart's own go.mod requires.
//
// Kubelet's feature gates keep their v1.37 defaults: the comparisons are
// against kubelet as it runs out of the box.
package diff
