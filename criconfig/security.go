package criconfig

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ImageUser is the user an image runs as, from the runtime's ImageStatus:
// a numeric UID, or a user name the runtime could not resolve to one.
// Neither set means root, as kubelet reads it.
type ImageUser struct {
	UID      *int64
	Username string
}

// ImageUserFromStatus reads the user out of an ImageStatus answer, as
// kubelet's getImageUser does.
func ImageUserFromStatus(img *runtimeapi.Image) ImageUser {
	if img != nil {
		if img.Uid != nil {
			uid := img.Uid.Value
			return ImageUser{UID: &uid}
		}
		if img.Username != "" {
			return ImageUser{Username: img.Username}
		}
	}
	return ImageUser{UID: new(int64)}
}

// DefaultMaskedPaths and DefaultReadonlyPaths are the /proc and /sys paths
// kubelet masks or makes read-only in every container whose procMount is
// not Unmasked (pkg/securitycontext, kept in sync with moby).
var (
	DefaultMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
		"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	DefaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// EffectiveSecurityContext is kubelet's DetermineEffectiveSecurityContext:
// the pod's security context with the container's settings laid over it.
// It never returns nil.
func EffectiveSecurityContext(pod *corev1.Pod, c *corev1.Container) *corev1.SecurityContext {
	var eff *corev1.SecurityContext
	if psc := pod.Spec.SecurityContext; psc != nil {
		eff = &corev1.SecurityContext{
			SELinuxOptions: copyPtr(psc.SELinuxOptions),
			WindowsOptions: copyPtr(psc.WindowsOptions),
			RunAsUser:      copyPtr(psc.RunAsUser),
			RunAsGroup:     copyPtr(psc.RunAsGroup),
			RunAsNonRoot:   copyPtr(psc.RunAsNonRoot),
		}
	}
	csc := c.SecurityContext
	switch {
	case eff == nil && csc == nil:
		return &corev1.SecurityContext{}
	case csc == nil:
		return eff
	case eff == nil:
		return csc.DeepCopy()
	}
	if csc.SELinuxOptions != nil {
		eff.SELinuxOptions = copyPtr(csc.SELinuxOptions)
	}
	if w := csc.WindowsOptions; w != nil {
		if eff.WindowsOptions == nil {
			eff.WindowsOptions = &corev1.WindowsSecurityContextOptions{}
		}
		if w.GMSACredentialSpecName != nil || w.GMSACredentialSpec != nil {
			eff.WindowsOptions.GMSACredentialSpecName = w.GMSACredentialSpecName
			eff.WindowsOptions.GMSACredentialSpec = w.GMSACredentialSpec
		}
		if w.RunAsUserName != nil {
			eff.WindowsOptions.RunAsUserName = w.RunAsUserName
		}
		if w.HostProcess != nil {
			eff.WindowsOptions.HostProcess = w.HostProcess
		}
	}
	if csc.Capabilities != nil {
		eff.Capabilities = csc.Capabilities.DeepCopy()
	}
	override(&eff.Privileged, csc.Privileged)
	override(&eff.RunAsUser, csc.RunAsUser)
	override(&eff.RunAsGroup, csc.RunAsGroup)
	override(&eff.RunAsNonRoot, csc.RunAsNonRoot)
	override(&eff.ReadOnlyRootFilesystem, csc.ReadOnlyRootFilesystem)
	override(&eff.AllowPrivilegeEscalation, csc.AllowPrivilegeEscalation)
	override(&eff.ProcMount, csc.ProcMount)
	return eff
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func override[T any](dst **T, src *T) {
	if src != nil {
		*dst = copyPtr(src)
	}
}

// VerifyRunAsNonRoot is kubelet's verifyRunAsNonRoot: with runAsNonRoot
// set, a container must not run as UID 0, whether its runAsUser or its
// image says so. The messages are kubelet's.
func VerifyRunAsNonRoot(pod *corev1.Pod, c *corev1.Container, user ImageUser) error {
	eff := EffectiveSecurityContext(pod, c)
	if eff.RunAsNonRoot == nil || !*eff.RunAsNonRoot {
		return nil
	}
	if eff.RunAsUser != nil {
		if *eff.RunAsUser == 0 {
			return classErrorf(ErrRunAsNonRoot, "container's runAsUser breaks non-root policy (pod: %q, container: %s)", podDesc(pod), c.Name)
		}
		return nil
	}
	switch {
	case user.UID == nil && user.Username != "":
		return classErrorf(ErrRunAsNonRoot, "container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", user.Username, podDesc(pod), c.Name)
	case user.UID != nil && *user.UID == 0:
		return classErrorf(ErrRunAsNonRoot, "container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podDesc(pod), c.Name)
	case user.UID != nil && (*user.UID < 0 || *user.UID > math.MaxInt32):
		return classErrorf(ErrRunAsNonRoot, "container has runAsNonRoot and image has an invalid user id (%d). (Must be 1-(%d)): must be between 0 and %d, inclusive (pod: %q, container: %s)",
			*user.UID, math.MaxInt32, math.MaxInt32, podDesc(pod), c.Name)
	}
	return nil
}

// podDesc is kubelet's format.Pod: name_namespace(uid).
func podDesc(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// SeccompProfile is kubelet's getSeccompProfile: the container's field,
// else the pod's, else RuntimeDefault with the node's seccompDefault, else
// Unconfined. Localhost profiles are paths under the node's profile root.
func SeccompProfile(pod *corev1.Pod, c *corev1.Container, node Node) (*runtimeapi.SecurityProfile, error) {
	var p *corev1.SeccompProfile
	if c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil {
		p = c.SecurityContext.SeccompProfile
	} else if pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.SeccompProfile != nil {
		p = pod.Spec.SecurityContext.SeccompProfile
	}
	switch {
	case p == nil && node.SeccompDefault, p != nil && p.Type == corev1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case p != nil && p.Type == corev1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			//lint:ignore ST1005 kubelet's message, word for word
			return nil, errors.New("localhostProfile must be set if seccompProfile type is Localhost.")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost,
			LocalhostRef: filepath.Join(node.seccompRoot(), *p.LocalhostProfile)}, nil
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
}

// AppArmor annotation keys and values of the beta API that kubelet still
// reads and sends.
const (
	appArmorAnnotationPrefix = "container.apparmor.security.beta.kubernetes.io/"
	appArmorRuntimeDefault   = "runtime/default"
	appArmorUnconfined       = "unconfined"
	appArmorLocalhostPrefix  = "localhost/"
)

// AppArmorProfile is apparmor.GetProfile: the container's field, then the
// pod's beta annotation for the container, then the pod's field.
func AppArmorProfile(pod *corev1.Pod, c *corev1.Container) *corev1.AppArmorProfile {
	if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
		return c.SecurityContext.AppArmorProfile
	}
	if p := appArmorAnnotation(pod, c); p != nil {
		return p
	}
	if pod.Spec.SecurityContext != nil {
		return pod.Spec.SecurityContext.AppArmorProfile
	}
	return nil
}

// appArmorAnnotation is the container's deprecated AppArmor annotation;
// the key is built only for a pod with annotations (this runs for every
// container on every sync).
func appArmorAnnotation(pod *corev1.Pod, c *corev1.Container) *corev1.AppArmorProfile {
	if len(pod.Annotations) == 0 {
		return nil
	}
	v, ok := pod.Annotations[appArmorAnnotationPrefix+c.Name]
	switch {
	case !ok:
		return nil
	case v == appArmorRuntimeDefault:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
	case v == appArmorUnconfined:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	case strings.HasPrefix(v, appArmorLocalhostPrefix):
		name := strings.TrimPrefix(v, appArmorLocalhostPrefix)
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
	}
	return nil
}

// appArmor is kubelet's getAppArmorProfile plus its admission check: a
// profile other than Unconfined on a node without AppArmor is refused, as
// kubelet refuses the pod ("Cannot enforce AppArmor: AppArmor is not
// enabled on the host").
func appArmor(pod *corev1.Pod, c *corev1.Container, node Node) (*runtimeapi.SecurityProfile, string, error) {
	p := AppArmorProfile(pod, c)
	if p == nil {
		return nil, "", nil
	}
	if p.Type != corev1.AppArmorProfileTypeUnconfined && !node.AppArmorEnabled {
		return nil, "", classErrorf(ErrUnsupported, "%s: Cannot enforce AppArmor: AppArmor is not enabled on the host", fieldOf(pod, c, "appArmorProfile"))
	}
	switch p.Type {
	case corev1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, appArmorRuntimeDefault, nil
	case corev1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, appArmorUnconfined, nil
	case corev1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil {
			return nil, "", errors.New("missing localhost apparmor profile name")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *p.LocalhostProfile},
			appArmorLocalhostPrefix + *p.LocalhostProfile, nil
	}
	return nil, "", fmt.Errorf("unknown apparmor profile type: %q", p.Type)
}

// fieldOf names where a container's setting lives, for refusals.
func fieldOf(pod *corev1.Pod, c *corev1.Container, field string) string {
	if c.SecurityContext != nil {
		return fmt.Sprintf("container %q securityContext.%s", c.Name, field)
	}
	return "spec.securityContext." + field
}

// NamespaceOptions is kubelet's NamespacesForPod: host network, PID and
// IPC namespaces, shareProcessNamespace, and the user namespace (the
// node's unless hostUsers is false).
func NamespaceOptions(pod *corev1.Pod, node Node) (*runtimeapi.NamespaceOption, error) {
	ns := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	if pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers {
		// Kubelet's GetOrCreateUserNamespaceMappings: never the node's
		// user namespace instead.
		if !node.UserNamespaces {
			return nil, classErrorf(ErrUnsupported, "spec.hostUsers: can't set `spec.hostUsers: false`, runtime does not support user namespaces")
		}
		if node.UserNamespaceMapper == nil {
			return nil, classErrorf(ErrUnsupported, "spec.hostUsers: false: no user-namespace ID mapper (Node.UserNamespaceMapper) on this node")
		}
		userns, err := node.UserNamespaceMapper.UserNamespace(pod)
		if err != nil {
			return nil, fmt.Errorf("spec.hostUsers: false: create user namespace: %w", err)
		}
		ns.UsernsOptions = userns
		return ns, nil
	}
	ns.UsernsOptions = &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}
	return ns, nil
}

// containerSecurity is kubelet's determineEffectiveSecurityContext.
func containerSecurity(pod *corev1.Pod, c *corev1.Container, user ImageUser, node Node) (*runtimeapi.LinuxContainerSecurityContext, error) {
	eff := EffectiveSecurityContext(pod, c)
	sc := &runtimeapi.LinuxContainerSecurityContext{}
	if caps := eff.Capabilities; caps != nil {
		sc.Capabilities = &runtimeapi.Capability{AddCapabilities: make([]string, len(caps.Add)), DropCapabilities: make([]string, len(caps.Drop))}
		for i, v := range caps.Add {
			sc.Capabilities.AddCapabilities[i] = string(v)
		}
		for i, v := range caps.Drop {
			sc.Capabilities.DropCapabilities[i] = string(v)
		}
	}
	sc.SelinuxOptions = seLinux(eff.SELinuxOptions)
	if eff.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *eff.RunAsUser}
	}
	if eff.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *eff.RunAsGroup}
	}
	if eff.Privileged != nil {
		sc.Privileged = *eff.Privileged
	}
	if eff.ReadOnlyRootFilesystem != nil {
		sc.ReadonlyRootfs = *eff.ReadOnlyRootFilesystem
	}
	var err error
	if sc.Seccomp, err = SeccompProfile(pod, c, node); err != nil {
		return nil, err
	}
	//lint:ignore SA1019 kubelet still sends the older string form beside the profile
	if sc.Apparmor, sc.ApparmorProfile, err = appArmor(pod, c, node); err != nil {
		return nil, err
	}
	if sc.RunAsUser == nil {
		if user.UID != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *user.UID}
		}
		sc.RunAsUsername = user.Username
	}
	if sc.NamespaceOptions, err = NamespaceOptions(pod, node); err != nil {
		return nil, err
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.FSGroup != nil {
			sc.SupplementalGroups = append(sc.SupplementalGroups, *psc.FSGroup)
		}
		sc.SupplementalGroups = append(sc.SupplementalGroups, psc.SupplementalGroups...)
		if psc.SupplementalGroupsPolicy != nil {
			v, err := supplementalGroupsPolicy(*psc.SupplementalGroupsPolicy, node)
			if err != nil {
				return nil, err
			}
			sc.SupplementalGroupsPolicy = v
		}
	}
	sc.NoNewPrivs = eff.AllowPrivilegeEscalation != nil && !*eff.AllowPrivilegeEscalation
	if eff.ProcMount != nil && *eff.ProcMount == corev1.UnmaskedProcMount {
		sc.MaskedPaths, sc.ReadonlyPaths = []string{}, []string{}
	} else {
		sc.MaskedPaths = append([]string(nil), node.maskedPaths()...)
		sc.ReadonlyPaths = append([]string(nil), DefaultReadonlyPaths...)
	}
	return sc, nil
}

// supplementalGroupsPolicy converts the policy; Strict needs a runtime
// that reports support for it, as kubelet's admission checks.
func supplementalGroupsPolicy(p corev1.SupplementalGroupsPolicy, node Node) (runtimeapi.SupplementalGroupsPolicy, error) {
	v, ok := runtimeapi.SupplementalGroupsPolicy_value[string(p)]
	if !ok {
		return 0, fmt.Errorf("unsupported supplementalGroupsPolicy: %s", p)
	}
	if p == corev1.SupplementalGroupsPolicyStrict && !node.SupplementalGroupsPolicyStrict {
		return 0, classErrorf(ErrUnsupported, "spec.securityContext.supplementalGroupsPolicy: SupplementalGroupsPolicy=Strict is not supported in this node")
	}
	return runtimeapi.SupplementalGroupsPolicy(v), nil
}

func seLinux(o *corev1.SELinuxOptions) *runtimeapi.SELinuxOption {
	if o == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}
