package validation

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/node/util/sysctl"
)

// podSpec is the API server's ValidatePodSpec and the pod-only checks of
// validatePodMetadataAndSpec, on the covered fields.
func podSpec(spec *corev1.PodSpec, meta *metav1.ObjectMeta, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	vols, vErrs := volumes(spec, meta, fld)
	errs = append(errs, vErrs...)
	errs = append(errs, containers(spec, vols, fld)...)
	errs = append(errs, specFields(spec, fld)...)
	errs = append(errs, podResources(spec, fld)...)
	return errs
}

// specFields checks the pod-level fields of spec (ValidatePodSpec's own
// checks and validatePodMetadataAndSpec's grace period), not the volumes'
// nor the containers'.
func specFields(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	// terminationGracePeriodSeconds: nil is defaulted to 30 and, since
	// v1.37, a negative value to 1 (SetDefaults_Pod), so the API server never
	// refuses one; podsync's EffectiveGracePeriod reads a negative grace as
	// 1 too.
	switch spec.RestartPolicy {
	case "", corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever: // "" is defaulted to Always
	default:
		errs = append(errs, field.NotSupported(fld.Child("restartPolicy"), spec.RestartPolicy,
			[]corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	}
	switch spec.DNSPolicy {
	case "", corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone: // "" is defaulted to ClusterFirst
	default:
		errs = append(errs, field.NotSupported(fld.Child("dnsPolicy"), spec.DNSPolicy,
			[]corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone}))
	}
	errs = append(errs, metav1validation.ValidateLabels(spec.NodeSelector, fld.Child("nodeSelector"))...)
	errs = append(errs, podSecurityContext(spec, fld)...)
	if spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace && spec.HostPID {
		errs = append(errs, field.Invalid(fld.Child("shareProcessNamespace"), *spec.ShareProcessNamespace, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	// imagePullSecrets: the API server refuses a reference with more than
	// a name, which the v1 type cannot hold.
	errs = append(errs, dnsConfig(spec, fld.Child("dnsConfig"))...)
	for i, g := range spec.ReadinessGates {
		errs = append(errs, qualifiedName(string(g.ConditionType), fld.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	errs = append(errs, hostUsers(spec, fld)...)
	errs = append(errs, hostnameOverride(spec, fld)...)
	if spec.ServiceAccountName != "" {
		for _, msg := range apivalidation.ValidateServiceAccountName(spec.ServiceAccountName, false) {
			errs = append(errs, field.Invalid(fld.Child("serviceAccountName"), spec.ServiceAccountName, msg))
		}
	}
	//nolint:staticcheck // SA1019: the API server keeps the deprecated field in sync
	if sa := spec.DeprecatedServiceAccount; sa != "" && sa != spec.ServiceAccountName {
		// An empty serviceAccount is defaulted from serviceAccountName
		// (and the other way round), so only two different names are wrong.
		errs = append(errs, field.Invalid(fld.Child("deprecatedServiceAccount"), sa, fmt.Sprintf("must be the same as serviceAccountName: %q", spec.ServiceAccountName)))
	}
	if spec.NodeName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(spec.NodeName, false) {
			errs = append(errs, field.Invalid(fld.Child("nodeName"), spec.NodeName, msg))
		}
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		errs = append(errs, field.Invalid(fld.Child("activeDeadlineSeconds"), *d, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	if spec.Hostname != "" {
		errs = append(errs, dnsLabel(spec.Hostname, fld.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		errs = append(errs, dnsLabel(spec.Subdomain, fld.Child("subdomain"))...)
	}
	for i, a := range spec.HostAliases {
		p := fld.Child("hostAliases").Index(i)
		errs = append(errs, validation.IsValidIPForLegacyField(p.Child("ip"), a.IP, strictIPs, nil)...)
		for j, h := range a.Hostnames {
			errs = append(errs, dnsSubdomain(h, p.Child("hostnames").Index(j))...)
		}
	}
	if spec.PriorityClassName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(spec.PriorityClassName, false) {
			errs = append(errs, field.Invalid(fld.Child("priorityClassName"), spec.PriorityClassName, msg))
		}
	}
	if spec.RuntimeClassName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*spec.RuntimeClassName, false) {
			errs = append(errs, field.Invalid(fld.Child("runtimeClassName"), *spec.RuntimeClassName, msg))
		}
	}
	if p := spec.PreemptionPolicy; p != nil {
		switch *p {
		case corev1.PreemptLowerPriority, corev1.PreemptNever:
		case "":
			errs = append(errs, field.Required(fld.Child("preemptionPolicy"), ""))
		default:
			errs = append(errs, field.NotSupported(fld.Child("preemptionPolicy"), *p, []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}))
		}
	}
	errs = append(errs, windowsHostProcess(spec, fld)...)
	errs = append(errs, podOS(spec, fld)...)
	return errs
}

// windowsHostProcess is the API server's validateWindowsHostProcessPod,
// which applies to every pod (spec.os unset too): a hostProcess container
// (its own setting, or the pod's inherited) makes every container one and
// needs hostNetwork; pod and container values must agree. Kubelet on Linux
// ignores windowsOptions otherwise (see criconfig). The API server's
// "disallowed by cluster policy" without --allow-privileged is not
// applied, as for privileged containers (see containers.go).
func windowsHostProcess(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	var podHP *bool
	if sc := spec.SecurityContext; sc != nil && sc.WindowsOptions != nil {
		podHP = sc.WindowsOptions.HostProcess
	}
	count, hostProcess := 0, 0
	visit := func(c *corev1.Container, p *field.Path) {
		count++
		var hp *bool
		if c.SecurityContext != nil && c.SecurityContext.WindowsOptions != nil {
			hp = c.SecurityContext.WindowsOptions.HostProcess
		}
		if podHP != nil && hp != nil && *podHP != *hp {
			errs = append(errs, field.Invalid(p.Child("securityContext", "windowsOptions", "hostProcess"), *hp,
				fmt.Sprintf("pod hostProcess value must be identical if both are specified, was %v", *podHP)))
		}
		if (hp != nil && *hp) || (hp == nil && podHP != nil && *podHP) {
			hostProcess++
		}
	}
	for i := range spec.InitContainers {
		visit(&spec.InitContainers[i], fld.Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		visit(&spec.Containers[i], fld.Child("containers").Index(i))
	}
	for i := range spec.EphemeralContainers {
		c := corev1.Container(spec.EphemeralContainers[i].EphemeralContainerCommon)
		visit(&c, fld.Child("ephemeralContainers").Index(i))
	}
	if hostProcess > 0 {
		if hostProcess != count {
			errs = append(errs, field.Invalid(fld, "", "If pod contains any hostProcess containers then all containers must be HostProcess containers"))
		}
		if !spec.HostNetwork {
			errs = append(errs, field.Invalid(fld.Child("hostNetwork"), spec.HostNetwork, "hostNetwork must be true if pod contains any hostProcess containers"))
		}
	}
	return errs
}

// strictIPs: StrictIPCIDRValidation, on by default since v1.36, refuses IPs
// with leading zeros and IPv4-mapped IPv6 in new objects.
const strictIPs = true

// sysctlName is the API server's sysctl name pattern (segments of
// [a-z0-9]([-_a-z0-9]*[a-z0-9])? joined by '.' or '/'), at most 253
// characters.
var sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

// podSecurityContext is validatePodSpecSecurityContext with its sysctls.
func podSecurityContext(spec *corev1.PodSpec, specPath *field.Path) field.ErrorList {
	sc := spec.SecurityContext
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	fld := specPath.Child("securityContext")
	if sc.FSGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.FSGroup) {
			errs = append(errs, field.Invalid(fld.Child("fsGroup"), *sc.FSGroup, msg))
		}
	}
	if sc.RunAsUser != nil {
		for _, msg := range validation.IsValidUserID(*sc.RunAsUser) {
			errs = append(errs, field.Invalid(fld.Child("runAsUser"), *sc.RunAsUser, msg))
		}
	}
	if sc.RunAsGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.RunAsGroup) {
			errs = append(errs, field.Invalid(fld.Child("runAsGroup"), *sc.RunAsGroup, msg))
		}
	}
	for i, gid := range sc.SupplementalGroups {
		for _, msg := range validation.IsValidGroupID(gid) {
			errs = append(errs, field.Invalid(fld.Child("supplementalGroups").Index(i), gid, msg))
		}
	}
	seen := make(map[string]bool, len(sc.Sysctls))
	for i, s := range sc.Sysctls {
		p := fld.Child("sysctls").Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p, ""))
		case len(s.Name) > 253 || !sysctlName.MatchString(s.Name):
			errs = append(errs, field.Invalid(p, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", 253, sysctlName)))
		case seen[s.Name]:
			errs = append(errs, field.Duplicate(p, s.Name))
		}
		seen[s.Name] = true
		switch ns, _, _ := sysctl.GetNamespace(s.Name); {
		case spec.HostNetwork && ns == sysctl.NetNamespace:
			errs = append(errs, field.Invalid(p, s.Name, "may not be specified when 'hostNetwork' is true"))
		case spec.HostIPC && ns == sysctl.IPCNamespace:
			errs = append(errs, field.Invalid(p, s.Name, "may not be specified when 'hostIPC' is true"))
		}
	}
	if p := sc.FSGroupChangePolicy; p != nil && *p != corev1.FSGroupChangeOnRootMismatch && *p != corev1.FSGroupChangeAlways {
		errs = append(errs, field.NotSupported(fld.Child("fsGroupChangePolicy"), *p, []corev1.PodFSGroupChangePolicy{corev1.FSGroupChangeAlways, corev1.FSGroupChangeOnRootMismatch}))
	}
	errs = append(errs, SeccompProfile(sc.SeccompProfile, fld.Child("seccompProfile"))...)
	errs = append(errs, AppArmorProfile(sc.AppArmorProfile, fld.Child("appArmorProfile"))...)
	if p := sc.SupplementalGroupsPolicy; p != nil && *p != corev1.SupplementalGroupsPolicyMerge && *p != corev1.SupplementalGroupsPolicyStrict {
		errs = append(errs, field.NotSupported(fld.Child("supplementalGroupsPolicy"), *p, []corev1.SupplementalGroupsPolicy{corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict}))
	}
	if p := sc.SELinuxChangePolicy; p != nil && *p != corev1.SELinuxChangePolicyRecursive && *p != corev1.SELinuxChangePolicyMountOption {
		errs = append(errs, field.NotSupported(fld.Child("seLinuxChangePolicy"), *p, []corev1.PodSELinuxChangePolicy{corev1.SELinuxChangePolicyMountOption, corev1.SELinuxChangePolicyRecursive}))
	}
	return errs
}

// SeccompProfile is the API server's validateSeccompProfileField, for the
// pod's and each container's seccompProfile.
func SeccompProfile(sp *corev1.SeccompProfile, fld *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	switch sp.Type {
	case corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined:
	case "":
		errs = append(errs, field.Required(fld.Child("type"), "type is required when seccompProfile is set"))
	default:
		errs = append(errs, field.NotSupported(fld.Child("type"), sp.Type, []corev1.SeccompProfileType{corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined}))
	}
	switch {
	case sp.Type == corev1.SeccompProfileTypeLocalhost && sp.LocalhostProfile == nil:
		errs = append(errs, field.Required(fld.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
	case sp.Type == corev1.SeccompProfileTypeLocalhost:
		errs = append(errs, localDescendingPath(*sp.LocalhostProfile, fld.Child("localhostProfile"))...)
	case sp.LocalhostProfile != nil:
		errs = append(errs, field.Invalid(fld.Child("localhostProfile"), sp, "can only be set when seccomp type is Localhost"))
	}
	return errs
}

// AppArmorProfile is the API server's ValidateAppArmorProfileField, for the
// pod's and each container's appArmorProfile.
func AppArmorProfile(p *corev1.AppArmorProfile, fld *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	switch p.Type {
	case corev1.AppArmorProfileTypeLocalhost:
		const maxLocalhostProfileLength = 4095 // PATH_MAX - 1
		switch lp := p.LocalhostProfile; {
		case lp == nil:
			errs = append(errs, field.Required(fld.Child("localhostProfile"), "must be set when AppArmor type is Localhost"))
		case strings.TrimSpace(*lp) != *lp:
			errs = append(errs, field.Invalid(fld.Child("localhostProfile"), *lp, "must not be padded with whitespace"))
		case *lp == "":
			errs = append(errs, field.Required(fld.Child("localhostProfile"), "must be set when AppArmor type is Localhost"))
		}
		if lp := p.LocalhostProfile; lp != nil && len(*lp) > maxLocalhostProfileLength {
			errs = append(errs, field.TooLong(fld.Child("localhostProfile"), "", maxLocalhostProfileLength))
		}
	case corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined:
		if p.LocalhostProfile != nil {
			errs = append(errs, field.Invalid(fld.Child("localhostProfile"), p.LocalhostProfile, "can only be set when AppArmor type is Localhost"))
		}
	case "":
		errs = append(errs, field.Required(fld.Child("type"), "type is required when appArmorProfile is set"))
	default:
		errs = append(errs, field.NotSupported(fld.Child("type"), p.Type, []corev1.AppArmorProfileType{corev1.AppArmorProfileTypeLocalhost, corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined}))
	}
	return errs
}

// The API server's limits on dnsConfig.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

// dnsConfig is validatePodDNSConfig.
func dnsConfig(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	c := spec.DNSConfig
	if spec.DNSPolicy == corev1.DNSNone {
		if c == nil {
			return field.ErrorList{field.Required(fld, "must provide `dnsConfig` when `dnsPolicy` is None")}
		}
		if len(c.Nameservers) == 0 {
			return field.ErrorList{field.Required(fld.Child("nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None")}
		}
	}
	if c == nil {
		return nil
	}
	var errs field.ErrorList
	if len(c.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(fld.Child("nameservers"), c.Nameservers, fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
	}
	for i, ns := range c.Nameservers {
		errs = append(errs, validation.IsValidIPForLegacyField(fld.Child("nameservers").Index(i), ns, strictIPs, nil)...)
	}
	if len(c.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(fld.Child("searches"), c.Searches, fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths)))
	}
	if len(strings.Join(c.Searches, " ")) > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(fld.Child("searches"), c.Searches, fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, s := range c.Searches {
		if s == "." {
			continue
		}
		s = strings.TrimSuffix(s, ".")
		for _, msg := range validation.IsDNS1123SubdomainWithUnderscore(s) {
			errs = append(errs, field.Invalid(fld.Child("searches").Index(i), s, msg))
		}
	}
	for i, o := range c.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(fld.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}

// hostUsers is validateHostUsers: a pod in a user namespace shares no other
// host namespace and has no volume devices.
func hostUsers(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	if spec.HostUsers == nil || *spec.HostUsers {
		return nil
	}
	var errs field.ErrorList
	// UserNamespacesHostNetworkSupport is off by default in v1.37.
	if spec.HostNetwork {
		errs = append(errs, field.Forbidden(fld.Child("hostNetwork"), "when `hostUsers` is false"))
	}
	if spec.HostPID {
		errs = append(errs, field.Forbidden(fld.Child("HostPID"), "when `hostUsers` is false"))
	}
	if spec.HostIPC {
		errs = append(errs, field.Forbidden(fld.Child("HostIPC"), "when `hostUsers` is false"))
	}
	devices := func(p *field.Path, cs []corev1.Container) {
		for i := range cs {
			if len(cs[i].VolumeDevices) > 0 {
				errs = append(errs, field.Forbidden(p.Index(i).Child("volumeDevices"), "when `hostUsers` is false"))
			}
		}
	}
	devices(fld.Child("initContainers"), spec.InitContainers)
	devices(fld.Child("containers"), spec.Containers)
	for i := range spec.EphemeralContainers {
		if len(spec.EphemeralContainers[i].VolumeDevices) > 0 {
			errs = append(errs, field.Forbidden(fld.Child("ephemeralContainers").Index(i).Child("volumeDevices"), "when `hostUsers` is false"))
		}
	}
	return errs
}

// hostnameOverride is validatePodHostName.
func hostnameOverride(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	o := spec.HostnameOverride
	if o == nil {
		return nil
	}
	var errs field.ErrorList
	p := fld.Child("hostnameOverride")
	if spec.SetHostnameAsFQDN != nil && *spec.SetHostnameAsFQDN {
		errs = append(errs, field.Forbidden(p, "may not be specified when setHostnameAsFQDN is true"))
	}
	if spec.HostNetwork {
		errs = append(errs, field.Forbidden(p, "may not be specified when hostNetwork is true"))
	}
	if len(*o) > 64 {
		errs = append(errs, field.TooLong(p, "", 64))
	}
	return append(errs, dnsSubdomain(*o, p)...)
}

// podOS is validateOS and validateLinux. A Windows pod is refused as a
// whole: podstart runs Linux containers, and the API server's Windows rules
// (validateWindows) only say what such a pod may not set.
func podOS(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	if spec.OS == nil {
		return nil
	}
	p := fld.Child("os")
	switch spec.OS.Name {
	case "":
		return field.ErrorList{field.Required(p.Child("name"), "")}
	case corev1.Linux:
	case corev1.Windows:
		return nil // criconfig refuses Windows pods by name
	default:
		return field.ErrorList{field.NotSupported(p, spec.OS.Name, []corev1.OSName{corev1.Linux, corev1.Windows})}
	}
	var errs field.ErrorList
	if sc := spec.SecurityContext; sc != nil && sc.WindowsOptions != nil {
		errs = append(errs, field.Forbidden(fld.Child("securityContext").Child("windowsOptions"), "windows options cannot be set for a linux pod"))
	}
	visit := func(p *field.Path, i int, c *corev1.Container) {
		if c.SecurityContext != nil && c.SecurityContext.WindowsOptions != nil {
			errs = append(errs, field.Forbidden(p.Index(i).Child("securityContext").Child("windowsOptions"), "windows options cannot be set for a linux pod"))
		}
	}
	for i := range spec.InitContainers {
		visit(fld.Child("initContainers"), i, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		visit(fld.Child("containers"), i, &spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		c := corev1.Container(spec.EphemeralContainers[i].EphemeralContainerCommon)
		visit(fld.Child("ephemeralContainers"), i, &c)
	}
	return errs
}
