package kubelet

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// outcome is what the real kubelet does with a pod on this node.
type outcome int

const (
	runs            outcome = iota // sandbox and containers are created (but for refused ones)
	rejected                       // admission rejects it: no pod cgroup, no sandbox
	noSandboxConfig                // its pod cgroup is made, but not its sandbox config: no RunPodSandbox
	sandboxFails                   // RunPodSandbox is sent and fails
)

// podCase is one static pod of the table.
type podCase struct {
	name    string
	pod     *corev1.Pod
	refused []string // containers kubelet refuses with CreateContainerConfigError
	kubelet outcome
}

const namespace = "podstart-kubelet"

func ptr[T any](v T) *T { return &v }

func q(s string) resource.Quantity { return resource.MustParse(s) }

// sleeper is a container that stays up until it is killed.
func sleeper(name string) corev1.Container {
	return corev1.Container{Name: name, Image: image, Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}}
}

// done is an init container that succeeds at once.
func done(name string) corev1.Container {
	return corev1.Container{Name: name, Image: image, Command: []string{"sh", "-c", "exit 0"}}
}

// image is the busybox image of the e2e environment's open registry; set
// by the test before the table is built.
var image string

func mkPod(name string, f func(p *corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{sleeper("c")}},
	}
	if f != nil {
		f(p)
	}
	return p
}

func rl(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = q(kv[i+1])
	}
	return l
}

// podTable is the table of pods; together they use every field issue 11
// names that this node can run.
func podTable(hostDir string) []podCase {
	return []podCase{
		{name: "besteffort", pod: mkPod("besteffort", nil)},
		{name: "burstable", pod: mkPod("burstable", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl("cpu", "50m", "memory", "32Mi"), Limits: rl("memory", "64Mi")}
			p.Spec.Containers = append(p.Spec.Containers, sleeper("limits-cpu"))
			p.Spec.Containers[1].Resources = corev1.ResourceRequirements{Requests: rl("cpu", "10m"), Limits: rl("cpu", "250m")}
		})},
		{name: "guaranteed", pod: mkPod("guaranteed", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, sleeper("c2"))
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "64Mi"), Limits: rl("cpu", "100m", "memory", "64Mi")}
			p.Spec.Containers[1].Resources = corev1.ResourceRequirements{Limits: rl("cpu", "50m", "memory", "32Mi")} // requests default to limits
		})},
		{name: "overhead", pod: mkPod("overhead", func(p *corev1.Pod) {
			p.Spec.Overhead = rl("cpu", "10m", "memory", "8Mi")
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: rl("cpu", "100m", "memory", "64Mi")}
		})},
		// Pod-level resources (v1.37: PodLevelResourcesFixDefaulting and
		// PodLevelResourcesFixKubeletQOSClass): a container without limits
		// reads the pod's limits through resourceFieldRef, and an empty
		// pod-level block does not decide the QoS class.
		{name: "pod-level", pod: mkPod("pod-level", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "64Mi"), Limits: rl("cpu", "200m", "memory", "128Mi")}
			res := func(name, r string) corev1.EnvVar {
				return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: r}}}
			}
			p.Spec.Containers[0].Env = []corev1.EnvVar{res("CPU_LIMIT", "limits.cpu"), res("MEM_LIMIT", "limits.memory"), res("CPU_REQUEST", "requests.cpu"), res("MEM_REQUEST", "requests.memory")}
			p.Spec.Containers = append(p.Spec.Containers, sleeper("limited"))
			p.Spec.Containers[1].Resources = corev1.ResourceRequirements{Requests: rl("cpu", "50m", "memory", "32Mi"), Limits: rl("cpu", "50m", "memory", "32Mi")}
		})},
		{name: "pod-level-empty", pod: mkPod("pod-level-empty", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{}
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "64Mi"), Limits: rl("cpu", "100m", "memory", "64Mi")}
		})},
		{name: "run-as", pod: mkPod("run-as", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(3000))}
			p.Spec.Containers = append(p.Spec.Containers, sleeper("override"))
			p.Spec.Containers[1].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr(int64(2000)), RunAsGroup: ptr(int64(4000))}
		})},
		{name: "non-root", refused: []string{"root-image"}, pod: mkPod("non-root", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr(true)}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr(int64(1000))}
			p.Spec.Containers = append(p.Spec.Containers, sleeper("root-image")) // busybox runs as root
		})},
		{name: "non-root-uid0", refused: []string{"c"}, pod: mkPod("non-root-uid0", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(0))}
		})},
		{name: "seccomp-pod-default", pod: mkPod("seccomp-pod-default", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		})},
		{name: "seccomp-containers", pod: mkPod("seccomp-containers", func(p *corev1.Pod) {
			p.Spec.Containers = []corev1.Container{sleeper("unconfined"), sleeper("default"), sleeper("localhost")}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
			p.Spec.Containers[1].SecurityContext = &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
			p.Spec.Containers[2].SecurityContext = &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("profiles/allow.json")}}
		})},
		{name: "seccomp-pod-localhost", pod: mkPod("seccomp-pod-localhost", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("profiles/allow.json")}}
			p.Spec.Containers = append(p.Spec.Containers, sleeper("unconfined"))
			p.Spec.Containers[1].SecurityContext = &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
		})},
		{name: "apparmor-unconfined", pod: mkPod("apparmor-unconfined", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}
			p.Spec.Containers = append(p.Spec.Containers, sleeper("field"), sleeper("annotation"))
			p.Spec.Containers[1].SecurityContext = &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}
			p.Annotations = map[string]string{corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "annotation": corev1.DeprecatedAppArmorBetaProfileNameUnconfined}
		})},
		// AppArmor is not enabled on this host: kubelet rejects the pod.
		{name: "apparmor-default", kubelet: rejected, pod: mkPod("apparmor-default", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}}
		})},
		{name: "selinux", pod: mkPod("selinux", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c123,c456"}}
			p.Spec.Containers = append(p.Spec.Containers, sleeper("typed"))
			p.Spec.Containers[1].SecurityContext = &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t", User: "system_u", Role: "system_r"}}
		})},
		{name: "escalation", pod: mkPod("escalation", func(p *corev1.Pod) {
			p.Spec.Containers = []corev1.Container{sleeper("no-escalation"), sleeper("sys-admin"), sleeper("default")}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false)}
			p.Spec.Containers[1].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}
		})},
		{name: "privileged", pod: mkPod("privileged", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, sleeper("plain"))
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
		})},
		{name: "capabilities", pod: mkPod("capabilities", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, sleeper("drop-all"))
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "SYS_TIME"}, Drop: []corev1.Capability{"NET_RAW"}}}
			p.Spec.Containers[1].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
		})},
		{name: "restricted", pod: mkPod("restricted", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(65534)), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}}, ProcMount: ptr(corev1.DefaultProcMount)}
		})},
		// Unmasked /proc needs a user namespace, which containerd 1.6 lacks
		// (on containerd 2 the pod runs: runtimeFeatures.forRuntime).
		{name: "proc-unmasked", kubelet: noSandboxConfig, pod: mkPod("proc-unmasked", func(p *corev1.Pod) {
			p.Spec.HostUsers = ptr(false)
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ProcMount: ptr(corev1.UnmaskedProcMount)}
		})},
		{name: "groups", pod: mkPod("groups", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(1000)), FSGroup: ptr(int64(2000)), SupplementalGroups: []int64{4000, 5000},
				SupplementalGroupsPolicy: ptr(corev1.SupplementalGroupsPolicyMerge), FSGroupChangePolicy: ptr(corev1.FSGroupChangeOnRootMismatch)}
			p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
		})},
		// containerd 1.6 does not report the feature: kubelet rejects the pod
		// (containerd 2 does, and the pod runs: runtimeFeatures.forRuntime).
		{name: "groups-strict", kubelet: rejected, pod: mkPod("groups-strict", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SupplementalGroups: []int64{4000}, SupplementalGroupsPolicy: ptr(corev1.SupplementalGroupsPolicyStrict)}
		})},
		{name: "host-namespaces", pod: mkPod("host-namespaces", func(p *corev1.Pod) {
			p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true
			p.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 18081}}
		})},
		{name: "host-network-default-dns", pod: mkPod("host-network-default-dns", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
		})},
		{name: "share-pid", pod: mkPod("share-pid", func(p *corev1.Pod) {
			p.Spec.ShareProcessNamespace = ptr(true)
			p.Spec.Containers = append(p.Spec.Containers, sleeper("c2"))
		})},
		{name: "sysctls", pod: mkPod("sysctls", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{
				{Name: "kernel.shm_rmid_forced", Value: "1"},
				{Name: "net.ipv4.ip_local_port_range", Value: "1024 65000"},
				{Name: "net/ipv4/conf/lo/rp_filter", Value: "2"}, // slash-separated
			}}
		})},
		// A dotted name with a slash for the dot inside an interface name
		// (eth0.100): kubelet keeps it; the interface does not exist, so the
		// sandbox fails on both sides, but the requests can be compared.
		{name: "sysctl-vlan", kubelet: sandboxFails, pod: mkPod("sysctl-vlan", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.conf.eth0/100.rp_filter", Value: "2"}}}
		})},
		{name: "dns-default", pod: mkPod("dns-default", func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSDefault })},
		{name: "dns-none", pod: mkPod("dns-none", func(p *corev1.Pod) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"192.0.2.53", "192.0.2.54"}, Searches: []string{"example.test", "corp.test"},
				Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr("2")}, {Name: "edns0"}}}
		})},
		{name: "dns-cluster-first-config", pod: mkPod("dns-cluster-first-config", func(p *corev1.Pod) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: []string{"extra.test"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr("3")}, {Name: "single-request"}}}
		})},
		{name: "hostname", pod: mkPod("hostname", func(p *corev1.Pod) {
			p.Spec.Hostname, p.Spec.Subdomain = "web-0", "web"
			p.Spec.SetHostnameAsFQDN = ptr(false)
		})},
		{name: "ports", pod: mkPod("ports", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, sleeper("dns"))
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 80}, {ContainerPort: 8443, HostPort: 18443, HostIP: "127.0.0.1"}}
			p.Spec.Containers[1].Ports = []corev1.ContainerPort{{Name: "dns-udp", ContainerPort: 53, Protocol: corev1.ProtocolUDP}, {Name: "dns-tcp", ContainerPort: 53}}
		})},
		{name: "env", pod: mkPod("env", func(p *corev1.Pod) {
			c := &p.Spec.Containers[0]
			c.Resources = corev1.ResourceRequirements{Requests: rl("cpu", "20m", "memory", "16Mi"), Limits: rl("cpu", "500m", "memory", "128Mi")}
			field := func(name, path string) corev1.EnvVar {
				return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
			}
			res := func(name, r string, div string) corev1.EnvVar {
				s := &corev1.ResourceFieldSelector{Resource: r}
				if div != "" {
					s.Divisor = q(div)
				}
				return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: s}}
			}
			c.Env = []corev1.EnvVar{
				{Name: "PLAIN", Value: "x"}, {Name: "EXPANDED", Value: "$(PLAIN)-$(POD_NAME)-$(MISSING)"},
				field("POD_NAME", "metadata.name"), field("POD_NAMESPACE", "metadata.namespace"), field("POD_UID", "metadata.uid"),
				field("APP", "metadata.labels['app']"), field("NODE", "spec.nodeName"), field("SA", "spec.serviceAccountName"),
				field("POD_IP", "status.podIP"), field("POD_IPS", "status.podIPs"), field("HOST_IP", "status.hostIP"), field("HOST_IPS", "status.hostIPs"),
				res("CPU_LIMIT", "limits.cpu", ""), res("CPU_REQUEST_M", "requests.cpu", "1m"), res("MEM_LIMIT_MI", "limits.memory", "1Mi"),
				res("MEM_REQUEST", "requests.memory", ""),
			}
			c.Command = []string{"sh", "-c", "echo $(POD_NAME) $(EXPANDED); trap 'exit 0' TERM; sleep 3600 & wait"}
			p.Spec.Containers = append(p.Spec.Containers, sleeper("no-limits"))
			p.Spec.Containers[1].Env = []corev1.EnvVar{res("CPU_LIMIT", "limits.cpu", ""), res("MEM_LIMIT", "limits.memory", "")} // node allocatable
		})},
		{name: "volumes", pod: mkPod("volumes", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir, Type: ptr(corev1.HostPathDirectory)}}},
			}
			c := &p.Spec.Containers[0]
			c.Env = []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
			c.VolumeMounts = []corev1.VolumeMount{
				{Name: "scratch", MountPath: "/scratch"},
				{Name: "scratch", MountPath: "/sub", SubPath: "a/b"},
				{Name: "host", MountPath: "/host", ReadOnly: true},
				{Name: "host", MountPath: "/host-sub", SubPath: "data"},
				{Name: "scratch", MountPath: "/expr", SubPathExpr: "$(POD_NAME)"},
			}
		})},
		{name: "init-sidecar", pod: mkPod("init-sidecar", func(p *corev1.Pod) {
			sidecar := sleeper("sidecar")
			sidecar.RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
			p.Spec.InitContainers = []corev1.Container{done("init-1"), sidecar, done("init-2")}
			p.Spec.Containers = append(p.Spec.Containers, sleeper("app-2"))
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl("cpu", "10m")}
		})},
		{name: "grace", pod: mkPod("grace", func(p *corev1.Pod) {
			p.Spec.TerminationGracePeriodSeconds = ptr(int64(7))
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
			p.Spec.Containers[0].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
		})},
		{name: "misc", pod: mkPod("misc", func(p *corev1.Pod) {
			c := &p.Spec.Containers[0]
			c.WorkingDir, c.Stdin, c.StdinOnce, c.TTY = "/tmp", true, true, true
			c.Command, c.Args = []string{"sh"}, []string{"-c", "trap 'exit 0' TERM; sleep 3600 & wait"}
			c.TerminationMessagePath = "/tmp/termination"
			p.Labels["tier"] = "misc"
			p.Annotations = map[string]string{"example.test/note": "kept"}
		})},
	}
}
