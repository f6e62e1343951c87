package validationdiff

import (
	"fmt"
	"math/rand/v2"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// gen builds random valid pods: every value is one the API server accepts,
// and every cross-field rule (unique names, mounts of existing volumes,
// requests within limits, probes only where allowed) holds. TestValidatePod
// checks that the API server accepts each base before it mutates it.
type gen struct {
	r     *rand.Rand
	n     int   // a counter that keeps generated names unique
	grace int64 // the pod's termination grace period (30 if unset): sleep hooks stay within it
}

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }
func (g *gen) intn(n int) int        { return g.r.IntN(n) }
func pick[T any](r *rand.Rand, list []T) T {
	return list[r.IntN(len(list))]
}

// label is a random DNS label (also a valid container, volume and
// namespace name), unique within the pod.
func (g *gen) label(prefix string) string {
	g.n++
	s := fmt.Sprintf("%s%d", prefix, g.n)
	if g.chance(0.3) {
		s += "-" + pick(g.r, []string{"a", "web", "x9", "side-car", "z"})
	}
	return s
}

// subdomain is a random DNS subdomain.
func (g *gen) subdomain() string {
	parts := []string{g.label("n")}
	for range g.intn(3) {
		parts = append(parts, pick(g.r, []string{"example", "com", "svc", "a-b", "k8s", "0"}))
	}
	return strings.Join(parts, ".")
}

func (g *gen) ptr32(v int32) *int32 { return &v }
func (g *gen) ptr64(v int64) *int64 { return &v }
func ptrBool(v bool) *bool          { return &v }

// maybe32 is nil or one of vals.
func (g *gen) maybe32(p float64, vals ...int32) *int32 {
	if !g.chance(p) {
		return nil
	}
	return g.ptr32(pick(g.r, vals))
}

func (g *gen) maybe64(p float64, vals ...int64) *int64 {
	if !g.chance(p) {
		return nil
	}
	return g.ptr64(pick(g.r, vals))
}

var (
	validModes    = []int32{0, 0o400, 0o440, 0o444, 0o600, 0o640, 0o644, 0o700, 0o755, 0o777}
	configKeys    = []string{"key", "app.conf", "a_b", "A-B", ".hidden", "tls.crt", "x"}
	fieldPaths    = []string{"metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels", "metadata.annotations", "metadata.labels['app']", "metadata.annotations['team']"}
	envFieldPaths = []string{"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.podIP", "status.podIPs", "metadata.labels['app']", "metadata.annotations['team']"}
	resourceRefs  = []string{"limits.cpu", "limits.memory", "requests.cpu", "requests.memory", "limits.ephemeral-storage", "requests.ephemeral-storage"}
	envNames      = []string{"HOME", "PATH", "A", "_X", "my_var", "MY-VAR", "a.b", "X1", "LANG", "FOO BAR", "1ABC"}
	images        = []string{"nginx", "nginx:1.27", "busybox:1.36", "registry.example.com:5000/team/app:v2", "k8s.gcr.io/pause:3.9", "alpine@sha256:" + strings.Repeat("ab", 32)}
	sysctlsSafe   = []corev1.Sysctl{
		{Name: "kernel.shm_rmid_forced", Value: "0"}, {Name: "net.ipv4.ip_local_port_range", Value: "1024 65000"},
		{Name: "net.ipv4.tcp_syncookies", Value: "1"}, {Name: "net.ipv4.ping_group_range", Value: "0 2147483647"},
		{Name: "net.ipv4.ip_unprivileged_port_start", Value: "80"}, {Name: "kernel.msgmax", Value: "65536"},
		{Name: "net/ipv4/tcp_keepalive_time", Value: "600"}, {Name: "net.core.somaxconn", Value: "1024"},
		{Name: "kernel.sem", Value: "250 32000 100 128"}, {Name: "net.ipv4.conf.eth0.forwarding", Value: "1"},
	}
)

// quantity parses s.
func q(s string) resource.Quantity { return resource.MustParse(s) }

// pod returns a random valid pod.
func (g *gen) pod() *corev1.Pod {
	g.n = 0
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      g.subdomain(),
			Namespace: pick(g.r, []string{"default", "kube-system", "team-a", "ns1", ""}),
			UID:       types.UID(fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", g.r.Uint32(), g.intn(1<<16), g.intn(1<<12), g.intn(1<<12), g.r.Uint64()>>16)),
		},
	}
	if g.chance(0.7) {
		pod.Labels = map[string]string{"app": pick(g.r, []string{"web", "db", "a.b-c_d", ""})}
		if g.chance(0.5) {
			pod.Labels["example.com/tier"] = "front"
		}
	}
	if g.chance(0.6) {
		pod.Annotations = map[string]string{"team": pick(g.r, []string{"x", "", "any value / with spaces"})}
		if g.chance(0.3) {
			pod.Annotations["example.com/note"] = strings.Repeat("n", g.intn(200))
		}
	}
	spec := &pod.Spec
	spec.TerminationGracePeriodSeconds = g.maybe64(0.5, 0, 1, 30, 600)
	g.grace = 30
	if spec.TerminationGracePeriodSeconds != nil {
		g.grace = *spec.TerminationGracePeriodSeconds
	}
	spec.Volumes = g.volumes()
	for range 1 + g.intn(3) {
		spec.Containers = append(spec.Containers, g.container(spec.Volumes, false, false))
	}
	for range g.intn(3) {
		sidecar := g.chance(0.4)
		spec.InitContainers = append(spec.InitContainers, g.container(spec.Volumes, true, sidecar))
	}
	spec.RestartPolicy = pick(g.r, []corev1.RestartPolicy{"", "Always", "OnFailure", "Never"})
	spec.ActiveDeadlineSeconds = g.maybe64(0.3, 1, 60, 3600)
	spec.DNSPolicy = pick(g.r, []corev1.DNSPolicy{"", "ClusterFirst", "Default", "ClusterFirstWithHostNet", "None"})
	if spec.DNSPolicy == "None" || g.chance(0.3) {
		spec.DNSConfig = &corev1.PodDNSConfig{
			Nameservers: []string{pick(g.r, []string{"10.0.0.10", "8.8.8.8", "2001:db8::1"})},
			Searches:    []string{"svc.cluster.local", "example.com"}[:g.intn(3)],
		}
		if g.chance(0.5) {
			spec.DNSConfig.Options = []corev1.PodDNSConfigOption{{Name: "ndots", Value: new("2")}, {Name: "edns0"}}
		}
	}
	if g.chance(0.3) {
		spec.HostAliases = []corev1.HostAlias{{IP: pick(g.r, []string{"127.0.0.1", "10.1.2.3", "::1"}), Hostnames: []string{"foo.local", "bar"}}}
	}
	if g.chance(0.3) {
		spec.Hostname = g.label("h")
	}
	if g.chance(0.2) {
		spec.Subdomain = g.label("s")
	}
	if g.chance(0.5) || len(tokens(pod)) > 0 { // a token projection needs a service account
		spec.ServiceAccountName = pick(g.r, []string{"default", "builder", "sa.example"})
	}
	if g.chance(0.3) {
		spec.AutomountServiceAccountToken = ptrBool(g.chance(0.5))
	}
	if g.chance(0.2) {
		spec.EnableServiceLinks = ptrBool(g.chance(0.5))
	}
	if g.chance(0.2) {
		spec.NodeName = pick(g.r, []string{"node-1", "worker.example.com"})
	}
	if g.chance(0.2) {
		spec.HostUsers = ptrBool(g.chance(0.5))
	}
	if g.chance(0.15) && (spec.HostUsers == nil || *spec.HostUsers) {
		spec.HostIPC = true
	}
	if g.chance(0.1) && (spec.HostUsers == nil || *spec.HostUsers) {
		spec.HostPID = true
	} else if g.chance(0.1) {
		spec.ShareProcessNamespace = ptrBool(true)
	}
	if g.chance(0.1) && !spec.HostIPC && !spec.HostPID && spec.HostUsers == nil {
		// Host network: host ports default to the container ports, which
		// are then unique in the pod; no net sysctls.
		spec.HostNetwork = true
		for _, c := range containers(pod) {
			for i := range c.Ports {
				g.n++
				c.Ports[i].ContainerPort = 10000 + int32(g.n)
				c.Ports[i].HostPort = 0
				if g.chance(0.3) {
					c.Ports[i].HostPort = c.Ports[i].ContainerPort
				}
			}
		}
		if spec.DNSPolicy == "" || g.chance(0.5) {
			spec.DNSPolicy = "ClusterFirstWithHostNet"
		}
	}
	if g.chance(0.6) {
		spec.SecurityContext = g.podSecurityContext(spec.HostIPC, spec.HostNetwork)
	}
	if g.chance(0.2) {
		spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux", "disk": pick(g.r, []string{"ssd", ""})}
	}
	if g.chance(0.15) {
		spec.PriorityClassName = pick(g.r, []string{"system-node-critical", "high.priority"})
	}
	if g.chance(0.1) {
		spec.PreemptionPolicy = new(pick(g.r, []corev1.PreemptionPolicy{"PreemptLowerPriority", "Never"}))
	}
	if g.chance(0.15) {
		spec.RuntimeClassName = new(pick(g.r, []string{"runc", "gvisor.example"}))
	}
	if g.chance(0.1) {
		spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pick(g.r, []corev1.PodConditionType{"example.com/ready", "Ready2"})}}
	}
	if g.chance(0.15) {
		spec.OS = &corev1.PodOS{Name: corev1.Linux}
	}
	if g.chance(0.15) {
		spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
	}
	if g.chance(0.1) && !spec.HostNetwork {
		spec.HostnameOverride = new(pick(g.r, []string{"my-host", "a.b.example"}))
	}
	if g.chance(0.15) {
		// Pod-level resources (PodLevelResources, on in v1.37): limits
		// above any container's, requests above the containers' sum.
		spec.Resources = &corev1.ResourceRequirements{}
		if g.chance(0.7) {
			spec.Resources.Limits = corev1.ResourceList{"cpu": q(pick(g.r, []string{"16", "32"})), "memory": q("16Gi")}
		}
		if g.chance(0.5) {
			spec.Resources.Requests = corev1.ResourceList{"cpu": q("12"), "memory": q(pick(g.r, []string{"12Gi", "16Gi"}))}
		}
	}
	if g.chance(0.1) {
		spec.Overhead = corev1.ResourceList{"cpu": q(pick(g.r, []string{"100m", "250m"})), "memory": q("64Mi")}
	}
	if g.chance(0.1) && spec.Hostname != "" && spec.HostnameOverride == nil {
		spec.SetHostnameAsFQDN = ptrBool(g.chance(0.5))
	}
	return pod
}

func (g *gen) podSecurityContext(hostIPC, hostNet bool) *corev1.PodSecurityContext {
	sc := &corev1.PodSecurityContext{
		RunAsUser:    g.maybe64(0.4, 0, 1000, 65534, 2147483647),
		RunAsGroup:   g.maybe64(0.3, 0, 1000, 3000),
		RunAsNonRoot: nil,
		FSGroup:      g.maybe64(0.3, 0, 2000, 65534),
	}
	if g.chance(0.3) {
		sc.RunAsNonRoot = ptrBool(g.chance(0.5))
	}
	if g.chance(0.3) {
		sc.SupplementalGroups = []int64{1, 2000, 2147483647}[:1+g.intn(3)]
	}
	if g.chance(0.2) {
		sc.SupplementalGroupsPolicy = new(pick(g.r, []corev1.SupplementalGroupsPolicy{"Merge", "Strict"}))
	}
	if sc.FSGroup != nil && g.chance(0.4) {
		sc.FSGroupChangePolicy = new(pick(g.r, []corev1.PodFSGroupChangePolicy{"OnRootMismatch", "Always"}))
	}
	if g.chance(0.4) {
		seen := map[string]bool{}
		for range 1 + g.intn(3) {
			s := pick(g.r, sysctlsSafe)
			norm := strings.ReplaceAll(s.Name, "/", ".")
			if seen[norm] || (hostIPC && (strings.HasPrefix(norm, "kernel.shm") || strings.HasPrefix(norm, "kernel.msg") || norm == "kernel.sem")) || (hostNet && strings.HasPrefix(norm, "net.")) {
				continue
			}
			seen[norm] = true
			sc.Sysctls = append(sc.Sysctls, s)
		}
	}
	sc.SeccompProfile = g.seccomp(0.3)
	if g.chance(0.2) {
		sc.SELinuxOptions = &corev1.SELinuxOptions{User: "system_u", Role: "system_r", Type: "container_t", Level: "s0:c1,c2"}
	}
	if g.chance(0.1) {
		sc.SELinuxChangePolicy = new(pick(g.r, []corev1.PodSELinuxChangePolicy{"MountOption", "Recursive"}))
	}
	if g.chance(0.15) {
		sc.AppArmorProfile = g.appArmor()
	}
	return sc
}

func (g *gen) seccomp(p float64) *corev1.SeccompProfile {
	if !g.chance(p) {
		return nil
	}
	switch g.intn(3) {
	case 0:
		return &corev1.SeccompProfile{Type: "RuntimeDefault"}
	case 1:
		return &corev1.SeccompProfile{Type: "Unconfined"}
	}
	return &corev1.SeccompProfile{Type: "Localhost", LocalhostProfile: new(pick(g.r, []string{"profiles/audit.json", "my.json"}))}
}

func (g *gen) appArmor() *corev1.AppArmorProfile {
	switch g.intn(3) {
	case 0:
		return &corev1.AppArmorProfile{Type: "RuntimeDefault"}
	case 1:
		return &corev1.AppArmorProfile{Type: "Unconfined"}
	}
	return &corev1.AppArmorProfile{Type: "Localhost", LocalhostProfile: new("k8s-apparmor-example")}
}

// volumes returns 0 to 5 volumes of the types podstart supports.
func (g *gen) volumes() []corev1.Volume {
	var vols []corev1.Volume
	for range g.intn(6) {
		v := corev1.Volume{Name: g.label("vol")}
		switch g.intn(7) {
		case 0:
			v.HostPath = &corev1.HostPathVolumeSource{Path: pick(g.r, []string{"/var/lib/data", "/tmp", "/", "/etc/ssl/certs", "/data/a b", "relative/ok"})}
			if g.chance(0.6) {
				v.HostPath.Type = new(pick(g.r, []corev1.HostPathType{"", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"}))
			}
		case 1:
			v.EmptyDir = &corev1.EmptyDirVolumeSource{}
			if g.chance(0.4) {
				v.EmptyDir.Medium = pick(g.r, []corev1.StorageMedium{"", "Memory"})
			}
			if g.chance(0.4) {
				v.EmptyDir.SizeLimit = new(q(pick(g.r, []string{"1Gi", "64Mi", "500M", "1"})))
			}
		case 2:
			v.Secret = &corev1.SecretVolumeSource{SecretName: g.subdomain(), Items: g.keyToPaths(""), DefaultMode: g.maybe32(0.4, validModes...)}
			if g.chance(0.3) {
				v.Secret.Optional = ptrBool(g.chance(0.5))
			}
		case 3:
			v.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: g.subdomain()}, Items: g.keyToPaths(""), DefaultMode: g.maybe32(0.4, validModes...)}
		case 4:
			v.DownwardAPI = &corev1.DownwardAPIVolumeSource{Items: g.downwardFiles(""), DefaultMode: g.maybe32(0.4, validModes...)}
		case 5:
			v.Projected = &corev1.ProjectedVolumeSource{DefaultMode: g.maybe32(0.4, validModes...)}
			for i := range 1 + g.intn(4) {
				dir := fmt.Sprintf("s%d/", i)
				var p corev1.VolumeProjection
				switch g.intn(4) {
				case 0:
					p.Secret = &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: g.subdomain()}, Items: g.keyToPaths(dir)}
				case 1:
					p.ConfigMap = &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: g.subdomain()}, Items: g.keyToPaths(dir)}
				case 2:
					p.DownwardAPI = &corev1.DownwardAPIProjection{Items: g.downwardFiles(dir)}
				case 3:
					p.ServiceAccountToken = &corev1.ServiceAccountTokenProjection{Path: dir + "token", ExpirationSeconds: g.maybe64(0.5, 600, 3600, 86400)}
					if g.chance(0.4) {
						p.ServiceAccountToken.Audience = "vault"
					}
				}
				v.Projected.Sources = append(v.Projected.Sources, p)
			}
		case 6:
			v.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: g.subdomain(), ReadOnly: g.chance(0.3)}
		}
		vols = append(vols, v)
	}
	return vols
}

func (g *gen) keyToPaths(dir string) []corev1.KeyToPath {
	var items []corev1.KeyToPath
	for i := range g.intn(3) {
		items = append(items, corev1.KeyToPath{
			Key:  pick(g.r, configKeys),
			Path: dir + pick(g.r, []string{"a", "conf/app.conf", "data..x", "x..y", "a/b/c", ".hidden"}) + fmt.Sprint(i),
			Mode: g.maybe32(0.3, validModes...),
		})
	}
	return items
}

func (g *gen) downwardFiles(dir string) []corev1.DownwardAPIVolumeFile {
	var items []corev1.DownwardAPIVolumeFile
	for i := range g.intn(3) {
		f := corev1.DownwardAPIVolumeFile{Path: fmt.Sprintf("%sinfo/%d", dir, i), Mode: g.maybe32(0.3, validModes...)}
		if g.chance(0.7) {
			f.FieldRef = &corev1.ObjectFieldSelector{FieldPath: pick(g.r, fieldPaths)}
			if g.chance(0.5) {
				f.FieldRef.APIVersion = "v1"
			}
		} else {
			// In a volume, the container is required; it need not exist.
			f.ResourceFieldRef = &corev1.ResourceFieldSelector{ContainerName: "c1", Resource: pick(g.r, resourceRefs)}
			if g.chance(0.3) {
				if strings.HasSuffix(f.ResourceFieldRef.Resource, "cpu") {
					f.ResourceFieldRef.Divisor = q(pick(g.r, []string{"1", "1m"}))
				} else {
					f.ResourceFieldRef.Divisor = q(pick(g.r, []string{"1", "1Mi", "1Gi", "1k"}))
				}
			}
		}
		items = append(items, f)
	}
	return items
}

// container returns a random valid container mounting some of vols. An
// init container that is not a sidecar has no probes and no lifecycle.
func (g *gen) container(vols []corev1.Volume, init, sidecar bool) corev1.Container {
	c := corev1.Container{
		Name:  g.label("c"),
		Image: pick(g.r, images),
	}
	if sidecar {
		c.RestartPolicy = new(corev1.ContainerRestartPolicyAlways)
	}
	if g.chance(0.4) {
		c.Command = []string{"/bin/sh", "-c"}
		c.Args = []string{"echo $(HOME)"}
	}
	if g.chance(0.2) {
		c.WorkingDir = pick(g.r, []string{"/", "/app", "relative"})
	}
	c.ImagePullPolicy = pick(g.r, []corev1.PullPolicy{"", "Always", "IfNotPresent", "Never"})
	c.TerminationMessagePolicy = pick(g.r, []corev1.TerminationMessagePolicy{"", "File", "FallbackToLogsOnError"})
	if g.chance(0.3) {
		c.TerminationMessagePath = pick(g.r, []string{"/dev/termination-log", "/tmp/msg"})
	}
	if g.chance(0.1) {
		c.Stdin, c.TTY = true, g.chance(0.5)
	}
	// Ports: unique names within the container.
	for i := range g.intn(3) {
		p := corev1.ContainerPort{ContainerPort: pick(g.r, []int32{80, 443, 8080, 9090, 1, 65535}) + int32(i)%2}
		if p.ContainerPort > 65535 {
			p.ContainerPort = 65535 - int32(i)
		}
		if g.chance(0.5) {
			p.Name = fmt.Sprintf("%s-%d", pick(g.r, []string{"http", "metrics", "grpc", "p"}), i)
		}
		p.Protocol = pick(g.r, []corev1.Protocol{"", "TCP", "UDP", "SCTP"})
		if g.chance(0.1) {
			g.n++
			p.HostPort = 30000 + int32(g.n)
		}
		c.Ports = append(c.Ports, p)
	}
	// Env and envFrom.
	for range g.intn(4) {
		e := corev1.EnvVar{Name: pick(g.r, envNames)}
		switch g.intn(6) {
		case 0:
			e.ValueFrom = &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: pick(g.r, envFieldPaths)}}
		case 1:
			e.ValueFrom = &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: pick(g.r, resourceRefs)}}
		case 2:
			e.ValueFrom = &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: pick(g.r, configKeys)}}
		case 3:
			e.ValueFrom = &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: pick(g.r, configKeys)}}
		default:
			e.Value = pick(g.r, []string{"", "v", "$(HOME)/x", "a=b", "line\nbreak"})
		}
		c.Env = append(c.Env, e)
	}
	for range g.intn(3) {
		var s corev1.EnvFromSource
		if g.chance(0.5) {
			s.ConfigMapRef = &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: g.subdomain()}}
		} else {
			s.SecretRef = &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: g.subdomain()}}
		}
		if g.chance(0.3) {
			s.Prefix = pick(g.r, []string{"P_", "app.", "x-", "1"})
		}
		c.EnvFrom = append(c.EnvFrom, s)
	}
	// Volume mounts: unique mount paths.
	for i, v := range vols {
		if !g.chance(0.5) {
			continue
		}
		m := corev1.VolumeMount{Name: v.Name, MountPath: fmt.Sprintf("/mnt/%s/%d", v.Name, i), ReadOnly: g.chance(0.3)}
		switch g.intn(4) {
		case 0:
			m.SubPath = pick(g.r, []string{"sub", "a/b", "x..y", "..data"})
		case 1:
			m.SubPathExpr = pick(g.r, []string{"$(POD_NAME)", "logs/$(HOME)", "plain"})
		}
		c.VolumeMounts = append(c.VolumeMounts, m)
	}
	// Probes and lifecycle: not on init containers that are not sidecars.
	if !init || sidecar {
		if g.chance(0.4) {
			c.LivenessProbe = g.probe(true)
		}
		if g.chance(0.4) {
			c.ReadinessProbe = g.probe(false)
			c.ReadinessProbe.TerminationGracePeriodSeconds = nil
		}
		if g.chance(0.2) {
			c.StartupProbe = g.probe(true)
		}
		if g.chance(0.3) {
			c.Lifecycle = &corev1.Lifecycle{PostStart: g.handler(), PreStop: g.handler()}
		}
	}
	c.Resources = g.resources()
	if !init && g.chance(0.15) {
		// ContainerRestartRules (beta, on in v1.37).
		c.RestartPolicy = new(pick(g.r, []corev1.ContainerRestartPolicy{"Never", "OnFailure", "Always"}))
		if *c.RestartPolicy == "Never" && g.chance(0.6) {
			c.RestartPolicyRules = []corev1.ContainerRestartRule{{Action: "Restart", ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{
				Operator: pick(g.r, []corev1.ContainerRestartRuleOnExitCodesOperator{"In", "NotIn"}), Values: []int32{42, 0}[:1+g.intn(2)],
			}}}
		}
	}
	if !init && g.chance(0.1) {
		c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: "NotRequired"}, {ResourceName: "memory", RestartPolicy: "NotRequired"}}
	}
	if g.chance(0.4) {
		c.SecurityContext = g.securityContext()
	}
	return c
}

func (g *gen) handler() *corev1.LifecycleHandler {
	switch g.intn(5) {
	case 0:
		return nil
	case 1:
		return &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "true"}}}
	case 2:
		return &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/hook", Port: intstr.FromInt32(8080)}}
	case 3:
		return &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}}
	}
	return &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: min(g.grace, pick(g.r, []int64{0, 1, 5, 30}))}}
}

// probe returns a valid probe; a liveness or startup probe (one) has a
// success threshold of 1.
func (g *gen) probe(one bool) *corev1.Probe {
	p := &corev1.Probe{}
	switch g.intn(4) {
	case 0:
		p.Exec = &corev1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}
	case 1:
		p.HTTPGet = &corev1.HTTPGetAction{Path: pick(g.r, []string{"", "/healthz", "/a?b=c"}), Port: pick(g.r, []intstr.IntOrString{intstr.FromInt32(8080), intstr.FromString("http"), intstr.FromInt32(1)})}
		p.HTTPGet.Scheme = pick(g.r, []corev1.URIScheme{"", "HTTP", "HTTPS"})
		if g.chance(0.3) {
			p.HTTPGet.HTTPHeaders = []corev1.HTTPHeader{{Name: "X-Custom", Value: "v"}}
		}
	case 2:
		p.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(pick(g.r, []int32{22, 8080, 65535}))}
	case 3:
		p.GRPC = &corev1.GRPCAction{Port: pick(g.r, []int32{9090, 50051})}
		if g.chance(0.5) {
			p.GRPC.Service = new("liveness")
		}
	}
	p.InitialDelaySeconds = pick(g.r, []int32{0, 0, 5})
	p.TimeoutSeconds = pick(g.r, []int32{0, 1, 10})
	p.PeriodSeconds = pick(g.r, []int32{0, 1, 10})
	p.FailureThreshold = pick(g.r, []int32{0, 1, 3})
	if one {
		p.SuccessThreshold = pick(g.r, []int32{0, 1})
	} else {
		p.SuccessThreshold = pick(g.r, []int32{0, 1, 2, 5})
	}
	if one && g.chance(0.2) {
		p.TerminationGracePeriodSeconds = g.ptr64(pick(g.r, []int64{1, 30}))
	}
	return p
}

// resources returns requests within limits; integer-only resources are
// integers and have equal requests and limits.
func (g *gen) resources() corev1.ResourceRequirements {
	var rr corev1.ResourceRequirements
	if g.chance(0.4) {
		return rr
	}
	rr.Limits, rr.Requests = corev1.ResourceList{}, corev1.ResourceList{}
	type res struct {
		name        corev1.ResourceName
		small, big  []string
		integerOnly bool
	}
	all := []res{
		{"cpu", []string{"100m", "0.5", "1", "250m"}, []string{"1", "2", "4000m"}, false},
		{"memory", []string{"64Mi", "128M", "1Gi"}, []string{"1Gi", "2Gi"}, false},
		{"ephemeral-storage", []string{"1Gi", "500Mi"}, []string{"2Gi", "10G"}, false},
		{"example.com/gpu", []string{"1", "2"}, nil, true},
	}
	for _, x := range all {
		if !g.chance(0.5) {
			continue
		}
		if x.integerOnly {
			v := q(pick(g.r, x.small))
			rr.Limits[x.name] = v
			if g.chance(0.5) {
				rr.Requests[x.name] = v
			}
			continue
		}
		switch g.intn(3) {
		case 0:
			rr.Requests[x.name] = q(pick(g.r, x.small))
		case 1:
			rr.Limits[x.name] = q(pick(g.r, x.big))
		default:
			rr.Requests[x.name] = q(pick(g.r, x.small))
			rr.Limits[x.name] = q(pick(g.r, x.big))
		}
	}
	if len(rr.Limits) == 0 {
		rr.Limits = nil
	}
	if len(rr.Requests) == 0 {
		rr.Requests = nil
	}
	return rr
}

func (g *gen) securityContext() *corev1.SecurityContext {
	sc := &corev1.SecurityContext{
		RunAsUser:  g.maybe64(0.3, 0, 1000, 65534),
		RunAsGroup: g.maybe64(0.2, 0, 1000),
	}
	if g.chance(0.3) {
		sc.Capabilities = &corev1.Capabilities{}
		if g.chance(0.6) {
			sc.Capabilities.Add = []corev1.Capability{"NET_ADMIN", "SYS_TIME"}[:1+g.intn(2)]
		}
		if g.chance(0.6) {
			sc.Capabilities.Drop = []corev1.Capability{"ALL"}
		}
	}
	if g.chance(0.2) {
		sc.Privileged = ptrBool(g.chance(0.5))
	}
	if g.chance(0.3) && (sc.Privileged == nil || !*sc.Privileged) && (sc.Capabilities == nil || len(sc.Capabilities.Add) == 0 || g.chance(0.5)) {
		sc.AllowPrivilegeEscalation = ptrBool(g.chance(0.5))
		if !*sc.AllowPrivilegeEscalation && sc.Capabilities != nil {
			// CAP_SYS_ADMIN with allowPrivilegeEscalation false is refused.
			for _, c := range sc.Capabilities.Add {
				if c == "SYS_ADMIN" || c == "CAP_SYS_ADMIN" {
					sc.AllowPrivilegeEscalation = nil
				}
			}
		}
	}
	if g.chance(0.2) {
		sc.RunAsNonRoot = ptrBool(g.chance(0.5))
		if *sc.RunAsNonRoot && sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			sc.RunAsUser = g.ptr64(1000)
		}
	}
	if g.chance(0.2) {
		sc.ReadOnlyRootFilesystem = ptrBool(g.chance(0.5))
	}
	if g.chance(0.1) {
		sc.ProcMount = new(corev1.DefaultProcMount)
	}
	sc.SeccompProfile = g.seccomp(0.2)
	if g.chance(0.1) {
		sc.AppArmorProfile = g.appArmor()
	}
	if g.chance(0.1) {
		sc.SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t"}
	}
	return sc
}
