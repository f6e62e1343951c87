package diff

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/record"
	resourcehelper "k8s.io/component-helpers/resource"
	podresource "k8s.io/kubernetes/pkg/api/v1/resource"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	"k8s.io/kubernetes/pkg/kubelet/network/dns"
	"k8s.io/kubernetes/pkg/kubelet/sysctl"

	"github.com/podstart/podstart/criconfig"
)

// sysctlPieces build sysctl names with dots and slashes in every order.
var sysctlPieces = []string{"net", "ipv4", "conf", "eno2", "100", "rp_filter", "kernel", "shm_rmid_forced", "fs", "mqueue", ".", "/", "."}

func randSysctlName(r *rand.Rand) string {
	s := ""
	for range r.IntN(8) {
		s += pick(r, sysctlPieces)
	}
	return s
}

// TestSandboxSysctls compares the sysctls of criconfig.SandboxConfig with
// the names kubelet's SyncPod sends after
// sysctl.ConvertPodSysctlsVariableToDotsSeparator.
func TestSandboxSysctls(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	n := cases(20000)
	for range n {
		pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{}, Containers: []corev1.Container{{Name: "c"}}}}
		for range r.IntN(4) {
			pod.Spec.SecurityContext.Sysctls = append(pod.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: randSysctlName(r), Value: pick(r, []string{"0", "1", "1024 65535"})})
		}
		cfg, err := criconfig.SandboxConfig(pod, 0, criconfig.Node{})
		if err != nil {
			d.add("SandboxConfig(%v): %v", pod.Spec.SecurityContext.Sysctls, err)
			continue
		}
		k := pod.DeepCopy()
		sysctl.ConvertPodSysctlsVariableToDotsSeparator(k.Spec.SecurityContext)
		want := map[string]string{}
		for _, s := range k.Spec.SecurityContext.Sysctls {
			want[s.Name] = s.Value
		}
		if !maps.Equal(cfg.Linux.Sysctls, want) {
			d.add("sysctls of %v = %v, kubelet %v", pod.Spec.SecurityContext.Sysctls, cfg.Linux.Sysctls, want)
		}
	}
	d.report(n, "pods")
}

// kubeletResourceFieldValue is kubelet v1.37.2's value of an env var's
// resourceFieldRef: defaultPodLimitsForDownwardAPI (a Kubelet method, so
// its few lines are restated here over the exported
// MergeContainerResourceLimits), then containerResourceRuntimeValue
// (unexported, restated over ExtractContainerResourceValue and
// ExtractResourceValueByContainerName).
func kubeletResourceFieldValue(ref *corev1.ResourceFieldSelector, pod *corev1.Pod, c *corev1.Container, allocatable corev1.ResourceList) (string, error) {
	alloc := allocatable.DeepCopy()
	if resourcehelper.IsPodLevelLimitsSet(pod) {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
			if !resourcehelper.IsSupportedPodLevelResource(name) {
				continue
			}
			if v, ok := pod.Spec.Resources.Limits[name]; ok && !v.IsZero() {
				if _, ok := alloc[name]; ok {
					alloc[name] = v.DeepCopy()
				}
			}
		}
	}
	outPod := pod.DeepCopy()
	for i := range outPod.Spec.Containers {
		podresource.MergeContainerResourceLimits(&outPod.Spec.Containers[i], alloc)
	}
	outC := c.DeepCopy()
	podresource.MergeContainerResourceLimits(outC, alloc)
	if ref.ContainerName == "" {
		return podresource.ExtractContainerResourceValue(ref, outC)
	}
	return podresource.ExtractResourceValueByContainerName(ref, outPod, ref.ContainerName)
}

var downwardEnvResources = []string{"limits.cpu", "limits.memory", "limits.ephemeral-storage", "requests.cpu", "requests.memory",
	"requests.ephemeral-storage", "limits.hugepages-2Mi", "requests.hugepages-1Gi", "limits.example.com/gpu", "cpu", "limits"}

// TestResourceFieldRefEnv compares criconfig.FieldRefValue for
// resourceFieldRef env vars with kubelet's, on random pods (container and
// pod-level limits, init containers, containerName), divisors and node
// allocatable. With the whole allocatable known the values and error
// messages must be equal; with part of it unknown podstart must either
// give kubelet's value or refuse with ErrUnknownNodeFact, never "0".
func TestResourceFieldRefEnv(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	n := cases(20000)
	full := corev1.ResourceList{"cpu": resource.MustParse("6"), "memory": resource.MustParse("4Gi"), "ephemeral-storage": resource.MustParse("100Gi")}
	for range n {
		pod := randResourcePod(r)
		pod.Status.QOSClass = ""
		all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
		c := &all[r.IntN(len(all))]
		ref := &corev1.ResourceFieldSelector{Resource: pick(r, downwardEnvResources)}
		if r.IntN(3) == 0 {
			ref.ContainerName = pick(r, []string{"c0", "c1", "i0", "i1", "none", c.Name})
		}
		if r.IntN(2) == 0 {
			ref.Divisor = resource.MustParse(pick(r, []string{"1", "1m", "1Mi", "1Gi", "100m", "3"}))
		}
		src := &corev1.EnvVarSource{ResourceFieldRef: ref}
		want, wantErr := kubeletResourceFieldValue(ref, pod, c, full)
		got, _, err := criconfig.FieldRefValue(pod, c, src, nil, criconfig.Node{Allocatable: full})
		if got != want || (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			d.add("%+v of %s in %+v = %q, %v; kubelet %q, %v", ref, c.Name, pod.Spec, got, err, want, wantErr)
			continue
		}
		partial := corev1.ResourceList{}
		for k, v := range full {
			if r.IntN(2) == 0 {
				partial[k] = v
			}
		}
		got, _, err = criconfig.FieldRefValue(pod, c, src, nil, criconfig.Node{Allocatable: partial})
		if !errors.Is(err, criconfig.ErrUnknownNodeFact) && (got != want || (err == nil) != (wantErr == nil)) {
			d.add("with allocatable %v: %+v of %s in %+v = %q, %v; kubelet (whole allocatable) %q, %v", partial, ref, c.Name, pod.Spec, got, err, want, wantErr)
		}
	}
	d.report(n, "env vars")
}

var (
	dnsPolicies   = []corev1.DNSPolicy{corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet, corev1.DNSDefault, corev1.DNSNone, ""}
	dnsDomains    = []string{"", "", "cluster.local", "k8s.example.org"}
	dnsNames      = []string{"corp.test", "corp.test.", "svc.cluster.local", ".", "a.example", "ns.svc.cluster.local", "cluster.local"}
	dnsResolvConf = []string{"nameserver 10.0.0.53\nsearch corp.test.\noptions ndots:2 edns0\n", "", "search a.example b.example\nsearch corp.test\n",
		"nameserver 192.0.2.1\nnameserver 192.0.2.2\nnameserver 192.0.2.3\nnameserver 192.0.2.4\n# comment\noptions timeout:1\noptions timeout:2 rotate\n"}
)

// TestDNSConfig compares criconfig.DNSConfig with kubelet's
// dns.Configurer.GetPodDNS on random pods (policies, host network,
// spec.dnsConfig) and nodes (cluster DNS, cluster domain, empty as
// kubelet's default, resolv.conf or none, host IPs). Options are compared
// as sets: kubelet merges them through a map.
func TestDNSConfig(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	n := cases(5000)
	dir := t.TempDir()
	for i := range n {
		node := criconfig.Node{ClusterDomain: pick(r, dnsDomains)}
		var clusterDNS, nodeIPs []net.IP
		for range r.IntN(3) {
			ip := pick(r, []string{"10.96.0.10", "fd00::10", "10.96.0.11"})
			node.ClusterDNS = append(node.ClusterDNS, ip)
			clusterDNS = append(clusterDNS, net.ParseIP(ip))
		}
		for range r.IntN(3) {
			ip := pick(r, []string{"192.0.2.10", "2001:db8::10"})
			node.HostIPs = append(node.HostIPs, ip)
			nodeIPs = append(nodeIPs, net.ParseIP(ip))
		}
		resolv := ""
		if r.IntN(4) > 0 {
			resolv = filepath.Join(dir, "resolv.conf."+string(rune('a'+i%26)))
			content := pick(r, dnsResolvConf)
			if err := os.WriteFile(resolv, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			node.ResolvConf, node.ResolvConfContent = resolv, []byte(content)
		}
		node.NoResolvConf = resolv == "" // kubelet's --resolv-conf=""
		pod := &corev1.Pod{Spec: corev1.PodSpec{DNSPolicy: pick(r, dnsPolicies), HostNetwork: r.IntN(3) == 0, Containers: []corev1.Container{{Name: "c"}}}}
		pod.Namespace, pod.Name = pick(r, []string{"default", "ns"}), "p"
		if r.IntN(2) == 0 {
			dc := &corev1.PodDNSConfig{}
			for range r.IntN(3) {
				dc.Nameservers = append(dc.Nameservers, pick(r, []string{"192.0.2.53", "10.96.0.10", "2001:db8::53"}))
			}
			for range r.IntN(4) {
				dc.Searches = append(dc.Searches, pick(r, dnsNames))
			}
			for range r.IntN(3) {
				o := corev1.PodDNSConfigOption{Name: pick(r, []string{"ndots", "timeout", "rotate", "edns0"})}
				if r.IntN(2) == 0 {
					o.Value = new(pick(r, []string{"1", "3", ""}))
				}
				dc.Options = append(dc.Options, o)
			}
			pod.Spec.DNSConfig = dc
		}
		c := dns.NewConfigurer(&record.FakeRecorder{}, &corev1.ObjectReference{Kind: "Node", Name: "n"}, nodeIPs, clusterDNS, node.ClusterDomain, resolv)
		want, err := c.GetPodDNS(context.Background(), pod)
		if err != nil {
			t.Fatal(err)
		}
		got := criconfig.DNSConfig(pod, node)
		if !slices.Equal(got.Servers, want.Servers) || !slices.Equal(got.Searches, want.Searches) ||
			!slices.Equal(slices.Sorted(slices.Values(got.Options)), slices.Sorted(slices.Values(want.Options))) {
			d.add("DNSConfig(policy %q, hostNetwork %v, %+v; domain %q, cluster DNS %v, resolv.conf %q) =\n %v\nkubelet\n %v",
				pod.Spec.DNSPolicy, pod.Spec.HostNetwork, pod.Spec.DNSConfig, node.ClusterDomain, node.ClusterDNS, strings.ReplaceAll(string(node.ResolvConfContent), "\n", "|"), got, want)
		}
	}
	d.report(n, "pods")
}

// TestPodMemoryLimit compares criconfig.PodMemoryLimit with the memory of
// kubelet's cm.ResourceConfigForPod, as emptyDir's
// calculateEmptyDirMemorySize calls it, on random pods.
func TestPodMemoryLimit(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	n := cases(20000)
	for range n {
		pod := randResourcePod(r)
		want := cm.ResourceConfigForPod(pod, false, 100000, false, kubeletconfig.NoneMemoryReservationPolicy).Memory
		got, ok := criconfig.PodMemoryLimit(pod)
		if ok != (want != nil) || ok && got != *want {
			w := "none"
			if want != nil {
				w = resource.NewQuantity(*want, resource.BinarySI).String()
			}
			d.add("PodMemoryLimit(%+v) = %d, %v; kubelet %s", pod.Spec, got, ok, w)
		}
	}
	d.report(n, "pods")
}
