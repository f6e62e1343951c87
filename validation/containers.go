package validation

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The containers' rules are the API server's validateContainers,
// validateInitContainers, validateEphemeralContainers (through
// validateContainerCommon), validateContainersOnlyForPod,
// validatePodHostNetworkDeps and checkHostPortConflicts (volumes checks
// validateFileKeyRefVolumes), with the options ValidatePodCreate gets under
// v1.37's default feature gates: relaxed environment variable names,
// fileKeyRef env sources, container restart policies and rules (with the
// RestartAllContainers action), resize policies on sidecars.
//
// Each rule sees a field as the API server's defaulting would leave it (see
// the package doc): an empty pull policy, termination message policy, port
// protocol, fieldRef apiVersion, httpGet path or scheme, a zero probe
// timeout, period or threshold, a missing request where a limit is set, an
// unset host port with hostNetwork, quantities finer than a milli-unit, an
// unset or negative terminationGracePeriodSeconds are validated as their
// defaults, without copying the pod.
//
// Deliberate differences from ValidatePodCreate:
//   - spec.ephemeralContainers are validated as the ephemeralcontainers
//     subresource's update validates them, not refused: ValidatePodCreate
//     refuses any ("cannot be set on create"), but the pods a node runs get
//     them after creation.
//   - securityContext.privileged is accepted, as on a cluster whose API
//     server runs with --allow-privileged (kubeadm's default); the API
//     server's built-in default refuses it ("disallowed by cluster policy").

// effectiveGrace is terminationGracePeriodSeconds after defaulting: 30 when
// unset, 1 when negative.
func effectiveGrace(spec *corev1.PodSpec) int64 {
	switch g := spec.TerminationGracePeriodSeconds; {
	case g == nil:
		return corev1.DefaultTerminationGracePeriodSeconds
	case *g < 0:
		return 1
	default:
		return *g
	}
}

// podContext is what every container's rules need of the pod.
type podContext struct {
	spec        *corev1.PodSpec
	vols        map[string]corev1.VolumeSource
	grace       int64
	restart     corev1.RestartPolicy // the pod's, defaulted
	hostUsers   bool
	hostNetwork bool
}

// containerKind is which list a container is in.
type containerKind int

const (
	regularContainer containerKind = iota
	initContainer
	ephemeralContainer
)

// containers is the API server's validateContainers,
// validateInitContainers and validateEphemeralContainers (and
// validateContainersOnlyForPod) for spec's containers; vols are the pod's
// volumes by name. fld is the spec's path.
func containers(spec *corev1.PodSpec, vols map[string]corev1.VolumeSource, fld *field.Path) field.ErrorList {
	pc := &podContext{
		spec:        spec,
		vols:        vols,
		grace:       effectiveGrace(spec),
		restart:     spec.RestartPolicy,
		hostUsers:   spec.HostUsers == nil || *spec.HostUsers,
		hostNetwork: spec.HostNetwork,
	}
	if pc.restart == "" {
		pc.restart = corev1.RestartPolicyAlways
	}
	var errs field.ErrorList
	errs = append(errs, pc.regularContainers(fld.Child("containers"))...)
	errs = append(errs, pc.initContainers(fld.Child("initContainers"))...)
	errs = append(errs, pc.ephemeralContainers(fld.Child("ephemeralContainers"))...)
	errs = append(errs, pc.hostNetworkPorts(fld)...)
	errs = append(errs, imageWhitespace(spec.Containers, fld.Child("containers"))...)
	errs = append(errs, imageWhitespace(spec.InitContainers, fld.Child("initContainers"))...)
	return errs
}

// regularContainers is validateContainers.
func (pc *podContext) regularContainers(fld *field.Path) field.ErrorList {
	list := pc.spec.Containers
	if len(list) == 0 {
		return field.ErrorList{field.Required(fld, "")}
	}
	var errs field.ErrorList
	for i := range list {
		c := &list[i]
		p := fld.Index(i)
		errs = append(errs, pc.common(c, regularContainer, p)...)
		for j := 0; j < i; j++ {
			if list[j].Name == c.Name {
				errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
				break
			}
		}
		if lc := lifecycleOf(c); lc != nil {
			errs = append(errs, pc.lifecycle(lc, p.Child("lifecycle"))...)
		}
		errs = append(errs, pc.probes(c, p)...)
		errs = append(errs, restartPolicy(c.RestartPolicy, c.RestartPolicyRules, p)...)
	}
	return append(errs, pc.hostPortConflicts(list, fld)...)
}

// initContainers is validateInitContainers.
func (pc *podContext) initContainers(fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	list := pc.spec.InitContainers
	for i := range list {
		c := &list[i]
		p := fld.Index(i)
		errs = append(errs, pc.common(c, initContainer, p)...)

		// validateInitContainerRestartPolicy: rules without a policy are
		// only reported as such.
		if c.RestartPolicy == nil {
			if len(c.RestartPolicyRules) > 0 {
				errs = append(errs, field.Required(p.Child("restartPolicy"), "must specify restartPolicy when restart rules are used"))
			}
		} else {
			errs = append(errs, restartPolicy(c.RestartPolicy, c.RestartPolicyRules, p)...)
		}
		sidecar := isSidecar(c)

		// Names are unique among app and init containers; an init
		// container's empty name (already Required) is not recorded.
		if hasContainerNamed(pc.spec.Containers, c.Name) || c.Name != "" && hasContainerNamed(list[:i], c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		}

		// Init containers run one at a time: host ports conflict only
		// within one (and the API server names it as its list's first).
		errs = append(errs, pc.hostPortConflicts(list[i:i+1], fld)...)

		if sidecar {
			if lc := lifecycleOf(c); lc != nil {
				errs = append(errs, pc.lifecycle(lc, p.Child("lifecycle"))...)
			}
			errs = append(errs, pc.probes(c, p)...)
		} else {
			const msg = "may not be set for init containers without restartPolicy=Always"
			if lifecycleOf(c) != nil {
				errs = append(errs, field.Forbidden(p.Child("lifecycle"), msg))
			}
			if c.LivenessProbe != nil {
				errs = append(errs, field.Forbidden(p.Child("livenessProbe"), msg))
			}
			if c.ReadinessProbe != nil {
				errs = append(errs, field.Forbidden(p.Child("readinessProbe"), msg))
			}
			if c.StartupProbe != nil {
				errs = append(errs, field.Forbidden(p.Child("startupProbe"), msg))
			}
			for j := range c.ResizePolicy {
				if c.ResizePolicy[j].RestartPolicy == corev1.RestartContainer {
					errs = append(errs, field.Invalid(p.Child("resizePolicy").Index(j).Child("restartPolicy"), c.ResizePolicy[j].RestartPolicy, "must not be set to 'RestartContainer' for non-sidecar initContainers"))
				}
			}
		}
	}
	return errs
}

// hasContainerNamed: some container of list is named name.
func hasContainerNamed(list []corev1.Container, name string) bool {
	for i := range list {
		if list[i].Name == name {
			return true
		}
	}
	return false
}

// isSidecar: an init container with restartPolicy Always.
func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

const ephemeralForbidden = "cannot be set for an Ephemeral Container"

// ephemeralContainers is validateEphemeralContainers.
func (pc *podContext) ephemeralContainers(fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	list := pc.spec.EphemeralContainers
	for i := range list {
		ec := &list[i]
		c := (*corev1.Container)(&ec.EphemeralContainerCommon)
		p := fld.Index(i)
		errs = append(errs, pc.common(c, ephemeralContainer, p)...)
		errs = append(errs, imageWhitespaceOf(c, p)...)

		// Names are unique across all three lists.
		if hasContainerNamed(pc.spec.Containers, ec.Name) || hasContainerNamed(pc.spec.InitContainers, ec.Name) || hasEphemeralNamed(list[:i], ec.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), ec.Name))
		}
		if t := ec.TargetContainerName; t != "" && !hasContainerNamed(pc.spec.Containers, t) && !hasContainerNamed(pc.spec.InitContainers, t) {
			errs = append(errs, field.NotFound(p.Child("targetContainerName"), t))
		}

		// Only an allow-list of fields; the rest must be unset (a nil
		// slice or map: an empty one is set).
		if c.Ports != nil {
			errs = append(errs, field.Forbidden(p.Child("ports"), ephemeralForbidden))
		}
		if r := &c.Resources; r.Limits != nil || r.Requests != nil || r.Claims != nil {
			errs = append(errs, field.Forbidden(p.Child("resources"), ephemeralForbidden))
		}
		if c.ResizePolicy != nil {
			errs = append(errs, field.Forbidden(p.Child("resizePolicy"), ephemeralForbidden))
		}
		if c.RestartPolicy != nil {
			errs = append(errs, field.Forbidden(p.Child("restartPolicy"), ephemeralForbidden))
		}
		if c.RestartPolicyRules != nil {
			errs = append(errs, field.Forbidden(p.Child("restartPolicyRules"), ephemeralForbidden))
		}
		if c.LivenessProbe != nil {
			errs = append(errs, field.Forbidden(p.Child("livenessProbe"), ephemeralForbidden))
		}
		if c.ReadinessProbe != nil {
			errs = append(errs, field.Forbidden(p.Child("readinessProbe"), ephemeralForbidden))
		}
		if c.StartupProbe != nil {
			errs = append(errs, field.Forbidden(p.Child("startupProbe"), ephemeralForbidden))
		}
		if lifecycleOf(c) != nil {
			errs = append(errs, field.Forbidden(p.Child("lifecycle"), ephemeralForbidden))
		}

		// Subpaths are bind mounts that outlive the container.
		for j := range c.VolumeMounts {
			if c.VolumeMounts[j].SubPath != "" {
				errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPath"), ephemeralForbidden))
			}
			if c.VolumeMounts[j].SubPathExpr != "" {
				errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPathExpr"), ephemeralForbidden))
			}
		}
	}
	return errs
}

func hasEphemeralNamed(list []corev1.EphemeralContainer, name string) bool {
	for i := range list {
		if list[i].Name == name {
			return true
		}
	}
	return false
}

// imageWhitespace is validateContainersOnlyForPod.
func imageWhitespace(list []corev1.Container, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range list {
		if img := list[i].Image; img != "" && len(img) != len(strings.TrimSpace(img)) {
			errs = append(errs, imageWhitespaceOf(&list[i], fld.Index(i))...)
		}
	}
	return errs
}

// imageWhitespaceOf is validateContainerOnlyForPod.
func imageWhitespaceOf(c *corev1.Container, p *field.Path) field.ErrorList {
	if len(c.Image) != len(strings.TrimSpace(c.Image)) {
		return field.ErrorList{field.Invalid(p.Child("image"), c.Image, "must not have leading or trailing whitespace")}
	}
	return nil
}

// common is validateContainerCommon: the rules every container follows.
func (pc *podContext) common(c *corev1.Container, kind containerKind, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else if msgs := labelMsgs(c.Name); len(msgs) > 0 {
		errs = append(errs, dnsLabel(c.Name, p.Child("name"))...)
	}
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	}
	switch c.TerminationMessagePolicy {
	case "", corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
	default:
		errs = append(errs, field.NotSupported(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
			[]corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}))
	}
	if len(c.Ports) > 0 {
		errs = append(errs, pc.ports(c.Ports, kind, p.Child("ports"))...)
	}
	if len(c.Env) > 0 {
		errs = append(errs, env(c.Env, p.Child("env"))...)
	}
	if len(c.EnvFrom) > 0 {
		errs = append(errs, envFrom(c.EnvFrom, p.Child("envFrom"))...)
	}
	if len(c.VolumeMounts) > 0 {
		errs = append(errs, pc.volumeMounts(c, p.Child("volumeMounts"))...)
	}
	if len(c.VolumeDevices) > 0 {
		errs = append(errs, pc.volumeDevices(c, p.Child("volumeDevices"))...)
	}
	switch c.ImagePullPolicy {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		errs = append(errs, field.NotSupported(p.Child("imagePullPolicy"), c.ImagePullPolicy,
			[]corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}))
	}
	if r := &c.Resources; len(r.Limits) > 0 || len(r.Requests) > 0 || len(r.Claims) > 0 {
		errs = append(errs, pc.resources(r, kind != ephemeralContainer, p.Child("resources"))...)
	}
	if len(c.ResizePolicy) > 0 {
		errs = append(errs, pc.resizePolicy(c.ResizePolicy, p.Child("resizePolicy"))...)
	}
	if c.SecurityContext != nil {
		errs = append(errs, pc.securityContext(c.SecurityContext, p.Child("securityContext"))...)
	}
	return errs
}

var supportedPortProtocols = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}

// effectiveProtocol is a port's protocol after defaulting.
func effectiveProtocol(p *corev1.ContainerPort) corev1.Protocol {
	if p.Protocol == "" {
		return corev1.ProtocolTCP
	}
	return p.Protocol
}

// effectiveHostPort is a port's hostPort after defaulting: with
// hostNetwork, an unset one is the containerPort (for app and init
// containers).
func (pc *podContext) effectiveHostPort(p *corev1.ContainerPort, kind containerKind) int32 {
	if p.HostPort == 0 && pc.hostNetwork && kind != ephemeralContainer {
		return p.ContainerPort
	}
	return p.HostPort
}

// ports is validateContainerPorts.
func (pc *podContext) ports(ports []corev1.ContainerPort, kind containerKind, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range ports {
		port := &ports[i]
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
				for _, msg := range msgs {
					errs = append(errs, field.Invalid(fld.Index(i).Child("name"), port.Name, msg))
				}
			} else {
				// An earlier port with the same (so also valid) name.
				for j := 0; j < i; j++ {
					if ports[j].Name == port.Name {
						errs = append(errs, field.Duplicate(fld.Index(i).Child("name"), port.Name))
						break
					}
				}
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(fld.Index(i).Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(fld.Index(i).Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if hp := pc.effectiveHostPort(port, kind); hp != 0 {
			for _, msg := range validation.IsValidPortNum(int(hp)) {
				errs = append(errs, field.Invalid(fld.Index(i).Child("hostPort"), hp, msg))
			}
		}
		switch port.Protocol {
		case "", corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			errs = append(errs, field.NotSupported(fld.Index(i).Child("protocol"), port.Protocol, supportedPortProtocols))
		}
	}
	return errs
}

// hostPortConflicts is checkHostPortConflicts: a host port (with its
// protocol and host IP) used twice among list. fld is the list's path.
func (pc *podContext) hostPortConflicts(list []corev1.Container, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	type key struct {
		protocol corev1.Protocol
		hostIP   string
		port     int32
	}
	var seen map[key]struct{}
	for ci := range list {
		for pi := range list[ci].Ports {
			port := &list[ci].Ports[pi]
			hp := pc.effectiveHostPort(port, regularContainer)
			if hp == 0 {
				continue
			}
			k := key{effectiveProtocol(port), port.HostIP, hp}
			if _, dup := seen[k]; dup {
				errs = append(errs, field.Duplicate(fld.Index(ci).Child("ports").Index(pi).Child("hostPort"), fmt.Sprintf("%s/%s/%d", k.protocol, k.hostIP, k.port)))
				continue
			}
			if seen == nil {
				seen = make(map[key]struct{})
			}
			seen[k] = struct{}{}
		}
	}
	return errs
}

// hostNetworkPorts is validatePodHostNetworkDeps: with hostNetwork, an app
// container's hostPort is its containerPort.
func (pc *podContext) hostNetworkPorts(fld *field.Path) field.ErrorList {
	if !pc.hostNetwork {
		return nil
	}
	var errs field.ErrorList
	for i := range pc.spec.Containers {
		for j := range pc.spec.Containers[i].Ports {
			port := &pc.spec.Containers[i].Ports[j]
			if hp := pc.effectiveHostPort(port, regularContainer); hp != port.ContainerPort {
				errs = append(errs, field.Invalid(fld.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"), hp, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
	}
	return errs
}

// env is ValidateEnv with relaxed names.
func env(vars []corev1.EnvVar, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range vars {
		ev := &vars[i]
		if ev.Name == "" {
			errs = append(errs, field.Required(fld.Index(i).Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				errs = append(errs, field.Invalid(fld.Index(i).Child("name"), ev.Name, msg))
			}
		}
		if ev.ValueFrom != nil {
			errs = append(errs, envValueFrom(ev, fld.Index(i).Child("valueFrom"))...)
		}
	}
	return errs
}

var envFieldPaths = map[string]bool{
	"metadata.name":           true,
	"metadata.namespace":      true,
	"metadata.uid":            true,
	"spec.nodeName":           true,
	"spec.serviceAccountName": true,
	"status.hostIP":           true,
	"status.hostIPs":          true,
	"status.podIP":            true,
	"status.podIPs":           true,
}

// envFieldPathList is envFieldPaths sorted, for messages.
var envFieldPathList = []string{"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"}

var envResources = map[string]bool{
	"limits.cpu":                 true,
	"limits.memory":              true,
	"limits.ephemeral-storage":   true,
	"requests.cpu":               true,
	"requests.memory":            true,
	"requests.ephemeral-storage": true,
}

var envResourceList = []string{"limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"}

// envValueFrom is validateEnvVarValueFrom (with fileKeyRef).
func envValueFrom(ev *corev1.EnvVar, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	from := ev.ValueFrom
	n := 0
	if from.FieldRef != nil {
		n++
		errs = append(errs, objectFieldSelector(from.FieldRef, envFieldPaths, envFieldPathList, fld.Child("fieldRef"))...)
	}
	if from.ResourceFieldRef != nil {
		n++
		errs = append(errs, resourceFieldSelector(from.ResourceFieldRef, fld.Child("resourceFieldRef"))...)
	}
	if from.ConfigMapKeyRef != nil {
		n++
		errs = append(errs, keySelector(from.ConfigMapKeyRef.Name, from.ConfigMapKeyRef.Key, fld.Child("configMapKeyRef"))...)
	}
	if from.SecretKeyRef != nil {
		n++
		errs = append(errs, keySelector(from.SecretKeyRef.Name, from.SecretKeyRef.Key, fld.Child("secretKeyRef"))...)
	}
	if from.FileKeyRef != nil {
		n++
		errs = append(errs, fileKeySelector(from.FileKeyRef, fld.Child("fileKeyRef"))...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(fld, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case ev.Value != "":
		errs = append(errs, field.Invalid(fld, "", "may not be specified when `value` is not empty"))
	case n > 1:
		errs = append(errs, field.Invalid(fld, "", "may not have more than one field specified at a time"))
	}
	return errs
}

// downwardFieldLabel is ConvertDownwardAPIFieldLabel for a pod's v1 field
// labels: the internal label, or why there is none.
func downwardFieldLabel(version, label string) (string, error) {
	if version != "v1" {
		return "", fmt.Errorf("unsupported pod version: %s", version)
	}
	if path, _, ok := splitSubscript(label); ok {
		switch path {
		case "metadata.annotations", "metadata.labels":
			return label, nil
		default:
			return "", fmt.Errorf("field label does not support subscript: %s", label)
		}
	}
	switch label {
	case "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
		"spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
		"status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs":
		return label, nil
	case "spec.host":
		return "spec.nodeName", nil
	default:
		return "", fmt.Errorf("field label not supported: %s", label)
	}
}

// objectFieldSelector is validateObjectFieldSelector; an empty apiVersion
// is defaulting's "v1". supported is the allowed paths, sorted as list.
func objectFieldSelector(fs *corev1.ObjectFieldSelector, supported map[string]bool, list []string, fld *field.Path) field.ErrorList {
	version := fs.APIVersion
	if version == "" {
		version = "v1"
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(fld.Child("fieldPath"), "")}
	}
	label, err := downwardFieldLabel(version, fs.FieldPath)
	if err != nil {
		return field.ErrorList{field.Invalid(fld.Child("fieldPath"), fs.FieldPath, fmt.Sprintf("error converting fieldPath: %v", err))}
	}
	if path, sub, ok := splitSubscript(label); ok {
		switch path {
		case "metadata.annotations":
			return qualifiedName(strings.ToLower(sub), fld)
		case "metadata.labels":
			return qualifiedName(sub, fld)
		default:
			return field.ErrorList{field.Invalid(fld, path, "does not support subscript")}
		}
	}
	if !supported[label] {
		return field.ErrorList{field.NotSupported(fld.Child("fieldPath"), label, list)}
	}
	return nil
}

const (
	hugePagesRequestsPrefix = "requests.hugepages-"
	hugePagesLimitsPrefix   = "limits.hugepages-"
)

// resourceFieldSelector is validateContainerResourceFieldSelector for an
// environment variable (the container name may be empty: it is the
// container's own).
func resourceFieldSelector(fs *corev1.ResourceFieldSelector, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if fs.Resource == "" {
		errs = append(errs, field.Required(fld.Child("resource"), ""))
	} else if !envResources[fs.Resource] && !strings.HasPrefix(fs.Resource, hugePagesRequestsPrefix) && !strings.HasPrefix(fs.Resource, hugePagesLimitsPrefix) {
		errs = append(errs, field.NotSupported(fld.Child("resource"), fs.Resource, envResourceList))
	}
	return append(errs, resourceDivisor(fs.Resource, fs.Divisor, fld)...)
}

var (
	cpuDivisors  = map[string]bool{"1m": true, "1": true}
	byteDivisors = map[string]bool{
		"1": true, "1k": true, "1M": true, "1G": true, "1T": true, "1P": true, "1E": true,
		"1Ki": true, "1Mi": true, "1Gi": true, "1Ti": true, "1Pi": true, "1Ei": true,
	}
)

// resourceDivisor is validateContainerResourceDivisor.
func resourceDivisor(rName string, divisor resource.Quantity, fld *field.Path) field.ErrorList {
	if divisor.IsZero() {
		return nil
	}
	d := divisor.String() // divisor is a copy: String caches in it
	var errs field.ErrorList
	switch rName {
	case "limits.cpu", "requests.cpu":
		if !cpuDivisors[d] {
			errs = append(errs, field.Invalid(fld.Child("divisor"), rName, "only divisor's values 1m and 1 are supported with the cpu resource"))
		}
	case "limits.memory", "requests.memory":
		if !byteDivisors[d] {
			errs = append(errs, field.Invalid(fld.Child("divisor"), rName, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource"))
		}
	case "limits.ephemeral-storage", "requests.ephemeral-storage":
		if !byteDivisors[d] {
			errs = append(errs, field.Invalid(fld.Child("divisor"), rName, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage resource"))
		}
	}
	if strings.HasPrefix(rName, hugePagesRequestsPrefix) || strings.HasPrefix(rName, hugePagesLimitsPrefix) {
		if !byteDivisors[d] {
			errs = append(errs, field.Invalid(fld.Child("divisor"), rName, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource"))
		}
	}
	return errs
}

// keySelector is validateConfigMapKeySelector and
// validateSecretKeySelector: an object name (a DNS subdomain, so not
// empty) and a key.
func keySelector(name, key string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(fld.Child("name"), name, msg))
	}
	if key == "" {
		errs = append(errs, field.Required(fld.Child("key"), ""))
	} else {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(fld.Child("key"), key, msg))
		}
	}
	return errs
}

// fileKeySelector is validateFileKeySelector.
func fileKeySelector(s *corev1.FileKeySelector, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Key == "" {
		errs = append(errs, field.Required(fld.Child("key"), ""))
	} else {
		for _, msg := range validation.IsRelaxedEnvVarName(s.Key) {
			errs = append(errs, field.Invalid(fld.Child("key"), s.Key, msg))
		}
	}
	if s.VolumeName == "" {
		errs = append(errs, field.Required(fld.Child("volumeName"), ""))
	} else {
		errs = append(errs, dnsLabel(s.VolumeName, fld.Child("volumeName"))...)
	}
	if s.Path == "" {
		errs = append(errs, field.Required(fld.Child("path"), ""))
	} else {
		errs = append(errs, noBacksteps(s.Path, fld.Child("path"))...)
	}
	return errs
}

// envFrom is ValidateEnvFrom with relaxed prefixes.
func envFrom(list []corev1.EnvFromSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range list {
		ev := &list[i]
		if ev.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Prefix) {
				errs = append(errs, field.Invalid(fld.Index(i).Child("prefix"), ev.Prefix, msg))
			}
		}
		n := 0
		if ev.ConfigMapRef != nil {
			n++
			errs = append(errs, envSourceName(ev.ConfigMapRef.Name, fld.Index(i).Child("configMapRef", "name"))...)
		}
		if ev.SecretRef != nil {
			n++
			errs = append(errs, envSourceName(ev.SecretRef.Name, fld.Index(i).Child("secretRef", "name"))...)
		}
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(fld, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(fld, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

// envSourceName is validateConfigMapEnvSource's and
// validateSecretEnvSource's name rule (names as prefixes: a trailing '-'
// is allowed).
func envSourceName(name string, fld *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fld, "")}
	}
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, true) {
		errs = append(errs, field.Invalid(fld, name, msg))
	}
	return errs
}

// lastMountPath: mounts has a mount at path that is the last mount of its
// volume (GetVolumeMountMap keeps one path per volume name: the last).
func lastMountPath(mounts []corev1.VolumeMount, path string) bool {
	for i := range mounts {
		if mounts[i].MountPath != path {
			continue
		}
		last := true
		for j := i + 1; j < len(mounts); j++ {
			if mounts[j].Name == mounts[i].Name {
				last = false
				break
			}
		}
		if last {
			return true
		}
	}
	return false
}

// lastDevicePath is lastMountPath for volumeDevices.
func lastDevicePath(devices []corev1.VolumeDevice, path string) bool {
	for i := range devices {
		if devices[i].DevicePath != path {
			continue
		}
		last := true
		for j := i + 1; j < len(devices); j++ {
			if devices[j].Name == devices[i].Name {
				last = false
				break
			}
		}
		if last {
			return true
		}
	}
	return false
}

func hasDeviceNamed(devices []corev1.VolumeDevice, name string) bool {
	for i := range devices {
		if devices[i].Name == name {
			return true
		}
	}
	return false
}

func hasMountNamed(mounts []corev1.VolumeMount, name string) bool {
	for i := range mounts {
		if mounts[i].Name == name {
			return true
		}
	}
	return false
}

var (
	supportedMountPropagations = []corev1.MountPropagationMode{corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone}
	supportedRecursiveReadOnly = []corev1.RecursiveReadOnlyMode{corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible}
	supportedBindMountOptions  = []string{"nodev", "noexec", "nosuid"}
)

// volumeMounts is ValidateVolumeMounts. Note the API server's paths for
// subPath, subPathExpr, mountPropagation and recursiveReadOnly errors: the
// list's, not the mount's (volumeMounts.subPath).
func (pc *podContext) volumeMounts(c *corev1.Container, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	mounts := c.VolumeMounts
	for i := range mounts {
		mnt := &mounts[i]
		if mnt.Name == "" {
			errs = append(errs, field.Required(fld.Index(i).Child("name"), ""))
		}
		if _, ok := pc.vols[mnt.Name]; !ok {
			errs = append(errs, field.NotFound(fld.Index(i).Child("name"), mnt.Name))
		}
		if mnt.MountPath == "" {
			errs = append(errs, field.Required(fld.Index(i).Child("mountPath"), ""))
		}
		for j := 0; j < i; j++ {
			if mounts[j].MountPath == mnt.MountPath {
				errs = append(errs, field.Invalid(fld.Index(i).Child("mountPath"), mnt.MountPath, "must be unique"))
				break
			}
		}
		if hasDeviceNamed(c.VolumeDevices, mnt.Name) {
			errs = append(errs, field.Invalid(fld.Index(i).Child("name"), mnt.Name, "must not already exist in volumeDevices"))
		}
		if lastDevicePath(c.VolumeDevices, mnt.MountPath) {
			errs = append(errs, field.Invalid(fld.Index(i).Child("mountPath"), mnt.MountPath, "must not already exist as a path in volumeDevices"))
		}
		if mnt.SubPath != "" {
			errs = append(errs, localDescendingPath(mnt.SubPath, fld.Child("subPath"))...)
		}
		if mnt.SubPathExpr != "" {
			if mnt.SubPath != "" {
				errs = append(errs, field.Invalid(fld.Index(i).Child("subPathExpr"), mnt.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, localDescendingPath(mnt.SubPathExpr, fld.Child("subPathExpr"))...)
		}
		if mp := mnt.MountPropagation; mp != nil {
			switch *mp {
			case corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone:
			default:
				errs = append(errs, field.NotSupported(fld.Child("mountPropagation"), *mp, supportedMountPropagations))
			}
			if *mp == corev1.MountPropagationBidirectional && !privileged(c) {
				errs = append(errs, field.Forbidden(fld.Child("mountPropagation"), "Bidirectional mount propagation is available only to privileged containers"))
			}
		}
		if rro := mnt.RecursiveReadOnly; rro != nil {
			switch *rro {
			case corev1.RecursiveReadOnlyDisabled:
			case corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible:
				if !mnt.ReadOnly {
					errs = append(errs, field.Forbidden(fld.Child("recursiveReadOnly"), "may only be specified when readOnly is true"))
				}
				if mnt.MountPropagation != nil && *mnt.MountPropagation != corev1.MountPropagationNone {
					errs = append(errs, field.Forbidden(fld.Child("recursiveReadOnly"), "may only be specified when mountPropagation is None or not specified"))
				}
			default:
				errs = append(errs, field.NotSupported(fld.Child("recursiveReadOnly"), *rro, supportedRecursiveReadOnly))
			}
		}
		if opts := mountBindOptions(mnt); volumeBindMountOptions && len(opts) > 0 {
			errs = append(errs, bindMountOptions(opts, fld.Index(i).Child("bindMountOptions"))...)
			if vs, ok := pc.vols[mnt.Name]; ok && vs.Image != nil {
				errs = append(errs, field.Invalid(fld.Index(i).Child("bindMountOptions"), opts, "bindMountOptions may not be used with image volumes"))
			}
		}
	}
	return errs
}

// bindMountOptions is validateBindMountOptions.
func bindMountOptions(opts []string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, opt := range opts {
		switch opt {
		case "noexec", "nodev", "nosuid":
		default:
			errs = append(errs, field.NotSupported(fld.Index(i), opt, supportedBindMountOptions))
		}
		for j := 0; j < i; j++ {
			if opts[j] == opt {
				errs = append(errs, field.Duplicate(fld.Index(i), opt))
				break
			}
		}
	}
	return errs
}

// privileged: the container's securityContext.privileged is true.
func privileged(c *corev1.Container) bool {
	return c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
}

// volumeDevices is ValidateVolumeDevices.
func (pc *podContext) volumeDevices(c *corev1.Container, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	devices := c.VolumeDevices
	for i := range devices {
		dev := &devices[i]
		src, matched := pc.vols[dev.Name]
		if dev.Name == "" {
			errs = append(errs, field.Required(fld.Index(i).Child("name"), ""))
		}
		// Names seen are the earlier non-empty ones.
		if dev.Name != "" {
			for j := 0; j < i; j++ {
				if devices[j].Name == dev.Name {
					errs = append(errs, field.Invalid(fld.Index(i).Child("name"), dev.Name, "must be unique"))
					break
				}
			}
		}
		if matched && src.PersistentVolumeClaim == nil && src.Ephemeral == nil {
			errs = append(errs, field.Invalid(fld.Index(i).Child("name"), dev.Name, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if !matched {
			errs = append(errs, field.NotFound(fld.Index(i).Child("name"), dev.Name))
		}
		if dev.DevicePath == "" {
			errs = append(errs, field.Required(fld.Index(i).Child("devicePath"), ""))
		}
		// Paths seen are the earlier ones without backsteps.
		for j := 0; j < i; j++ {
			if devices[j].DevicePath == dev.DevicePath && (dev.DevicePath == "" || len(noBacksteps(dev.DevicePath, fld)) == 0) {
				errs = append(errs, field.Invalid(fld.Index(i).Child("devicePath"), dev.DevicePath, "must be unique"))
				break
			}
		}
		if dev.DevicePath != "" && len(noBacksteps(dev.DevicePath, fld)) > 0 {
			errs = append(errs, field.Invalid(fld.Index(i).Child("devicePath"), dev.DevicePath, "can not contain backsteps ('..')"))
		}
		if hasMountNamed(c.VolumeMounts, dev.Name) {
			errs = append(errs, field.Invalid(fld.Index(i).Child("name"), dev.Name, "must not already exist in volumeMounts"))
		}
		if lastMountPath(c.VolumeMounts, dev.DevicePath) {
			errs = append(errs, field.Invalid(fld.Index(i).Child("devicePath"), dev.DevicePath, "must not already exist as a path in volumeMounts"))
		}
	}
	return errs
}

// probes validates a container's liveness, readiness and startup probes.
func (pc *podContext) probes(c *corev1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pr := c.LivenessProbe; pr != nil {
		errs = append(errs, pc.probe(pr, p.Child("livenessProbe"))...)
		if st := pr.SuccessThreshold; st != 1 && st != 0 {
			errs = append(errs, field.Invalid(p.Child("livenessProbe", "successThreshold"), st, "must be 1"))
		}
	}
	if pr := c.ReadinessProbe; pr != nil {
		errs = append(errs, pc.probe(pr, p.Child("readinessProbe"))...)
		if pr.TerminationGracePeriodSeconds != nil {
			errs = append(errs, field.Invalid(p.Child("readinessProbe", "terminationGracePeriodSeconds"), pr.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	if pr := c.StartupProbe; pr != nil {
		errs = append(errs, pc.probe(pr, p.Child("startupProbe"))...)
		if st := pr.SuccessThreshold; st != 1 && st != 0 {
			errs = append(errs, field.Invalid(p.Child("startupProbe", "successThreshold"), st, "must be 1"))
		}
	}
	return errs
}

// probe is validateProbe. Zero timeouts, periods and thresholds are
// defaulting's; negative ones are refused.
func (pc *podContext) probe(pr *corev1.Probe, fld *field.Path) field.ErrorList {
	h := &pr.ProbeHandler
	errs := pc.handler(h.Exec, h.HTTPGet, h.TCPSocket, h.GRPC, nil, fld)
	if pr.InitialDelaySeconds < 0 {
		errs = append(errs, nonnegative(int64(pr.InitialDelaySeconds), fld.Child("initialDelaySeconds"))...)
	}
	if pr.TimeoutSeconds < 0 {
		errs = append(errs, nonnegative(int64(pr.TimeoutSeconds), fld.Child("timeoutSeconds"))...)
	}
	if pr.PeriodSeconds < 0 {
		errs = append(errs, nonnegative(int64(pr.PeriodSeconds), fld.Child("periodSeconds"))...)
	}
	if pr.SuccessThreshold < 0 {
		errs = append(errs, nonnegative(int64(pr.SuccessThreshold), fld.Child("successThreshold"))...)
	}
	if pr.FailureThreshold < 0 {
		errs = append(errs, nonnegative(int64(pr.FailureThreshold), fld.Child("failureThreshold"))...)
	}
	if g := pr.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(fld.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return errs
}

const moreThanOneHandler = "may not specify more than 1 handler type"

// handler is validateHandler: exactly one of the handlers (a probe has no
// sleep, a lifecycle hook no gRPC).
func (pc *podContext) handler(exec *corev1.ExecAction, httpGet *corev1.HTTPGetAction, tcp *corev1.TCPSocketAction, grpc *corev1.GRPCAction, sleep *corev1.SleepAction, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	if exec != nil {
		n++
		if len(exec.Command) == 0 {
			errs = append(errs, field.Required(fld.Child("exec", "command"), ""))
		}
	}
	if httpGet != nil {
		if n > 0 {
			errs = append(errs, field.Forbidden(fld.Child("httpGet"), moreThanOneHandler))
		} else {
			n++
			errs = append(errs, httpGetAction(httpGet, fld.Child("httpGet"))...)
		}
	}
	if tcp != nil {
		if n > 0 {
			errs = append(errs, field.Forbidden(fld.Child("tcpSocket"), moreThanOneHandler))
		} else {
			n++
			errs = append(errs, portNumOrName(tcp.Port, fld.Child("tcpSocket", "port"))...)
		}
	}
	if grpc != nil {
		if n > 0 {
			errs = append(errs, field.Forbidden(fld.Child("grpc"), moreThanOneHandler))
		} else {
			n++
			for _, msg := range validation.IsValidPortNum(int(grpc.Port)) {
				errs = append(errs, field.Invalid(fld.Child("grpc", "port"), int(grpc.Port), msg))
			}
			if m := grpcMode(grpc); grpcContainerProbeTLS && m != nil && *m != "Plaintext" && *m != "TLS" {
				errs = append(errs, field.NotSupported(fld.Child("grpc", "mode"), *m, []string{"Plaintext", "TLS"}))
			}
		}
	}
	if sleep != nil {
		if n > 0 {
			errs = append(errs, field.Forbidden(fld.Child("sleep"), moreThanOneHandler))
		} else {
			n++
			if sleep.Seconds < 0 || sleep.Seconds > pc.grace {
				errs = append(errs, field.Invalid(fld.Child("sleep"), sleep.Seconds, fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", pc.grace)))
			}
		}
	}
	if n == 0 {
		errs = append(errs, field.Required(fld, "must specify a handler type"))
	}
	return errs
}

// httpGetAction is validateHTTPGetAction; an empty path and scheme are
// defaulting's "/" and HTTP.
func httpGetAction(h *corev1.HTTPGetAction, fld *field.Path) field.ErrorList {
	errs := portNumOrName(h.Port, fld.Child("port"))
	scheme := h.Scheme
	switch scheme {
	case "":
		scheme = corev1.URISchemeHTTP
	case corev1.URISchemeHTTP, corev1.URISchemeHTTPS:
	default:
		errs = append(errs, field.NotSupported(fld.Child("scheme"), scheme, []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}))
	}
	for i := range h.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(h.HTTPHeaders[i].Name) {
			errs = append(errs, field.Invalid(fld.Child("httpHeaders"), h.HTTPHeaders[i].Name, msg))
		}
	}
	if pr := httpGetProtocol(h); h2cContainerProbe && pr != nil {
		switch {
		case *pr != "HTTP1" && *pr != "HTTP2":
			errs = append(errs, field.NotSupported(fld.Child("protocol"), *pr, []string{"HTTP1", "HTTP2"}))
		case *pr == "HTTP2" && scheme != corev1.URISchemeHTTP:
			errs = append(errs, field.Invalid(fld.Child("protocol"), *pr, "is only supported with HTTP (H2C)"))
		case *pr == "HTTP2" && h.Host != "":
			errs = append(errs, field.Invalid(fld.Child("host"), h.Host, "must be empty when `protocol` is \"HTTP2\""))
		}
	}
	return errs
}

// portNumOrName is ValidatePortNumOrName.
func portNumOrName(port intstr.IntOrString, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(fld, port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(fld, port.StrVal, msg))
		}
	default:
		errs = append(errs, field.InternalError(fld, fmt.Errorf("unknown type: %v", port.Type)))
	}
	return errs
}

// v1.37's feature gates for container fields that are alpha and off by
// default: the API server drops lifecycle.stopSignal
// (ContainerStopSignals), volumeMounts[].bindMountOptions
// (VolumeBindMountOptions) and probes' grpc.mode (GRPCContainerProbeTLS)
// in PrepareForCreate, before validating, so Pod accepts any value of them;
// Check refuses them set (droppedFields). With a gate on, they are
// validated as ValidatePodCreate does.
var (
	containerStopSignals   = false
	volumeBindMountOptions = false
	grpcContainerProbeTLS  = false
	h2cContainerProbe      = false // httpGet.protocol of probes and hooks
)

// lifecycleOf is c's lifecycle as the API server validates it: with
// ContainerStopSignals off, a lifecycle that only held a stopSignal is
// dropped whole (dropContainerStopSignals), so it is absent; an empty one
// stays.
func lifecycleOf(c *corev1.Container) *corev1.Lifecycle {
	lc := c.Lifecycle
	if lc != nil && !containerStopSignals && lc.StopSignal != nil && lc.PostStart == nil && lc.PreStop == nil {
		return nil
	}
	return lc
}

// Signals a Linux container may stop with (validateStopSignal's).
var linuxStopSignals = map[corev1.Signal]bool{}

var linuxStopSignalList = []corev1.Signal{
	corev1.SIGABRT, corev1.SIGALRM, corev1.SIGBUS, corev1.SIGCHLD,
	corev1.SIGCLD, corev1.SIGCONT, corev1.SIGFPE, corev1.SIGHUP,
	corev1.SIGILL, corev1.SIGINT, corev1.SIGIO, corev1.SIGIOT,
	corev1.SIGKILL, corev1.SIGPIPE, corev1.SIGPOLL, corev1.SIGPROF,
	corev1.SIGPWR, corev1.SIGQUIT, corev1.SIGSEGV, corev1.SIGSTKFLT,
	corev1.SIGSTOP, corev1.SIGSYS, corev1.SIGTERM, corev1.SIGTRAP,
	corev1.SIGTSTP, corev1.SIGTTIN, corev1.SIGTTOU, corev1.SIGURG,
	corev1.SIGUSR1, corev1.SIGUSR2, corev1.SIGVTALRM, corev1.SIGWINCH,
	corev1.SIGXCPU, corev1.SIGXFSZ, corev1.SIGRTMIN, corev1.SIGRTMINPLUS1,
	corev1.SIGRTMINPLUS2, corev1.SIGRTMINPLUS3, corev1.SIGRTMINPLUS4,
	corev1.SIGRTMINPLUS5, corev1.SIGRTMINPLUS6, corev1.SIGRTMINPLUS7,
	corev1.SIGRTMINPLUS8, corev1.SIGRTMINPLUS9, corev1.SIGRTMINPLUS10,
	corev1.SIGRTMINPLUS11, corev1.SIGRTMINPLUS12, corev1.SIGRTMINPLUS13,
	corev1.SIGRTMINPLUS14, corev1.SIGRTMINPLUS15, corev1.SIGRTMAXMINUS14,
	corev1.SIGRTMAXMINUS13, corev1.SIGRTMAXMINUS12, corev1.SIGRTMAXMINUS11,
	corev1.SIGRTMAXMINUS10, corev1.SIGRTMAXMINUS9, corev1.SIGRTMAXMINUS8,
	corev1.SIGRTMAXMINUS7, corev1.SIGRTMAXMINUS6, corev1.SIGRTMAXMINUS5,
	corev1.SIGRTMAXMINUS4, corev1.SIGRTMAXMINUS3, corev1.SIGRTMAXMINUS2,
	corev1.SIGRTMAXMINUS1, corev1.SIGRTMAX,
}

var windowsStopSignalList = []corev1.Signal{corev1.SIGKILL, corev1.SIGTERM}

func init() {
	for _, s := range linuxStopSignalList {
		linuxStopSignals[s] = true
	}
	// The API server lists supported values sorted.
	sortSignals(linuxStopSignalList)
}

func sortSignals(list []corev1.Signal) {
	for i := 1; i < len(list); i++ {
		for j := i; j > 0 && list[j] < list[j-1]; j-- {
			list[j], list[j-1] = list[j-1], list[j]
		}
	}
}

// lifecycle is validateLifecycle.
func (pc *podContext) lifecycle(lc *corev1.Lifecycle, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if h := lc.PostStart; h != nil {
		errs = append(errs, pc.handler(h.Exec, h.HTTPGet, h.TCPSocket, nil, h.Sleep, fld.Child("postStart"))...)
	}
	if h := lc.PreStop; h != nil {
		errs = append(errs, pc.handler(h.Exec, h.HTTPGet, h.TCPSocket, nil, h.Sleep, fld.Child("preStop"))...)
	}
	if s := lc.StopSignal; containerStopSignals && s != nil {
		switch os := pc.spec.OS; {
		case os == nil:
			errs = append(errs, field.Forbidden(fld.Child("stopSignal"), "may not be set for containers with empty `spec.os.name`"))
		case os.Name == corev1.Windows:
			if *s != corev1.SIGKILL && *s != corev1.SIGTERM {
				errs = append(errs, field.NotSupported(fld.Child("stopSignal"), *s, windowsStopSignalList))
			}
		case os.Name == corev1.Linux:
			if !linuxStopSignals[*s] {
				errs = append(errs, field.NotSupported(fld.Child("stopSignal"), *s, linuxStopSignalList))
			}
		}
	}
	return errs
}

// resizePolicy is validateResizePolicy.
func (pc *podContext) resizePolicy(list []corev1.ContainerResizePolicy, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range list {
		p := &list[i]
		for j := 0; j < i; j++ {
			if list[j].ResourceName == p.ResourceName {
				errs = append(errs, field.Duplicate(fld.Index(i), p.ResourceName))
				break
			}
		}
		switch p.ResourceName {
		case corev1.ResourceCPU, corev1.ResourceMemory:
		case "":
			errs = append(errs, field.Required(fld, ""))
		default:
			errs = append(errs, field.NotSupported(fld, p.ResourceName, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}))
		}
		switch p.RestartPolicy {
		case corev1.NotRequired, corev1.RestartContainer:
		case "":
			errs = append(errs, field.Required(fld, ""))
		default:
			errs = append(errs, field.NotSupported(fld, p.RestartPolicy, []corev1.ResourceResizeRestartPolicy{corev1.NotRequired, corev1.RestartContainer}))
		}
		if pc.restart == corev1.RestartPolicyNever && p.RestartPolicy != corev1.NotRequired {
			errs = append(errs, field.Invalid(fld, p.RestartPolicy, "must be 'NotRequired' when pod `restartPolicy` is 'Never'"))
		}
	}
	return errs
}

var (
	supportedContainerRestartPolicies = []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure}
	supportedRestartRuleActions       = []corev1.ContainerRestartRuleAction{corev1.ContainerRestartRuleActionRestart, corev1.ContainerRestartRuleActionRestartAllContainers}
	supportedRestartRuleOperators     = []corev1.ContainerRestartRuleOnExitCodesOperator{corev1.ContainerRestartRuleOnExitCodesOpIn, corev1.ContainerRestartRuleOnExitCodesOpNotIn}
)

// restartPolicy is validateContainerRestartPolicy (ContainerRestartRules
// and RestartAllContainersOnContainerExits are on in v1.37). fld is the
// container's path.
func restartPolicy(policy *corev1.ContainerRestartPolicy, rules []corev1.ContainerRestartRule, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if policy == nil {
		if len(rules) == 0 {
			return nil
		}
		errs = append(errs, field.Required(fld.Child("restartPolicy"), "must specify restartPolicy when restart rules are used"))
	} else {
		switch *policy {
		case corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure:
		default:
			errs = append(errs, field.NotSupported(fld.Child("restartPolicy"), *policy, supportedContainerRestartPolicies))
		}
	}
	if len(rules) > 20 {
		errs = append(errs, field.TooMany(fld.Child("restartPolicyRules"), len(rules), 20))
	}
	for i := range rules {
		rule := &rules[i]
		switch rule.Action {
		case corev1.ContainerRestartRuleActionRestart, corev1.ContainerRestartRuleActionRestartAllContainers:
		default:
			errs = append(errs, field.NotSupported(fld.Child("restartPolicyRules").Index(i).Child("action"), rule.Action, supportedRestartRuleActions))
		}
		if ec := rule.ExitCodes; ec != nil {
			switch ec.Operator {
			case corev1.ContainerRestartRuleOnExitCodesOpIn, corev1.ContainerRestartRuleOnExitCodesOpNotIn:
			default:
				errs = append(errs, field.NotSupported(fld.Child("restartPolicyRules").Index(i).Child("exitCodes", "operator"), ec.Operator, supportedRestartRuleOperators))
			}
			if len(ec.Values) > 255 {
				errs = append(errs, field.TooMany(fld.Child("restartPolicyRules").Index(i).Child("exitCodes", "values"), len(ec.Values), 255))
			}
		} else {
			errs = append(errs, field.Required(fld.Child("restartPolicyRules").Index(i).Child("exitCodes"), "must be specified"))
		}
	}
	return errs
}

// roundedQuantity is q after defaulting, which rounds every quantity up to
// milli-units. q is a copy; RoundUp does not touch the pod's.
func roundedQuantity(q resource.Quantity) resource.Quantity {
	q.RoundUp(resource.Milli)
	return q
}

// resources is ValidateContainerResourceRequirements on the defaulted
// requirements: quantities rounded up to milli-units and, for app and init
// containers (defaultRequests), a missing request equal to its limit.
func (pc *podContext) resources(r *corev1.ResourceRequirements, defaultRequests bool, fld *field.Path) field.ErrorList {
	errs := requirements(r, containerResourceName, defaultRequests, fld)
	if len(r.Claims) > 0 {
		errs = append(errs, pc.resourceClaims(r.Claims, fld.Child("claims"))...)
	}
	return errs
}

// resourceNameFunc validates the name of a resource in limits or requests
// (ValidateContainerResourceName, validatePodResourceName); path is only
// called for an error.
type resourceNameFunc func(name corev1.ResourceName, path func() *field.Path) field.ErrorList

// requirements is validateResourceRequirements but for its claims, on the
// defaulted requirements: quantities rounded up to milli-units and, with
// defaultRequests, a missing request equal to its limit. nameFn checks each
// name. Each quantity's errors come in the API server's order.
func requirements(r *corev1.ResourceRequirements, nameFn resourceNameFunc, defaultRequests bool, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	limContainsCPUOrMemory, reqContainsCPUOrMemory := false, false
	limContainsHugePages, reqContainsHugePages := false, false
	for name, q := range r.Limits {
		q = roundedQuantity(q)
		path := func() *field.Path { return fld.Child("limits").Key(string(name)) }
		errs = append(errs, nameFn(name, path)...)
		errs = append(errs, quantityValue(name, q, path)...)
		if isHugePages(name) {
			limContainsHugePages = true
			errs = append(errs, hugePageValue(name, q, path)...)
		}
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
			limContainsCPUOrMemory = true
		}
	}
	request := func(name corev1.ResourceName, q resource.Quantity) {
		path := func() *field.Path { return fld.Child("requests").Key(string(name)) }
		errs = append(errs, nameFn(name, path)...)
		errs = append(errs, quantityValue(name, q, path)...)
		if limit, ok := r.Limits[name]; ok {
			limit = roundedQuantity(limit)
			if c := q.Cmp(limit); c != 0 && !overcommitAllowed(name) {
				errs = append(errs, field.Invalid(fld.Child("requests"), q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
			} else if c > 0 {
				errs = append(errs, field.Invalid(fld.Child("requests"), q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
			}
		} else if !overcommitAllowed(name) {
			errs = append(errs, field.Required(fld.Child("limits"), "Limit must be set for non overcommitable resources"))
		}
		if isHugePages(name) {
			reqContainsHugePages = true
			errs = append(errs, hugePageValue(name, q, path)...)
		}
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
			reqContainsCPUOrMemory = true
		}
	}
	for name, q := range r.Requests {
		request(name, roundedQuantity(q))
	}
	if defaultRequests {
		for name, q := range r.Limits {
			if _, ok := r.Requests[name]; !ok {
				request(name, roundedQuantity(q))
			}
		}
	}
	if !limContainsCPUOrMemory && !reqContainsCPUOrMemory && (reqContainsHugePages || limContainsHugePages) {
		errs = append(errs, field.Forbidden(fld, "HugePages require cpu or memory"))
	}
	return errs
}

// quantityValue is ValidateResourceQuantityValue: q is not negative, and
// whole for a resource counted in units.
func quantityValue(name corev1.ResourceName, q resource.Quantity, path func() *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.Sign() < 0 {
		errs = append(errs, nonnegativeQuantity(q, path())...)
	}
	if integerResource(name) && q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(path(), q, isNotIntegerErrorMsg))
	}
	return errs
}

// hugePageValue is validateResourceQuantityHugePageValue (indivisible
// values are allowed only in an update of a pod that has them).
func hugePageValue(name corev1.ResourceName, q resource.Quantity, path func() *field.Path) field.ErrorList {
	if !hugePagesDivisible(name, q) {
		return field.ErrorList{field.Invalid(path(), q.String(), fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), name))}
	}
	return nil
}

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// hugePagesDivisible is IsHugePageResourceValueDivisible: q is a whole
// number of pages of the size name gives.
func hugePagesDivisible(name corev1.ResourceName, q resource.Quantity) bool {
	size, err := resource.ParseQuantity(strings.TrimPrefix(string(name), corev1.ResourceHugePagesPrefix))
	if err != nil || size.Sign() <= 0 || size.MilliValue()%1000 != 0 {
		return false
	}
	return q.Value()%size.Value() == 0
}

// nativeResource is IsNativeResource: unprefixed or in kubernetes.io/.
func nativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// overcommitAllowed is IsOvercommitAllowed.
func overcommitAllowed(name corev1.ResourceName) bool {
	return nativeResource(name) && !isHugePages(name)
}

// extendedResource is IsExtendedResourceName.
func extendedResource(name corev1.ResourceName) bool {
	if nativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// integerResource is IsIntegerResourceName.
func integerResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
		corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
		corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers:
		return true
	}
	return extendedResource(name)
}

// standardResource is IsStandardResourceName.
func standardResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
		corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
		corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
		corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
		corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
		corev1.ResourceStorage, corev1.ResourceRequestsStorage, corev1.ResourceServicesNodePorts,
		corev1.ResourceServicesLoadBalancers:
		return true
	}
	return isHugePages(name) || strings.HasPrefix(string(name), corev1.ResourceRequestsHugePagesPrefix)
}

// resourceName is validateResourceName: a qualified name, and a standard
// resource if unprefixed.
func resourceName(name corev1.ResourceName, path func() *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(name)) {
		errs = append(errs, field.Invalid(path(), name, msg))
	}
	if len(errs) == 0 && !strings.Contains(string(name), "/") && !standardResource(name) {
		errs = append(errs, field.Invalid(path(), name, "must be a standard resource type or fully qualified"))
	}
	return errs
}

// containerResourceName is ValidateContainerResourceName.
func containerResourceName(name corev1.ResourceName, path func() *field.Path) field.ErrorList {
	errs := resourceName(name, path)
	switch {
	case !strings.Contains(string(name), "/"):
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourceEphemeralStorage && !isHugePages(name) {
			errs = append(errs, field.Invalid(path(), name, "must be a standard resource for containers"))
		}
	case !nativeResource(name) && !extendedResource(name):
		errs = append(errs, field.Invalid(path(), name, "doesn't follow extended resource name standard"))
	}
	return errs
}

// resourceClaims is validateResourceClaimNames: each claim names one of
// spec.resourceClaims, once (a whole claim or each of its requests).
func (pc *podContext) resourceClaims(claims []corev1.ResourceClaim, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i := range claims {
		name := claims[i].Name
		if name == "" {
			errs = append(errs, field.Required(fld.Index(i), ""))
			continue
		}
		if names[name] {
			errs = append(errs, field.Duplicate(fld.Index(i), name))
		} else {
			key := name
			if req := claims[i].Request; req != "" {
				errs = append(errs, dnsLabel(req, fld.Index(i).Child("request"))...)
				key += "/" + req
			}
			if names[key] {
				errs = append(errs, field.Duplicate(fld.Index(i), key))
			} else if claims[i].Request == "" {
				for k := range names {
					if before, _, ok := strings.Cut(k, "/"); ok && before == name {
						errs = append(errs, field.Duplicate(fld.Index(i), name))
					}
				}
			}
			names[key] = true
		}
		if !pc.hasPodClaim(name) {
			e := field.NotFound(fld.Index(i), name)
			e.Detail = "must be one of the names in pod.spec.resourceClaims"
			if list := pc.podClaimNames(); len(list) == 0 {
				e.Detail += " which is empty"
			} else {
				e.Detail += ": " + strings.Join(list, ", ")
			}
			errs = append(errs, e)
		}
	}
	return errs
}

func (pc *podContext) hasPodClaim(name string) bool {
	for i := range pc.spec.ResourceClaims {
		if pc.spec.ResourceClaims[i].Name == name {
			return true
		}
	}
	return false
}

// podClaimNames is spec.resourceClaims' names, sorted and distinct.
func (pc *podContext) podClaimNames() []string {
	var list []string
	for i := range pc.spec.ResourceClaims {
		list = append(list, pc.spec.ResourceClaims[i].Name)
	}
	return sortedUnique(list)
}

func sortedUnique(list []string) []string {
	for i := 1; i < len(list); i++ {
		for j := i; j > 0 && list[j] < list[j-1]; j-- {
			list[j], list[j-1] = list[j-1], list[j]
		}
	}
	out := list[:0]
	for i, s := range list {
		if i == 0 || s != list[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// securityContext is ValidateSecurityContext (privileged allowed: see
// above).
func (pc *podContext) securityContext(sc *corev1.SecurityContext, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if u := sc.RunAsUser; u != nil {
		for _, msg := range validation.IsValidUserID(*u) {
			errs = append(errs, field.Invalid(fld.Child("runAsUser"), *u, msg))
		}
	}
	if g := sc.RunAsGroup; g != nil {
		for _, msg := range validation.IsValidGroupID(*g) {
			errs = append(errs, field.Invalid(fld.Child("runAsGroup"), *g, msg))
		}
	}
	if pm := sc.ProcMount; pm != nil {
		if *pm != corev1.DefaultProcMount && *pm != corev1.UnmaskedProcMount {
			errs = append(errs, field.NotSupported(fld.Child("procMount"), *pm, []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}))
		}
		if pc.hostUsers && *pm == corev1.UnmaskedProcMount {
			errs = append(errs, field.Invalid(fld.Child("procMount"), *pm, "`hostUsers` must be false to use `Unmasked`"))
		}
	}
	if sc.SeccompProfile != nil {
		errs = append(errs, SeccompProfile(sc.SeccompProfile, fld.Child("seccompProfile"))...)
	}
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(fld, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if c == "CAP_SYS_ADMIN" {
					errs = append(errs, field.Invalid(fld, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	if sc.WindowsOptions != nil {
		errs = append(errs, windowsOptions(sc.WindowsOptions, fld.Child("windowsOptions"))...)
	}
	if sc.AppArmorProfile != nil {
		errs = append(errs, AppArmorProfile(sc.AppArmorProfile, fld.Child("appArmorProfile"))...)
	}
	return errs
}

const (
	maxGMSACredentialSpecLengthInKiB = 64
	maxGMSACredentialSpecLength      = maxGMSACredentialSpecLengthInKiB * 1024
	maxRunAsUserNameDomainLength     = 256
	maxRunAsUserNameUserLength       = 104
)

// The API server's patterns for a Windows user's domain; compiled once and
// used only for a set windowsOptions.runAsUserName with a domain.
var (
	validNetBiosRegex              = regexp.MustCompile(`^[^\\/:\*\?"<>|\.][^\\/:\*\?"<>|]{0,14}$`)
	validWindowsUserDomainDNSRegex = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$`)
)

// windowsOptions is validateWindowsSecurityContextOptions.
func windowsOptions(w *corev1.WindowsSecurityContextOptions, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if n := w.GMSACredentialSpecName; n != nil {
		for _, msg := range subdomainMsgs(*n) {
			errs = append(errs, field.Invalid(fld.Child("gmsaCredentialSpecName"), n, msg))
		}
	}
	if s := w.GMSACredentialSpec; s != nil {
		if l := len(*s); l == 0 {
			errs = append(errs, field.Invalid(fld.Child("gmsaCredentialSpec"), s, "gmsaCredentialSpec cannot be an empty string"))
		} else if l > maxGMSACredentialSpecLength {
			errs = append(errs, field.Invalid(fld.Child("gmsaCredentialSpec"), s, fmt.Sprintf("gmsaCredentialSpec size must be under %d KiB", maxGMSACredentialSpecLengthInKiB)))
		}
	}
	if u := w.RunAsUserName; u != nil {
		errs = append(errs, runAsUserName(u, fld.Child("runAsUserName"))...)
	}
	return errs
}

// runAsUserName is validateWindowsSecurityContextOptions' rules for a
// Windows user name, DOMAIN\USER or USER.
func runAsUserName(u *string, fld *field.Path) field.ErrorList {
	name := *u
	if name == "" {
		return field.ErrorList{field.Invalid(fld, u, "runAsUserName cannot be an empty string")}
	}
	if strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return field.ErrorList{field.Invalid(fld, u, "runAsUserName cannot contain control characters")}
	}
	parts := strings.Split(name, "\\")
	if len(parts) > 2 {
		return field.ErrorList{field.Invalid(fld, u, "runAsUserName cannot contain more than one backslash")}
	}
	var errs field.ErrorList
	domain, user, hasDomain := "", parts[0], len(parts) == 2
	if hasDomain {
		domain, user = parts[0], parts[1]
	}
	if len(domain) >= maxRunAsUserNameDomainLength {
		errs = append(errs, field.Invalid(fld, u, fmt.Sprintf("runAsUserName's Domain length must be under %d characters", maxRunAsUserNameDomainLength)))
	}
	if hasDomain && !validNetBiosRegex.MatchString(domain) && !validWindowsUserDomainDNSRegex.MatchString(domain) {
		errs = append(errs, field.Invalid(fld, u, "runAsUserName's Domain doesn't match the NetBios nor the DNS format"))
	}
	if l := len(user); l == 0 {
		errs = append(errs, field.Invalid(fld, u, "runAsUserName's User cannot be empty"))
	} else if l > maxRunAsUserNameUserLength {
		errs = append(errs, field.Invalid(fld, u, fmt.Sprintf("runAsUserName's User length must not be longer than %d characters", maxRunAsUserNameUserLength)))
	}
	if user != "" && strings.Trim(user, ". ") == "" {
		errs = append(errs, field.Invalid(fld, u, `runAsUserName's User cannot contain only periods or spaces`))
	}
	if strings.ContainsAny(user, `"/\:;|=,+*?<>@[]`) {
		errs = append(errs, field.Invalid(fld, u, `runAsUserName's User cannot contain the following characters: "/\:;|=,+*?<>@[]`))
	}
	return errs
}
