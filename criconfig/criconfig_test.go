//lint:file-ignore SA1019 the tests check the deprecated AppArmor string kubelet still sends

package criconfig

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/mounts"
)

func rl(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func res(req, lim corev1.ResourceList) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: req, Limits: lim}
}

func testPod(mut func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1", Annotations: map[string]string{"kubernetes.io/config.source": "api"}},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{},
			DNSPolicy:       corev1.DNSClusterFirst,
			Containers:      []corev1.Container{{Name: "c", Image: "busybox:1.35"}},
		},
	}
	if mut != nil {
		mut(p)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

func TestQOSClass(t *testing.T) {
	tests := []struct {
		name string
		c    []corev1.ResourceRequirements
		want corev1.PodQOSClass
	}{
		{"nothing", []corev1.ResourceRequirements{{}}, corev1.PodQOSBestEffort},
		{"equal requests and limits", []corev1.ResourceRequirements{res(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))}, corev1.PodQOSGuaranteed},
		// Not defaulted: the API server copies limits to requests, kubelet does not.
		{"limits only", []corev1.ResourceRequirements{res(nil, rl("cpu", "1", "memory", "1Gi"))}, corev1.PodQOSBurstable},
		{"cpu only", []corev1.ResourceRequirements{res(rl("cpu", "1"), rl("cpu", "1"))}, corev1.PodQOSBurstable},
		{"request below limit", []corev1.ResourceRequirements{res(rl("cpu", "500m", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))}, corev1.PodQOSBurstable},
		{"one guaranteed one best effort", []corev1.ResourceRequirements{res(nil, rl("cpu", "1", "memory", "1Gi")), {}}, corev1.PodQOSBurstable},
		{"only extended resources", []corev1.ResourceRequirements{res(rl("nvidia.com/gpu", "1"), rl("nvidia.com/gpu", "1"))}, corev1.PodQOSBestEffort},
	}
	t.Run("pod-level limit of zero memory is not Guaranteed", func(t *testing.T) {
		// Found by the differential tier (test/diff): only positive
		// quantities count.
		p := testPod(func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "0"), Limits: rl("cpu", "1", "memory", "0")}
		})
		if got := QOSClass(p); got != corev1.PodQOSBurstable {
			t.Fatalf("QOSClass = %s, want Burstable", got)
		}
	})
	// Pod-level cases from kubelet v1.37.2's qos_test.go (explicitPLRTests,
	// PodLevelResourcesFixKubeletQOSClass on as by default).
	guaranteed := res(rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "100m", "memory", "100Mi"))
	podLevel := []struct {
		name      string
		container corev1.ResourceRequirements
		pod       *corev1.ResourceRequirements
		want      corev1.PodQOSClass
	}{
		{"empty pod-level maps fall back to containers", guaranteed, &corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}, corev1.PodQOSGuaranteed},
		{"completely empty pod-level resources fall back", guaranteed, &corev1.ResourceRequirements{}, corev1.PodQOSGuaranteed},
		{"nil pod-level resources", guaranteed, nil, corev1.PodQOSGuaranteed},
		{"only ephemeral storage at pod level falls back", guaranteed, ptr(res(rl("ephemeral-storage", "1Gi"), rl("ephemeral-storage", "1Gi"))), corev1.PodQOSGuaranteed},
		{"zero pod-level resources decide", guaranteed, ptr(res(rl("cpu", "0", "memory", "0"), rl("cpu", "0", "memory", "0"))), corev1.PodQOSBestEffort},
		{"guaranteed with pod-level hugepages", corev1.ResourceRequirements{},
			ptr(res(rl("cpu", "10m", "memory", "100Mi", "hugepages-2Mi", "100Mi"), rl("cpu", "10m", "memory", "100Mi", "hugepages-2Mi", "100Mi"))), corev1.PodQOSGuaranteed},
		{"burstable with pod-level hugepages", corev1.ResourceRequirements{},
			ptr(res(rl("cpu", "10m", "hugepages-2Mi", "100Mi"), rl("hugepages-2Mi", "100Mi"))), corev1.PodQOSBurstable},
	}
	for _, tt := range podLevel {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources = tt.container
				p.Spec.Resources = tt.pod
			})
			if got := QOSClass(p); got != tt.want {
				t.Fatalf("QOSClass = %s, want %s", got, tt.want)
			}
		})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod(func(p *corev1.Pod) {
				p.Spec.Containers = nil
				for i, r := range tt.c {
					p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: string(rune('a' + i)), Resources: r})
				}
			})
			if got := QOSClass(p); got != tt.want {
				t.Fatalf("QOSClass = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestOOMScoreAdj(t *testing.T) {
	const capacity = 4 << 30
	tests := []struct {
		name string
		pod  func(*corev1.Pod)
		want int64
	}{
		{"best effort", nil, 1000},
		{"guaranteed", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = res(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))
		}, -997},
		{"burstable 1Gi of 4Gi", func(p *corev1.Pod) { p.Spec.Containers[0].Resources = res(rl("memory", "1Gi"), nil) }, 750},
		{"burstable without memory request", func(p *corev1.Pod) { p.Spec.Containers[0].Resources = res(rl("cpu", "10m"), nil) }, 999},
		{"burstable asking for all memory", func(p *corev1.Pod) { p.Spec.Containers[0].Resources = res(rl("memory", "4Gi"), nil) }, 3},
		{"node critical static pod", func(p *corev1.Pod) {
			p.Annotations["kubernetes.io/config.source"] = "file"
			p.Spec.PriorityClassName = "system-node-critical"
		}, -997},
		{"critical by priority but not node critical", func(p *corev1.Pod) { p.Spec.Priority = ptr(int32(2000000000)) }, 1000},
		{"pod-level request spread over containers", func(p *corev1.Pod) {
			p.Spec.Resources = ptr(res(rl("memory", "2Gi"), nil))
			p.Spec.Containers[0].Resources = res(rl("memory", "1Gi"), nil)
		}, 500},
		// v1.37: containers asking for more than the pod leave nothing to
		// spread (the remainder is floored at zero, not negative).
		{"containers above the pod-level request", func(p *corev1.Pod) {
			p.Spec.Resources = ptr(res(rl("memory", "128Mi"), rl("memory", "128Mi")))
			p.Spec.Containers[0].Resources = res(rl("memory", "1Gi"), nil)
		}, 750},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod(tt.pod)
			if got := OOMScoreAdj(p, &p.Spec.Containers[0], capacity); got != tt.want {
				t.Fatalf("OOMScoreAdj = %d, want %d", got, tt.want)
			}
		})
	}
	t.Run("sidecar no higher than the smallest app", func(t *testing.T) {
		p := testPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = res(rl("memory", "2Gi"), nil)
			p.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways), Resources: res(rl("memory", "1Gi"), nil)}}
		})
		if got := OOMScoreAdj(p, &p.Spec.InitContainers[0], capacity); got != 500 {
			t.Fatalf("sidecar OOMScoreAdj = %d, want 500", got)
		}
	})
}

func node() Node {
	return Node{Name: "node1", HostIPs: []string{"192.0.2.10"}, RootDir: "/var/lib/kubelet", ClusterDNS: []string{"10.96.0.10"},
		ClusterDomain: "cluster.local", ResolvConf: "/etc/resolv.conf", ResolvConfContent: []byte("nameserver 10.0.0.53\nsearch corp.test.\noptions ndots:2 edns0\n"),
		MemoryCapacity: 4 << 30, HugePageSizes: []int64{2 << 20}, SwapController: true,
		Allocatable: rl("cpu", "2", "memory", "3Gi")}
}

func containerConfig(t *testing.T, p *corev1.Pod, user ImageUser, n Node) *runtimeapi.ContainerConfig {
	t.Helper()
	cfg, err := ContainerConfig(Container{Pod: p, Container: &p.Spec.Containers[0], ImageRef: "sha256:abc", ImageUser: user}, n)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestContainerSecurityContext(t *testing.T) {
	root := ImageUser{UID: ptr(int64(0))}
	t.Run("defaults mask /proc and run as the image's user, unconfined seccomp", func(t *testing.T) {
		sc := containerConfig(t, testPod(nil), ImageUser{UID: ptr(int64(1000))}, node()).Linux.SecurityContext
		if !slices.Equal(sc.MaskedPaths, DefaultMaskedPaths) || !slices.Equal(sc.ReadonlyPaths, DefaultReadonlyPaths) {
			t.Fatalf("paths %v %v", sc.MaskedPaths, sc.ReadonlyPaths)
		}
		if sc.RunAsUser.GetValue() != 1000 || sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_Unconfined || sc.NoNewPrivs {
			t.Fatalf("security context %v", sc)
		}
		if sc.NamespaceOptions.UsernsOptions.GetMode() != runtimeapi.NamespaceMode_NODE || sc.NamespaceOptions.Pid != runtimeapi.NamespaceMode_CONTAINER {
			t.Fatalf("namespaces %v", sc.NamespaceOptions)
		}
	})
	t.Run("unmasked procMount", func(t *testing.T) {
		p := testPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ProcMount: ptr(corev1.UnmaskedProcMount)}
		})
		sc := containerConfig(t, p, root, node()).Linux.SecurityContext
		if sc.MaskedPaths == nil || len(sc.MaskedPaths) != 0 || len(sc.ReadonlyPaths) != 0 {
			t.Fatalf("paths %v %v", sc.MaskedPaths, sc.ReadonlyPaths)
		}
	})
	t.Run("pod settings merged under container settings", func(t *testing.T) {
		p := testPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(1)), RunAsGroup: ptr(int64(2)), FSGroup: ptr(int64(3)),
				SupplementalGroups: []int64{4, 5}, SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c1"},
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr(int64(7)), AllowPrivilegeEscalation: ptr(false),
				Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"ALL"}}, ReadOnlyRootFilesystem: ptr(true)}
		})
		sc := containerConfig(t, p, root, node()).Linux.SecurityContext
		if sc.RunAsUser.GetValue() != 7 || sc.RunAsGroup.GetValue() != 2 || !slices.Equal(sc.SupplementalGroups, []int64{3, 4, 5}) ||
			sc.SelinuxOptions.GetLevel() != "s0:c1" || sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_RuntimeDefault ||
			!sc.NoNewPrivs || !sc.ReadonlyRootfs || !slices.Equal(sc.Capabilities.AddCapabilities, []string{"NET_ADMIN"}) {
			t.Fatalf("security context %v", sc)
		}
	})
	t.Run("localhost seccomp under the node's root", func(t *testing.T) {
		p := testPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("profiles/a.json")}}
		})
		sc := containerConfig(t, p, root, node()).Linux.SecurityContext
		if sc.Seccomp.LocalhostRef != "/var/lib/kubelet/seccomp/profiles/a.json" {
			t.Fatalf("seccomp %v", sc.Seccomp)
		}
	})
	t.Run("seccompDefault", func(t *testing.T) {
		n := node()
		n.SeccompDefault = true
		if sc := containerConfig(t, testPod(nil), root, n).Linux.SecurityContext; sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_RuntimeDefault {
			t.Fatalf("seccomp %v", sc.Seccomp)
		}
	})
	t.Run("apparmor unconfined by annotation", func(t *testing.T) {
		p := testPod(func(p *corev1.Pod) { p.Annotations[appArmorAnnotationPrefix+"c"] = "unconfined" })
		sc := containerConfig(t, p, root, node()).Linux.SecurityContext
		if sc.Apparmor.GetProfileType() != runtimeapi.SecurityProfile_Unconfined || sc.ApparmorProfile != "unconfined" {
			t.Fatalf("apparmor %v %q", sc.Apparmor, sc.ApparmorProfile)
		}
	})
	t.Run("apparmor localhost on an AppArmor node", func(t *testing.T) {
		n := node()
		n.AppArmorEnabled = true
		p := testPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr("k8s-x")}
		})
		sc := containerConfig(t, p, root, n).Linux.SecurityContext
		if sc.Apparmor.GetLocalhostRef() != "k8s-x" || sc.ApparmorProfile != "localhost/k8s-x" {
			t.Fatalf("apparmor %v %q", sc.Apparmor, sc.ApparmorProfile)
		}
	})
	t.Run("image user name", func(t *testing.T) {
		sc := containerConfig(t, testPod(nil), ImageUser{Username: "www"}, node()).Linux.SecurityContext
		if sc.RunAsUser != nil || sc.RunAsUsername != "www" {
			t.Fatalf("user %v %q", sc.RunAsUser, sc.RunAsUsername)
		}
	})
}

func TestVerifyRunAsNonRoot(t *testing.T) {
	const pod = `(pod: "p_ns(uid-1)", container: c)`
	tests := []struct {
		name   string
		podRun *int64
		cRun   *int64
		user   ImageUser
		want   string
	}{
		{"image root", nil, nil, ImageUser{UID: ptr(int64(0))}, "container has runAsNonRoot and image will run as root " + pod},
		{"no user in image is root", nil, nil, ImageUserFromStatus(&runtimeapi.Image{}), "container has runAsNonRoot and image will run as root " + pod},
		{"runAsUser 0", nil, ptr(int64(0)), ImageUser{UID: ptr(int64(5))}, "container's runAsUser breaks non-root policy " + pod},
		{"pod runAsUser 0", ptr(int64(0)), nil, ImageUser{UID: ptr(int64(5))}, "container's runAsUser breaks non-root policy " + pod},
		{"non-numeric user", nil, nil, ImageUser{Username: "www"}, "container has runAsNonRoot and image has non-numeric user (www), cannot verify user is non-root " + pod},
		{"image uid 1000", nil, nil, ImageUser{UID: ptr(int64(1000))}, ""},
		{"runAsUser overrides a root image", nil, ptr(int64(1000)), ImageUser{UID: ptr(int64(0))}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod(func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr(true), RunAsUser: tt.podRun}
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: tt.cRun}
			})
			_, err := ContainerConfig(Container{Pod: p, Container: &p.Spec.Containers[0], ImageUser: tt.user}, node())
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || err.Error() != tt.want || !errors.Is(err, ErrRunAsNonRoot) {
				t.Fatalf("err = %v, want %q matching ErrRunAsNonRoot", err, tt.want)
			}
		})
	}
}

func TestContainerResources(t *testing.T) {
	p := testPod(func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources = res(rl("cpu", "250m", "memory", "64Mi"), rl("cpu", "500m", "memory", "128Mi", "hugepages-2Mi", "4Mi"))
	})
	r := containerConfig(t, p, ImageUser{UID: ptr(int64(0))}, node()).Linux.Resources
	want := &runtimeapi.LinuxContainerResources{CpuShares: 256, CpuQuota: 50000, CpuPeriod: 100000, MemoryLimitInBytes: 128 << 20,
		MemorySwapLimitInBytes: 128 << 20, OomScoreAdj: 985, HugepageLimits: []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 4 << 20}}}
	if r.String() != want.String() {
		t.Fatalf("resources\n got %v\nwant %v", r, want)
	}
	be := containerConfig(t, testPod(nil), ImageUser{}, Node{CgroupV2: true, SwapController: true}).Linux.Resources
	if be.CpuShares != 2 || be.CpuPeriod != 100000 || be.OomScoreAdj != 1000 || be.Unified["memory.oom.group"] != "1" || be.Unified["memory.swap.max"] != "0" {
		t.Fatalf("best effort on cgroup v2: %v", be)
	}
}

func TestSandboxConfig(t *testing.T) {
	p := testPod(func(p *corev1.Pod) {
		p.Spec.Hostname, p.Spec.Subdomain = "h", "sub"
		p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(1)), RunAsGroup: ptr(int64(2)), FSGroup: ptr(int64(3)), SupplementalGroups: []int64{4},
			Sysctls: []corev1.Sysctl{{Name: "net.ipv4.conf.eth0/100.rp_filter", Value: "1"}, {Name: "kernel/shm_rmid_forced", Value: "1"}}}
		p.Spec.InitContainers = []corev1.Container{{Name: "i", SecurityContext: &corev1.SecurityContext{Privileged: ptr(true)}, Resources: res(rl("cpu", "1"), nil)}}
		p.Spec.Containers[0].Resources = res(rl("cpu", "100m", "memory", "32Mi"), rl("cpu", "200m", "memory", "64Mi"))
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}, {ContainerPort: 53, HostPort: 5353, Protocol: corev1.ProtocolUDP}}
		p.Spec.Overhead = rl("cpu", "10m", "memory", "8Mi")
	})
	cfg, err := SandboxConfig(p, 2, node())
	if err != nil {
		t.Fatal(err)
	}
	sc := cfg.Linux.SecurityContext
	switch {
	case cfg.Metadata.Attempt != 2 || cfg.Hostname != "h" || cfg.LogDirectory != "/var/log/pods/ns_p_uid-1":
		t.Fatalf("metadata %v %q %q", cfg.Metadata, cfg.Hostname, cfg.LogDirectory)
	case !sc.Privileged || sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_RuntimeDefault || sc.RunAsGroup.GetValue() != 2 || !slices.Equal(sc.SupplementalGroups, []int64{3, 4}):
		t.Fatalf("security context %v", sc)
	case len(cfg.Linux.Sysctls) != 2 || cfg.Linux.Sysctls["net.ipv4.conf.eth0/100.rp_filter"] != "1" || cfg.Linux.Sysctls["kernel.shm_rmid_forced"] != "1":
		t.Fatalf("sysctls must be normalised to dots, as kubelet's SyncPod does: %v", cfg.Linux.Sysctls)
	case cfg.Linux.CgroupParent != "/kubepods/burstable/poduid-1":
		t.Fatalf("cgroup parent %q", cfg.Linux.CgroupParent)
	case len(cfg.PortMappings) != 2 || cfg.PortMappings[1].Protocol != runtimeapi.Protocol_UDP || cfg.PortMappings[1].HostPort != 5353:
		t.Fatalf("ports %v", cfg.PortMappings)
	}
	// Init containers run one at a time: the pod's CPU request is the
	// larger of the init request (1) and the apps' sum (100m).
	if r := cfg.Linux.Resources; r.CpuShares != 1024 || r.CpuQuota != 20000 || r.MemoryLimitInBytes != 64<<20 {
		t.Fatalf("sandbox resources %v", r)
	}
	if o := cfg.Linux.Overhead; o.CpuShares != 10 || o.CpuQuota != 1000 || o.MemoryLimitInBytes != 8<<20 {
		t.Fatalf("overhead %v", o)
	}
	n := node()
	n.CgroupDriver = "systemd"
	p.UID = "a-b"
	if got := CgroupParent(p, n); got != "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poda_b.slice" {
		t.Fatalf("systemd cgroup parent %q", got)
	}
	n.CgroupsPerQOS = ptr(false)
	if got := CgroupParent(p, n); got != "" {
		t.Fatalf("cgroupsPerQOS false: %q", got)
	}
}

func TestDNSConfig(t *testing.T) {
	tests := []struct {
		name string
		pod  func(*corev1.Pod)
		node func(*Node)
		want *runtimeapi.DNSConfig
	}{
		{"ClusterFirst", nil, nil, &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.test"}, Options: []string{"ndots:5"}}},
		{"ClusterFirst with host network falls back to Default", func(p *corev1.Pod) { p.Spec.HostNetwork = true }, nil,
			&runtimeapi.DNSConfig{Servers: []string{"10.0.0.53"}, Searches: []string{"corp.test"}, Options: []string{"edns0", "ndots:2"}}},
		{"ClusterFirstWithHostNet", func(p *corev1.Pod) { p.Spec.HostNetwork, p.Spec.DNSPolicy = true, corev1.DNSClusterFirstWithHostNet }, nil,
			&runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.test"}, Options: []string{"ndots:5"}}},
		{"no cluster DNS falls back to Default", nil, func(n *Node) { n.ClusterDNS = nil },
			&runtimeapi.DNSConfig{Servers: []string{"10.0.0.53"}, Searches: []string{"corp.test"}, Options: []string{"edns0", "ndots:2"}}},
		{"None with dnsConfig", func(p *corev1.Pod) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"192.0.2.53"}, Searches: []string{"a.test"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr("1")}, {Name: "rotate"}}}
		}, nil, &runtimeapi.DNSConfig{Servers: []string{"192.0.2.53"}, Searches: []string{"a.test"}, Options: []string{"ndots:1", "rotate"}}},
		{"ClusterFirst with dnsConfig overrides ndots", func(p *corev1.Pod) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: []string{"extra.test"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr("3")}}}
		}, nil, &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.test", "extra.test"}, Options: []string{"ndots:3"}}},
		{"no resolv.conf: loopback", func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSDefault }, func(n *Node) { n.NoResolvConf, n.ResolvConfContent = true, nil },
			&runtimeapi.DNSConfig{Servers: []string{"127.0.0.1"}, Searches: []string{"."}}},
		{"more than three nameservers are cut", func(p *corev1.Pod) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"}}
		}, nil, &runtimeapi.DNSConfig{Servers: []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}, Options: []string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := node()
			if tt.node != nil {
				tt.node(&n)
			}
			got := DNSConfig(testPod(tt.pod), n)
			if got.String() != tt.want.String() {
				t.Fatalf("DNSConfig\n got %v\nwant %v", got, tt.want)
			}
		})
	}
	t.Run("search list cut to 32 entries", func(t *testing.T) {
		var many []string
		for i := 0; i < 40; i++ {
			many = append(many, strings.Repeat("x", 5)+string(rune('a'+i%26))+".test"+strings.Repeat("y", i))
		}
		p := testPod(func(p *corev1.Pod) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: many}
		})
		if got := DNSConfig(p, node()).Searches; len(got) != 32 {
			t.Fatalf("%d searches", len(got))
		}
	})
}

func TestFieldRefValue(t *testing.T) {
	p := testPod(func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "web"}
		p.Spec.NodeName = "node1"
		p.Spec.Containers[0].Resources = res(rl("cpu", "250m", "memory", "100Mi"), rl("cpu", "1500m"))
	})
	c := &p.Spec.Containers[0]
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	resourceRef := func(r, div string) *corev1.EnvVarSource {
		s := &corev1.ResourceFieldSelector{Resource: r}
		if div != "" {
			s.Divisor = resource.MustParse(div)
		}
		return &corev1.EnvVarSource{ResourceFieldRef: s}
	}
	tests := []struct {
		name string
		src  *corev1.EnvVarSource
		want string
	}{
		{"label", field("metadata.labels['app']"), "web"},
		{"node name", field("spec.nodeName"), "node1"},
		{"host IP", field("status.hostIP"), "192.0.2.10"},
		{"pod IPs", field("status.podIPs"), "10.0.0.1,fd00::1"},
		{"cpu limit rounded up", resourceRef("limits.cpu", ""), "2"},
		{"cpu request in millicores", resourceRef("requests.cpu", "1m"), "250"},
		{"memory limit from allocatable", resourceRef("limits.memory", "1Mi"), "3072"},
		{"memory request", resourceRef("requests.memory", ""), "104857600"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := FieldRefValue(p, c, tt.src, []string{"10.0.0.1", "fd00::1"}, node())
			if err != nil || !ok || got != tt.want {
				t.Fatalf("FieldRefValue = %q, %v, %v; want %q", got, ok, err, tt.want)
			}
		})
	}
	if _, ok, _ := FieldRefValue(p, c, &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}, nil, node()); ok {
		t.Fatal("a secret reference needs a resolver")
	}
}

// TestHostNetworkPodIPFieldRef: a host-network pod's status.podIP(s) are
// the node's IPs (kubelet's GetNodeHostIPs: the first, then the first of
// the other family), and refused as an unknown node fact when Node.HostIPs
// is empty: never "". Found by the conformance spec "Downward API should
// provide host IP and pod IP as an env var if pod uses host network".
func TestHostNetworkPodIPFieldRef(t *testing.T) {
	p := testPod(func(p *corev1.Pod) { p.Spec.HostNetwork = true })
	c := &p.Spec.Containers[0]
	ref := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	n := node()
	n.HostIPs = []string{"192.0.2.10", "192.0.2.11", "fd00::10", "fd00::11"}
	for path, want := range map[string]string{"status.podIP": "192.0.2.10", "status.podIPs": "192.0.2.10,fd00::10", "status.hostIP": "192.0.2.10", "status.hostIPs": "192.0.2.10,fd00::10"} {
		if got, ok, err := FieldRefValue(p, c, ref(path), nil, n); err != nil || !ok || got != want {
			t.Errorf("%s = %q, %v, %v; want %q", path, got, ok, err, want)
		}
	}
	// IPs the caller has (the runtime's, or SyncPod's) are kept.
	if got, _, err := FieldRefValue(p, c, ref("status.podIP"), []string{"192.0.2.99"}, n); err != nil || got != "192.0.2.99" {
		t.Errorf("status.podIP with the pod's IPs = %q, %v", got, err)
	}
	n.HostIPs = nil
	for _, path := range []string{"status.podIP", "status.podIPs"} {
		if got, _, err := FieldRefValue(p, c, ref(path), nil, n); !errors.Is(err, ErrUnknownNodeFact) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s without node IPs = %q, %v; want ErrUnknownNodeFact", path, got, err)
		}
	}
}

// TestRefusals: every setting on the Refusals list is refused with an
// error that names it, never dropped.
func TestRefusals(t *testing.T) {
	tests := []struct {
		name    string
		field   string
		pod     func(*corev1.Pod)
		sandbox bool
	}{
		{"windows", "spec.os.name", func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} }, true},
		{"user namespaces", "spec.hostUsers", func(p *corev1.Pod) { p.Spec.HostUsers = ptr(false) }, true},
		{"pod resource claims", "spec.resourceClaims", func(p *corev1.Pod) { p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu"}} }, true},
		{"container resource claims", "resources.claims", func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}} }, false},
		{"block volumes", "volumeDevices", func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "b", DevicePath: "/dev/xvda"}}
		}, false},
		{"apparmor without AppArmor", "appArmorProfile", func(p *corev1.Pod) {
			p.Spec.SecurityContext.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
		}, true},
		{"strict supplemental groups", "supplementalGroupsPolicy", func(p *corev1.Pod) {
			p.Spec.SecurityContext.SupplementalGroupsPolicy = ptr(corev1.SupplementalGroupsPolicyStrict)
		}, true},
	}
	if len(tests) < len(Refusals) {
		t.Fatalf("%d refusals listed, %d tested", len(Refusals), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod(tt.pod)
			_, sbErr := SandboxConfig(p, 0, node())
			_, cErr := ContainerConfig(Container{Pod: p, Container: &p.Spec.Containers[0], ImageUser: ImageUser{UID: ptr(int64(1))}}, node())
			if tt.sandbox && sbErr == nil {
				t.Fatal("sandbox config built")
			}
			if cErr == nil || !errors.Is(cErr, ErrUnsupported) || !strings.Contains(cErr.Error(), tt.field) {
				t.Fatalf("container config error %v, want ErrUnsupported naming %s", cErr, tt.field)
			}
		})
	}
}

// TestBlockVolumesOnANodeThatMapsThem: with Node.BlockVolumes a
// container's volumeDevices go through as the devices given (the volume
// manager's), and one without its device is refused by name.
func TestBlockVolumesOnANodeThatMapsThem(t *testing.T) {
	p := testPod(func(p *corev1.Pod) {
		p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "b", DevicePath: "/dev/xvda"}}
	})
	n := node()
	n.BlockVolumes = true
	dev := &runtimeapi.Device{ContainerPath: "/dev/xvda", HostPath: "/var/lib/kubelet/pods/u/volumeDevices/kubernetes.io~csi/pv", Permissions: "mrw"}
	cfg, err := ContainerConfig(Container{Pod: p, Container: &p.Spec.Containers[0], ImageUser: ImageUser{UID: ptr(int64(1))}, Devices: []*runtimeapi.Device{dev}}, n)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Devices) != 1 || cfg.Devices[0].HostPath != dev.HostPath || cfg.Devices[0].Permissions != "mrw" {
		t.Errorf("devices %v", cfg.Devices)
	}
	_, err = ContainerConfig(Container{Pod: p, Container: &p.Spec.Containers[0], ImageUser: ImageUser{UID: ptr(int64(1))}}, n)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "volumeDevices") || !strings.Contains(err.Error(), "/dev/xvda") {
		t.Errorf("a volumeDevice without its device: %v", err)
	}
}

// TestResourceClaimsWithDRA: on a node with a DRA manager
// (Node.DynamicResourceAllocation), resource claims are built like any
// other pod; the CDI devices and annotations the devices add reach the
// config, kubelet's annotations winning.
func TestResourceClaimsWithDRA(t *testing.T) {
	p := testPod(func(p *corev1.Pod) {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu"}}
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	})
	n := node()
	n.DynamicResourceAllocation = true
	if _, err := SandboxConfig(p, 0, n); err != nil {
		t.Fatalf("sandbox: %v", err)
	}
	cfg, err := ContainerConfig(Container{Pod: p, Container: &p.Spec.Containers[0], ImageUser: ImageUser{UID: ptr(int64(1))},
		CDIDevices:  []string{"dra.example.com/gpu=gpu-0"},
		Annotations: map[string]string{"x": "y", AnnotationContainerRestartCount: "7"}}, n)
	if err != nil {
		t.Fatalf("container: %v", err)
	}
	if len(cfg.CDIDevices) != 1 || cfg.CDIDevices[0].Name != "dra.example.com/gpu=gpu-0" {
		t.Errorf("CDI devices %v", cfg.CDIDevices)
	}
	if cfg.Annotations["x"] != "y" || cfg.Annotations[AnnotationContainerRestartCount] != "0" {
		t.Errorf("annotations %v", cfg.Annotations)
	}
}

// TestWindowsOptionsIgnoredOnLinux: kubelet v1.37.2 on Linux reads no
// windowsOptions (generatePodSandboxWindowsConfig runs on Windows only):
// the e2e suite's registry pod (a hostProcess container with hostNetwork,
// no spec.os) gets the same sandbox and container configs as without them.
// Found by the [Serial] image-pull conformance specs, whose registry pod
// podstart refused.
func TestWindowsOptionsIgnoredOnLinux(t *testing.T) {
	plain := testPod(func(p *corev1.Pod) {
		p.Spec.HostNetwork = true
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr(int64(5123))}
	})
	win := plain.DeepCopy()
	win.Spec.SecurityContext.WindowsOptions = &corev1.WindowsSecurityContextOptions{RunAsUserName: ptr("x"), HostProcess: ptr(true)}
	win.Spec.Containers[0].SecurityContext.WindowsOptions = &corev1.WindowsSecurityContextOptions{RunAsUserName: ptr(`NT AUTHORITY\SYSTEM`), HostProcess: ptr(true)}
	for _, p := range []*corev1.Pod{plain, win} {
		if _, err := SandboxConfig(p, 0, node()); err != nil {
			t.Fatalf("sandbox: %v", err)
		}
	}
	wantSB, _ := SandboxConfig(plain, 0, node())
	gotSB, _ := SandboxConfig(win, 0, node())
	if gotSB.Windows != nil || !proto.Equal(gotSB, wantSB) {
		t.Errorf("sandbox config with windowsOptions:\n%v\nwithout:\n%v", gotSB, wantSB)
	}
	got := containerConfig(t, win, ImageUser{}, node())
	want := containerConfig(t, plain, ImageUser{}, node())
	if got.Windows != nil || !proto.Equal(got, want) {
		t.Errorf("container config with windowsOptions:\n%v\nwithout:\n%v", got, want)
	}
}

// TestResolvConfDefault: Node's zero ResolvConf is kubelet's default
// --resolv-conf, /etc/resolv.conf, which FromHost reads; NoResolvConf is
// --resolv-conf="". A ClusterFirst pod on a node without cluster DNS gets
// the node's resolv.conf (kubelet's fallback to Default, with its
// MissingClusterDNS warning), not "nameserver 127.0.0.1". Found by the
// conformance run (a ClusterFirst pod on a node without cluster DNS).
func TestResolvConfDefault(t *testing.T) {
	if got := (Node{}).resolvConf(); got != DefaultResolvConf || DefaultResolvConf != "/etc/resolv.conf" {
		t.Fatalf("zero Node's resolv.conf %q", got)
	}
	if got := (Node{ResolvConf: "/x", NoResolvConf: true}).resolvConf(); got != "" {
		t.Fatalf("NoResolvConf: %q", got)
	}
	want, err := os.ReadFile(DefaultResolvConf)
	if got := FromHost(Node{}).ResolvConfContent; (err == nil) != (got != nil) || string(got) != string(want) {
		t.Fatalf("FromHost read %q, want %q (%v)", got, want, err)
	}
	p := testPod(nil) // ClusterFirst
	n := Node{ResolvConfContent: []byte("nameserver 10.0.0.53\nsearch corp.test\n"), HostIPs: []string{"192.0.2.10"}}
	if !MissingClusterDNS(p, n) {
		t.Error("no MissingClusterDNS for a ClusterFirst pod without cluster DNS")
	}
	if got := DNSConfig(p, n); !slices.Equal(got.Servers, []string{"10.0.0.53"}) || !slices.Equal(got.Searches, []string{"corp.test"}) {
		t.Errorf("ClusterFirst without cluster DNS: %v", got)
	}
	n.NoResolvConf = true
	if got := DNSConfig(p, n); !slices.Equal(got.Servers, []string{"127.0.0.1"}) || !slices.Equal(got.Searches, []string{"."}) {
		t.Errorf("ClusterFirst without cluster DNS nor resolv.conf: %v", got)
	}
	n.ClusterDNS = []string{"10.96.0.10"}
	if MissingClusterDNS(p, n) || MissingClusterDNS(testPod(func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSDefault }), Node{}) {
		t.Error("MissingClusterDNS with cluster DNS, or for Default")
	}
}

func TestParseResolvConf(t *testing.T) {
	rc := ParseResolvConf([]byte("# c\nnameserver 1.1.1.1\nnameserver\nsearch a.test. .\nsearch b.test c.test.\noptions ndots:1 rotate\noptions ndots:2\n"))
	if !slices.Equal(rc.Nameservers, []string{"1.1.1.1"}) || !slices.Equal(rc.Searches, []string{"b.test", "c.test"}) || !slices.Equal(rc.Options, []string{"ndots:2", "rotate"}) {
		t.Fatalf("%+v", rc)
	}
}

func TestCRIMounts(t *testing.T) {
	ms := []mounts.Mount{
		{ContainerPath: "/a", HostPath: "/h/a", ReadOnly: true, RecursiveReadOnly: true, Propagation: mounts.PropagationPrivate},
		{ContainerPath: "/b", HostPath: "/h/b", SELinuxRelabel: true, Propagation: mounts.PropagationBidirectional},
		{ContainerPath: "/c", HostPath: "/h/c", Propagation: mounts.PropagationHostToContainer},
	}
	off := CRIMounts(ms, false)
	if off[1].SelinuxRelabel {
		t.Error("relabel asked for with SELinux off")
	}
	on := CRIMounts(ms, true)
	if !on[1].SelinuxRelabel || !on[0].Readonly || !on[0].RecursiveReadOnly || on[0].HostPath != "/h/a" || on[0].ContainerPath != "/a" {
		t.Errorf("converted: %v", on)
	}
	for i, want := range []runtimeapi.MountPropagation{runtimeapi.MountPropagation_PROPAGATION_PRIVATE,
		runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER} {
		if on[i].Propagation != want || ms[i].Propagation.String() != want.String() {
			t.Errorf("mount %d: propagation %v (%s), want %v", i, on[i].Propagation, ms[i].Propagation, want)
		}
	}
}

// TestSandboxSysctls follows kubelet v1.37.2's
// TestConvertPodSysctlsVariableToDotsSeparator: SyncPod normalises the
// names before RunPodSandbox; a name whose first separator is a dot is
// kept, one whose first is a slash has dots and slashes swapped.
func TestSandboxSysctls(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"dotted", "kernel.msgmax", "kernel.msgmax"},
		{"dotted with an underscore", "kernel.shm_rmid_forced", "kernel.shm_rmid_forced"},
		{"dotted with a slash in an interface name", "net.ipv4.conf.eno2/100.rp_filter", "net.ipv4.conf.eno2/100.rp_filter"},
		{"slashed", "net/ipv4/ip_local_port_range", "net.ipv4.ip_local_port_range"},
		{"slashed with a dot in an interface name", "net/ipv4/conf/eno2.100/rp_filter", "net.ipv4.conf.eno2/100.rp_filter"},
		{"no separator", "kernel", "kernel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod(func(p *corev1.Pod) { p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: tt.in, Value: "v"}} })
			cfg, err := SandboxConfig(p, 0, node())
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Linux.Sysctls; len(got) != 1 || got[tt.want] != "v" {
				t.Fatalf("sysctls %v, want {%s: v}", got, tt.want)
			}
			if p.Spec.SecurityContext.Sysctls[0].Name != tt.in {
				t.Fatalf("the pod was changed: %q", p.Spec.SecurityContext.Sysctls[0].Name)
			}
		})
	}
}

// hugePageUnit is kubelet's HugePageUnitSizeFromByteSize.
func TestHugePageUnit(t *testing.T) {
	for size, want := range map[int64]string{1: "1B", 1023: "1023B", 1024: "1KB", 1536: "1536B", 2 << 20: "2MB", 1 << 30: "1GB", 1 << 50: "1PB", 1 << 60: "1024PB"} {
		if got := hugePageUnit(size); got != want {
			t.Errorf("hugePageUnit(%d) = %q, want %q", size, got, want)
		}
	}
}
