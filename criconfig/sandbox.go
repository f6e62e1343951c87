package criconfig

import (
	"fmt"
	"maps"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/node/util/sysctl"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/mounts"
)

// PodLogDir is kubelet's log directory of a pod:
// <podLogsDir>/<namespace>_<name>_<uid>.
func PodLogDir(node Node, pod *corev1.Pod) string {
	return filepath.Join(node.podLogsDir(), fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

// PodDir is kubelet's directory of a pod: <rootDir>/pods/<uid>.
func PodDir(node Node, pod *corev1.Pod) string {
	return filepath.Join(node.rootDir(), "pods", string(pod.UID))
}

// PodLabels are the labels kubelet puts on a sandbox: the pod's own and
// its name, namespace and UID.
func PodLabels(pod *corev1.Pod) map[string]string {
	l := maps.Clone(pod.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l[LabelPodName], l[LabelPodNamespace], l[LabelPodUID] = pod.Name, pod.Namespace, string(pod.UID)
	return l
}

// Hostname is kubelet's GeneratePodHostNameAndDomain and
// GetNodenameForKernel: spec.hostname or the pod name, cut to 63
// characters without a trailing "-" or "."; with setHostnameAsFQDN the
// FQDN, which must fit in 64 characters.
func Hostname(pod *corev1.Pod, node Node) (hostname, domain string, err error) {
	hostname, domain, err = mounts.HostnameAndDomain(pod, node.ClusterDomain)
	if err != nil {
		return "", "", err
	}
	if pod.Spec.SetHostnameAsFQDN != nil && *pod.Spec.SetHostnameAsFQDN && domain != "" {
		fqdn := hostname + "." + domain
		if len(fqdn) > 64 {
			return "", "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)", fqdn, 64, len(fqdn))
		}
		return fqdn, domain, nil
	}
	return hostname, domain, nil
}

// SandboxConfig is kubelet's generatePodSandboxConfig with its Linux part:
// metadata, labels and annotations, DNS, hostname (none with host
// network), log directory, port mappings, cgroup parent, sysctls (names
// normalised to dots, as kubelet's SyncPod does: kernel/shm_rmid_forced
// is sent as kernel.shm_rmid_forced), namespaces, the sandbox security
// context (RuntimeDefault seccomp always, privileged if any container
// is), and the pod's resources and overhead.
func SandboxConfig(pod *corev1.Pod, attempt uint32, node Node) (*runtimeapi.PodSandboxConfig, error) {
	if err := checkPod(pod, node); err != nil {
		return nil, err
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt},
		Labels:       PodLabels(pod),
		Annotations:  maps.Clone(pod.Annotations),
		DnsConfig:    DNSConfig(pod, node),
		LogDirectory: PodLogDir(node, pod),
	}
	if cfg.Annotations == nil {
		cfg.Annotations = map[string]string{}
	}
	if !pod.Spec.HostNetwork {
		h, _, err := Hostname(pod, node)
		if err != nil {
			return nil, err
		}
		cfg.Hostname = h
	}
	for i := range pod.Spec.Containers {
		for _, p := range pod.Spec.Containers[i].Ports {
			cfg.PortMappings = append(cfg.PortMappings, &runtimeapi.PortMapping{
				Protocol: protocol(p.Protocol), ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIp: p.HostIP})
		}
	}
	lc := &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent: CgroupParent(pod, node),
		SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			Privileged: hasPrivilegedContainer(pod),
			Seccomp:    &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
		},
		Sysctls: map[string]string{},
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		for _, s := range sc.Sysctls {
			// SyncPod's ConvertPodSysctlsVariableToDotsSeparator: runc
			// checks namespaced sysctls by their dotted name.
			lc.Sysctls[sysctl.NormalizeName(s.Name)] = s.Value
		}
		if sc.RunAsUser != nil {
			lc.SecurityContext.RunAsUser = &runtimeapi.Int64Value{Value: *sc.RunAsUser}
		}
		if sc.RunAsGroup != nil {
			lc.SecurityContext.RunAsGroup = &runtimeapi.Int64Value{Value: *sc.RunAsGroup}
		}
		ns, err := NamespaceOptions(pod, node)
		if err != nil {
			return nil, err
		}
		lc.SecurityContext.NamespaceOptions = ns
		if sc.FSGroup != nil {
			lc.SecurityContext.SupplementalGroups = append(lc.SecurityContext.SupplementalGroups, *sc.FSGroup)
		}
		lc.SecurityContext.SupplementalGroups = append(lc.SecurityContext.SupplementalGroups, sc.SupplementalGroups...)
		if sc.SupplementalGroupsPolicy != nil {
			v, err := supplementalGroupsPolicy(*sc.SupplementalGroupsPolicy, node)
			if err != nil {
				return nil, err
			}
			lc.SecurityContext.SupplementalGroupsPolicy = v
		}
		lc.SecurityContext.SelinuxOptions = seLinux(sc.SELinuxOptions)
	} else {
		// Kubelet sets namespaces only with a security context, which the
		// API server always defaults; an undefaulted pod gets them too, as
		// its containers do (containerd 2.x refuses containers whose user
		// namespace differs from their sandbox's).
		ns, err := NamespaceOptions(pod, node)
		if err != nil {
			return nil, err
		}
		lc.SecurityContext.NamespaceOptions = ns
	}
	lc.Resources = sandboxResources(pod, node)
	lc.Overhead = overheadResources(pod, node)
	cfg.Linux = lc
	return cfg, nil
}

func protocol(p corev1.Protocol) runtimeapi.Protocol {
	switch p {
	case corev1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case corev1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	}
	return runtimeapi.Protocol_TCP
}

func hasPrivilegedContainer(pod *corev1.Pod) bool {
	found := false
	visitContainers(pod, func(c *corev1.Container) bool {
		found = c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
		return !found
	})
	return found
}
