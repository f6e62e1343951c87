package mounts

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ShouldMountHostsFile is kubelet's rule (v1.31+): the managed hosts file
// is mounted when the pod has an IP or uses the host network.
func ShouldMountHostsFile(pod *corev1.Pod, podIPs []string) bool {
	return len(podIPs) > 0 || pod.Spec.HostNetwork
}

// ErrInvalidHostname: the pod's hostname, hostnameOverride or subdomain is
// not a valid DNS name.
var ErrInvalidHostname = errors.New("invalid pod hostname")

// HostnameAndDomain is kubelet's GeneratePodHostNameAndDomain (v1.37.2):
// spec.hostnameOverride when set (a DNS subdomain, with no domain; feature
// HostnameOverride, GA and always on since v1.37), else spec.hostname (a DNS
// label) or the pod name; cut to 63 characters without trailing "-" or
// "."; and "<subdomain>.<namespace>.svc.<clusterDomain>" when
// spec.subdomain (a DNS label) is set. Kubelet's messages.
func HostnameAndDomain(pod *corev1.Pod, clusterDomain string) (hostname, domain string, err error) {
	if o := pod.Spec.HostnameOverride; o != nil {
		if msgs := validation.IsDNS1123Subdomain(*o); len(msgs) != 0 {
			return "", "", errorf(ErrInvalidHostname, "pod HostnameOverride %q is not a valid DNS subdomain: %s", *o, strings.Join(msgs, ";"))
		}
		hostname, err = truncateHostname(pod.Name, *o)
		return hostname, "", err
	}
	hostname = pod.Name
	if pod.Spec.Hostname != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Hostname); len(msgs) != 0 {
			return "", "", errorf(ErrInvalidHostname, "pod Hostname %q is not a valid DNS label: %s", pod.Spec.Hostname, strings.Join(msgs, ";"))
		}
		hostname = pod.Spec.Hostname
	}
	if hostname, err = truncateHostname(pod.Name, hostname); err != nil {
		return "", "", err
	}
	if pod.Spec.Subdomain != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Subdomain); len(msgs) != 0 {
			return "", "", errorf(ErrInvalidHostname, "pod Subdomain %q is not a valid DNS label: %s", pod.Spec.Subdomain, strings.Join(msgs, ";"))
		}
		domain = fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return hostname, domain, nil
}

func truncateHostname(podName, hostname string) (string, error) {
	if len(hostname) <= 63 {
		return hostname, nil
	}
	t := strings.TrimRight(hostname[:63], "-.")
	if t == "" {
		return "", errorf(ErrInvalidHostname, "hostname for pod %q was invalid: %q", podName, hostname)
	}
	return t, nil
}

const managedHeader = `# Kubernetes-managed hosts file.
127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
fe00::0	ip6-localnet
fe00::0	ip6-mcastprefix
fe00::1	ip6-allnodes
fe00::2	ip6-allrouters
`

// HostsFileContent is the managed hosts file of a pod-network pod: the
// fixed header, a line per pod IP with the hostname (FQDN first when there
// is a domain), then the host aliases. Fields are TAB-separated. Values
// that could add lines or fields (whitespace, control characters) or
// addresses that are not IPs are refused.
func HostsFileContent(hostname, domain string, podIPs []string, aliases []corev1.HostAlias) ([]byte, error) {
	if err := checkHostname(hostname); err != nil {
		return nil, err
	}
	if domain != "" {
		if err := checkHostname(domain); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	b.WriteString(managedHeader)
	for _, ip := range podIPs {
		if _, err := netip.ParseAddr(ip); err != nil {
			return nil, errorf(ErrInvalidHostAlias, "pod IP %q is not an IP address", ip)
		}
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	if err := writeAliases(&b, aliases); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// NodeHostsFileContent is the hosts file of a host-network pod: a header,
// the node's file verbatim, then the host aliases. As HostsFileContent, it
// refuses an alias whose address is not an IP or whose hostnames could add
// lines or fields (kubelet writes them unchecked; the API server's
// validation normally stops them first).
func NodeHostsFileContent(node []byte, aliases []corev1.HostAlias) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# Kubernetes-managed hosts file (host network).\n")
	b.Write(node)
	if err := writeAliases(&b, aliases); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeAliases(b *bytes.Buffer, aliases []corev1.HostAlias) error {
	if len(aliases) == 0 {
		return nil
	}
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		if _, err := netip.ParseAddr(a.IP); err != nil {
			return errorf(ErrInvalidHostAlias, "%q is not an IP address", a.IP)
		}
		for _, h := range a.Hostnames {
			if err := checkHostname(h); err != nil {
				return err
			}
		}
		fmt.Fprintf(b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return nil
}

// checkHostname refuses what could break the file's structure. The API
// server validates DNS-1123 names; a library may be handed anything.
func checkHostname(h string) error {
	if h == "" {
		return errorf(ErrInvalidHostAlias, "empty hostname")
	}
	for _, r := range h {
		if r <= ' ' || r == 0x7f || r == '#' {
			return errorf(ErrInvalidHostAlias, "hostname %q contains whitespace, a control character or '#'", h)
		}
	}
	return nil
}

func hostsMount(pod *corev1.Pod, req Request, o options) (Mount, error) {
	var content []byte
	var err error
	if pod.Spec.HostNetwork {
		var node []byte
		if node, err = o.disk.ReadFile(o.nodeHostsFile); err != nil {
			return Mount{}, errorf(ErrHostsFile, "reading the node's %s: %v", o.nodeHostsFile, err)
		}
		content, err = NodeHostsFileContent(node, pod.Spec.HostAliases)
	} else {
		var hostname, domain string
		if hostname, domain, err = HostnameAndDomain(pod, o.clusterDomain); err == nil {
			content, err = HostsFileContent(hostname, domain, req.PodIPs, pod.Spec.HostAliases)
		}
	}
	if err != nil {
		return Mount{}, err
	}
	if req.PodDir == "" {
		return Mount{}, errorf(ErrHostsFile, "no pod directory to write it in")
	}
	file := path.Join(req.PodDir, "etc-hosts")
	if err := o.disk.WriteFile(file, content, 0o644); err != nil {
		return Mount{}, errorf(ErrHostsFile, "%v", err)
	}
	return Mount{
		Name: EtcHostsVolumeName, ContainerPath: EtcHostsPath, HostPath: file,
		SELinuxRelabel: true, Propagation: PropagationPrivate,
	}, nil
}
