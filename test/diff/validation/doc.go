// Package validationdiff is the differential tier for podstart's
// validation package: it compares validation.Pod with the Kubernetes API
// server's own create path for pods, from k8s.io/kubernetes v1.37.2, on
// random pods. It is part of the test/diff module, so that podstart's go.mod
// never requires k8s.io/kubernetes; run it from this directory:
//
//	go test -run TestValidatePod -v .                          # 20,000 pods, a new seed each run
//	go test -run TestValidatePod -v . -args -seed 42           # replay the seed a failure printed
//	go test -run TestValidatePod -v . -args -n 200000          # more pods
//	go test -run TestValidatePod -v . -args -report /tmp/r.txt # every disagreement with a pod to replay it
//	go test -run '^$' -fuzz FuzzValidatePod -fuzztime 5m .      # the fuzz target beyond its seed corpus
//
// (-n is also a flag of go test itself, hence -args.)
//
// # What is compared
//
// For each pod, as generated (not defaulted):
//
//   - podstart: validation.Pod(pod), and validation.Pod of the pod after the
//     API server's defaulting (SetObjectDefaults_Pod of pkg/apis/core/v1,
//     through legacyscheme); the two must accept or refuse alike.
//   - the API server (apiserver_test.go): defaulting, conversion to the
//     internal core.Pod, the system fields the generic store sets (its own
//     UID and creation time), the request's namespace (the pod's, or
//     "default"), the pod strategy's PrepareForCreate (which drops the fields
//     of disabled feature gates), then rest.ValidateCreate as
//     rest.BeforeCreate calls it: pod.Strategy.Validate (ValidatePodCreate
//     with GetValidationOptionsFromPodSpecAndMeta's options), the generic
//     object-meta checks, and the declarative validation the pod strategy
//     opts into. A pod's ephemeral containers, which the create path
//     refuses outright, are compared as validation's package doc says it
//     checks them: the pod is created without them, then they are added
//     through the ephemeralcontainers subresource (the
//     EphemeralContainersStrategy's PrepareForUpdate and
//     rest.ValidateUpdate). Feature gates keep their v1.37 defaults. The API server is
//     taken as started with --allow-privileged=true (capabilities), as every
//     cluster that runs privileged pods is, and as kubelet validates; no
//     admission plugin runs.
//
// TestValidatePod counts (a) pods the API server refuses and podstart
// accepts, (b) pods podstart refuses and the API server accepts, and (c)
// pods podstart answers differently before and after defaulting; it fails
// if any is above zero, with examples grouped by the first field path the
// two error lists differ on, and the seed. It also fails if the API server
// refuses an unmutated base pod (the generator's bug), and if podstart's
// UID rule is not applied. podstart's documented differences are not
// counted: its UID rule (errors on metadata.uid; the API server assigns
// UIDs itself) and the empty namespace it accepts. Pods both refuse on
// different field paths are counted (d) and listed with -report, not
// failed on: the verdict is the same.
//
// # Pods
//
// gen_test.go builds a random valid base: names, labels and annotations;
// containers, init containers and sidecars (restartPolicy Always) with
// images, commands, working directories, pull and termination-message
// policies, ports (named, host ports), env (values, fieldRef,
// resourceFieldRef, secretKeyRef, configMapKeyRef) and envFrom, volume
// mounts with subPath or subPathExpr, probes (exec, httpGet, tcpSocket,
// grpc; timings; a liveness termination grace period) and lifecycle hooks
// (exec, httpGet, tcpSocket, sleep), resources (cpu, memory,
// ephemeral-storage, an extended resource) and security contexts
// (capabilities, privileged, allowPrivilegeEscalation, users and groups,
// runAsNonRoot, readOnlyRootFilesystem, procMount, seccomp, AppArmor,
// SELinux); volumes of the types podstart supports: hostPath, emptyDir,
// secret, configMap, downwardAPI, projected (secret, configMap,
// downwardAPI, serviceAccountToken) and persistentVolumeClaim, with items,
// modes and paths; the pod's security context (users, groups, fsGroup and
// its policy, supplemental groups and their policy, sysctls, seccomp,
// AppArmor, SELinux and its change policy), restartPolicy, dnsPolicy and
// dnsConfig, hostAliases, hostname and subdomain, hostIPC, hostPID,
// hostUsers, shareProcessNamespace, terminationGracePeriodSeconds,
// activeDeadlineSeconds, serviceAccountName and
// automountServiceAccountToken, enableServiceLinks, nodeName, hostNetwork
// (with its port rules), nodeSelector, priorityClassName,
// preemptionPolicy, runtimeClassName, readinessGates, os (linux),
// imagePullSecrets, hostnameOverride, setHostnameAsFQDN, and containers'
// restartPolicy and restartPolicyRules (ContainerRestartRules) and
// resizePolicy, pod-level resources (PodLevelResources) and overhead. About
// seven pods in ten then get 1 to 3 hostile mutations from the catalogue
// of mutate_test.go: invalid, empty, too long and duplicate names (pod,
// namespace, UID, labels, annotations, containers, volumes, ports);
// escaping and absolute paths (hostPath, subPath, subPathExpr, mountPath,
// items and downward API paths, token paths, duplicates); modes (-1,
// 0o1000, 1<<22, 1<<23, 0o777, 0o4755, ... as defaultMode, items mode,
// downward API mode, emptyDir mode); quantities (negative, fractional for
// integer-only resources, requests above limits, huge, non-standard
// names); probe, hook and grace timings (negative, zero, successThreshold
// 2 on liveness and startup probes, probes and hooks on init containers,
// handlers missing or doubled); sysctls (invalid names, duplicates, unsafe
// names, namespaced sysctls with hostNetwork or hostIPC); env names and
// sources (with '=', empty, two sources, bad field paths and keys);
// security contexts the API refuses (privileged or CAP_SYS_ADMIN with
// allowPrivilegeEscalation false, procMount Unmasked with host users,
// negative or too large IDs, seccomp and AppArmor Localhost without a
// profile, host namespaces in a user namespace, shareProcessNamespace with
// hostPID, bad capabilities); v1.37's alpha fields (bindMountOptions,
// emptyDir mode, volume user and defaultUser); ephemeral containers (as
// kubectl debug sends them, or with fields they may not have, or a bad
// target); missing required fields (image, containers, volume source,
// referenced names) and bad enums, dnsConfig, hostAliases, hostname,
// subdomain, serviceAccountName and nodeName; pod-level names and enums
// (priority and runtime class, hostnameOverride, image pull secrets,
// readiness gates, node selector, preemption policy, OS, setHostnameAsFQDN,
// fsGroup, supplemental-groups and SELinux change policies); host network
// ports; container restart rules and resize policies; stopSignal; and
// edges: lengths at the API's limits on either side (names, labels,
// annotations' total size, port names, DNS searches), values at their
// limits that stay valid (printable env names, "a..b" paths, modes 0 and
// 0777, token expirations, sleep equal to the grace period, milli-CPU and
// fractional memory, unusual host paths), hugepages (resources and
// emptyDir media), fileKeyRef env, seccomp and AppArmor annotations
// against the fields (and the mirror-pod and deletion-cost annotations),
// probe and hook details (schemes, headers, hosts, named ports), ports'
// hostIP, probes' alpha gRPC mode and HTTP protocol, recursiveReadOnly and
// mountPropagation, image volumes, and pod-level resources and overhead
// (below the containers', requests above limits, bad names and
// quantities).
//
// Fields validation does not cover stay at their zero value: affinity,
// tolerations, topologySpreadConstraints, schedulingGates, resourceClaims
// (and containers' resources.claims), schedulerName, priority, schedulingGroup, evictionResponders, Windows
// options and the metadata beyond name, namespace, UID, labels and
// annotations (FuzzValidatePod clears them from its inputs too).
//
// # Versions
//
// k8s.io/kubernetes v1.37.2 with every staging module replaced by its
// v0.37.2, as kubelet's own build does (../../../shared/kubelet/build-v1.37.2);
// podstart itself requires the same k8s.io/api and apimachinery, so both
// sides see one API.
package validationdiff
