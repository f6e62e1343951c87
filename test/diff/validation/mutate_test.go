package validationdiff

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A mutation makes a valid pod hostile in one way; it reports false when
// the pod has nothing it applies to (no volume, no probe, ...).
type mutation struct {
	name  string
	apply func(g *gen, pod *corev1.Pod) bool
}

// Hostile values, shared by several mutations.
var (
	badNames = []string{"", "A", "UPPER", "a..b", "a/b", "..", ".", "-a", "a-", "a_b", "a b", "a.b", "a\x00b",
		strings.Repeat("a", 64), strings.Repeat("a", 254), "é"}
	badPaths    = []string{"..", "../x", "a/../b", "a/..", "/abs", "/", "..x/../y", "x/../../y", "", "a\\..\\b", "..."}
	badModes    = []int32{-1, 0o1000, 1 << 22, 1 << 23, 0o777, 0o4755, 0o2777, 0o7777, 511, 512}
	badIDs      = []int64{-1, -2147483648, 2147483648, 4294967295, 1 << 40, 0, 1000}
	badSysctls  = []string{"", "kernel..shm", "Kernel.shm_rmid_forced", "net.ipv4.", ".net", "a/b//c", "kernel.shm_rmid_forced=1", "kernel.panic", "vm.swappiness", "kernel.modprobe", "net.ipv4.ip_forward", "abc", "fs.mqueue.msg_max", strings.Repeat("k.", 130) + "k"}
	badEnvNames = []string{"", "A=B", "=", "a\x00b", "A\nB", "é", "A B", ".", "..", "-x"}
	badQty      = []string{"-1", "-100m", "0.5", "1500m", "1e18", "9223372036854775807", "123456789012345678901234567890", "0", "1n", "-1Gi", "0.000001"}
)

// containers returns pointers to every container of the pod (init, regular
// and ephemeral containers' common part).
func containers(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		out = append(out, (*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	return out
}

// container1 is a random container of the pod (a scratch one, not in the
// pod, if "no containers" removed them all).
func (g *gen) container1(pod *corev1.Pod) *corev1.Container {
	cs := containers(pod)
	if len(cs) == 0 {
		return &corev1.Container{}
	}
	return pick(g.r, cs)
}

// probes returns pointers to the pod's probe fields that are set.
func probes(pod *corev1.Pod) []*corev1.Probe {
	var out []*corev1.Probe
	for _, c := range containers(pod) {
		for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if p != nil {
				out = append(out, p)
			}
		}
	}
	return out
}

// mounts returns pointers to every volume mount.
func mounts(pod *corev1.Pod) []*corev1.VolumeMount {
	var out []*corev1.VolumeMount
	for _, c := range containers(pod) {
		for i := range c.VolumeMounts {
			out = append(out, &c.VolumeMounts[i])
		}
	}
	return out
}

// keyPaths returns pointers to every items[] entry of secret, configMap
// and projected secret/configMap volumes.
func keyPaths(pod *corev1.Pod) []*corev1.KeyToPath {
	var out []*corev1.KeyToPath
	add := func(items []corev1.KeyToPath) {
		for i := range items {
			out = append(out, &items[i])
		}
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.Secret != nil:
			add(v.Secret.Items)
		case v.ConfigMap != nil:
			add(v.ConfigMap.Items)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					add(s.Secret.Items)
				}
				if s.ConfigMap != nil {
					add(s.ConfigMap.Items)
				}
			}
		}
	}
	return out
}

// downwardFiles returns pointers to every downward API file, in volumes
// and projections.
func downwardFiles(pod *corev1.Pod) []*corev1.DownwardAPIVolumeFile {
	var out []*corev1.DownwardAPIVolumeFile
	add := func(items []corev1.DownwardAPIVolumeFile) {
		for i := range items {
			out = append(out, &items[i])
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.DownwardAPI != nil {
			add(v.DownwardAPI.Items)
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.DownwardAPI != nil {
					add(s.DownwardAPI.Items)
				}
			}
		}
	}
	return out
}

func tokens(pod *corev1.Pod) []*corev1.ServiceAccountTokenProjection {
	var out []*corev1.ServiceAccountTokenProjection
	for _, v := range pod.Spec.Volumes {
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ServiceAccountToken != nil {
					out = append(out, s.ServiceAccountToken)
				}
			}
		}
	}
	return out
}

// defaultModes returns the defaultMode fields of the pod's volumes.
func defaultModes(pod *corev1.Pod) []**int32 {
	var out []**int32
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.Secret != nil:
			out = append(out, &v.Secret.DefaultMode)
		case v.ConfigMap != nil:
			out = append(out, &v.ConfigMap.DefaultMode)
		case v.DownwardAPI != nil:
			out = append(out, &v.DownwardAPI.DefaultMode)
		case v.Projected != nil:
			out = append(out, &v.Projected.DefaultMode)
		}
	}
	return out
}

func (g *gen) volume1(pod *corev1.Pod, ok func(*corev1.Volume) bool) *corev1.Volume {
	var vs []*corev1.Volume
	for i := range pod.Spec.Volumes {
		if ok == nil || ok(&pod.Spec.Volumes[i]) {
			vs = append(vs, &pod.Spec.Volumes[i])
		}
	}
	if len(vs) == 0 {
		return nil
	}
	return pick(g.r, vs)
}

// one applies f to a random element of list, false if it is empty.
func one[T any](g *gen, list []T, f func(T)) bool {
	if len(list) == 0 {
		return false
	}
	f(pick(g.r, list))
	return true
}

func (g *gen) podSC(pod *corev1.Pod) *corev1.PodSecurityContext {
	if pod.Spec.SecurityContext == nil {
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	return pod.Spec.SecurityContext
}

func (g *gen) containerSC(pod *corev1.Pod) *corev1.SecurityContext {
	c := g.container1(pod)
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	return c.SecurityContext
}

func (g *gen) resources1(pod *corev1.Pod) *corev1.ResourceRequirements {
	c := g.container1(pod)
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	return &c.Resources
}

var resourceNamesForMutation = []corev1.ResourceName{"cpu", "memory", "ephemeral-storage", "example.com/gpu", "hugepages-2Mi", "nvidia.com/gpu", "storage", "pods", "UPPER", "a/b/c"}

// catalogue is every hostile mutation TestValidatePod applies; doc.go
// lists them by group.
var catalogue = []mutation{
	// Names.
	{"metadata.name invalid", func(g *gen, p *corev1.Pod) bool { p.Name = pick(g.r, badNames); return true }},
	{"metadata.namespace invalid", func(g *gen, p *corev1.Pod) bool { p.Namespace = pick(g.r, badNames[1:]); return true }},
	{"metadata.uid invalid", func(g *gen, p *corev1.Pod) bool {
		p.UID = types.UID(pick(g.r, []string{"", ".", "..", "a/b", "a\x00b", "x"}))
		return true
	}},
	{"metadata.labels invalid", func(g *gen, p *corev1.Pod) bool {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		if g.chance(0.5) {
			p.Labels[pick(g.r, []string{"a/b/c", "-x", "UPPER/x", "", strings.Repeat("l", 64)})] = "v"
		} else {
			p.Labels["k"] = pick(g.r, []string{"has space", "-x", strings.Repeat("v", 64), "a/b"})
		}
		return true
	}},
	{"metadata.annotations invalid", func(g *gen, p *corev1.Pod) bool {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[pick(g.r, []string{"a/b/c", "", "-x", "x/"})] = "v"
		return true
	}},
	{"container name invalid", func(g *gen, p *corev1.Pod) bool { g.container1(p).Name = pick(g.r, badNames); return true }},
	{"container name duplicate", func(g *gen, p *corev1.Pod) bool {
		cs := containers(p)
		if len(cs) < 2 {
			return false
		}
		a, b := pick(g.r, cs), pick(g.r, cs)
		a.Name = b.Name
		return a != b
	}},
	{"volume name invalid", func(g *gen, p *corev1.Pod) bool {
		v := g.volume1(p, nil)
		if v == nil {
			return false
		}
		old := v.Name
		v.Name = pick(g.r, badNames)
		if g.chance(0.5) { // keep the mounts pointing at it
			for _, m := range mounts(p) {
				if m.Name == old {
					m.Name = v.Name
				}
			}
		}
		return true
	}},
	{"volume name duplicate", func(g *gen, p *corev1.Pod) bool {
		if len(p.Spec.Volumes) < 2 {
			return false
		}
		p.Spec.Volumes[1].Name = p.Spec.Volumes[0].Name
		return true
	}},
	{"port name invalid", func(g *gen, p *corev1.Pod) bool {
		c := g.container1(p)
		c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: 81, Name: pick(g.r, []string{"HTTP", "a_b", "toolongportname1", "1234", "a--b", "-a", "a.b", "a/b", "..", ""})})
		return true
	}},
	{"port name duplicate", func(g *gen, p *corev1.Pod) bool {
		c := g.container1(p)
		c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: 81, Name: "dup"}, corev1.ContainerPort{ContainerPort: 82, Name: "dup"})
		return true
	}},
	{"port number invalid", func(g *gen, p *corev1.Pod) bool {
		c := g.container1(p)
		port := corev1.ContainerPort{ContainerPort: pick(g.r, []int32{0, -1, 65536, 80})}
		if g.chance(0.5) {
			port.HostPort = pick(g.r, []int32{-1, 65536, 70000, 80})
		}
		port.Protocol = pick(g.r, []corev1.Protocol{"", "TCP", "tcp", "ICMP"})
		c.Ports = append(c.Ports, port)
		return true
	}},
	{"host port duplicate", func(g *gen, p *corev1.Pod) bool {
		a, b := g.container1(p), g.container1(p)
		a.Ports = append(a.Ports, corev1.ContainerPort{ContainerPort: 80, HostPort: 8080})
		b.Ports = append(b.Ports, corev1.ContainerPort{ContainerPort: 81, HostPort: 8080, Protocol: pick(g.r, []corev1.Protocol{"", "TCP", "UDP"}), HostIP: pick(g.r, []string{"", "", "10.0.0.1"})})
		return true
	}},

	// Paths.
	{"hostPath path", func(g *gen, p *corev1.Pod) bool {
		v := g.volume1(p, func(v *corev1.Volume) bool { return v.HostPath != nil })
		if v == nil {
			return false
		}
		v.HostPath.Path = pick(g.r, badPaths)
		if g.chance(0.3) {
			v.HostPath.Type = new(corev1.HostPathType(pick(g.r, []string{"directory", "Bogus", "Directory"})))
		}
		return true
	}},
	{"subPath", func(g *gen, p *corev1.Pod) bool {
		return one(g, mounts(p), func(m *corev1.VolumeMount) { m.SubPath, m.SubPathExpr = pick(g.r, badPaths), "" })
	}},
	{"subPathExpr", func(g *gen, p *corev1.Pod) bool {
		return one(g, mounts(p), func(m *corev1.VolumeMount) {
			m.SubPath, m.SubPathExpr = "", pick(g.r, []string{"$(X)/..", "/abs", "../$(X)", "$(X)/../y", "..", "a/$(X)"})
		})
	}},
	{"subPath and subPathExpr", func(g *gen, p *corev1.Pod) bool {
		return one(g, mounts(p), func(m *corev1.VolumeMount) { m.SubPath, m.SubPathExpr = "a", "$(X)" })
	}},
	{"mountPath", func(g *gen, p *corev1.Pod) bool {
		return one(g, mounts(p), func(m *corev1.VolumeMount) {
			m.MountPath = pick(g.r, []string{"", "relative", "/mnt/../etc", "/a:b", "..", "/mnt/a/.."})
		})
	}},
	{"mountPath duplicate", func(g *gen, p *corev1.Pod) bool {
		for _, c := range containers(p) {
			if len(c.VolumeMounts) > 0 {
				m := c.VolumeMounts[0]
				m.ReadOnly = !m.ReadOnly
				c.VolumeMounts = append(c.VolumeMounts, m)
				return true
			}
		}
		return false
	}},
	{"mount of a missing volume", func(g *gen, p *corev1.Pod) bool {
		c := g.container1(p)
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: pick(g.r, []string{"missing", ""}), MountPath: "/missing"})
		return true
	}},
	{"items path", func(g *gen, p *corev1.Pod) bool {
		return one(g, keyPaths(p), func(k *corev1.KeyToPath) { k.Path = pick(g.r, append(badPaths, "..data", "..a/b")) })
	}},
	{"items key", func(g *gen, p *corev1.Pod) bool {
		return one(g, keyPaths(p), func(k *corev1.KeyToPath) {
			k.Key = pick(g.r, []string{"", "a/b", "..", ".", "a b", strings.Repeat("k", 254)})
		})
	}},
	{"downwardAPI path", func(g *gen, p *corev1.Pod) bool {
		return one(g, downwardFiles(p), func(f *corev1.DownwardAPIVolumeFile) { f.Path = pick(g.r, append(badPaths, "..data")) })
	}},
	{"downwardAPI field", func(g *gen, p *corev1.Pod) bool {
		return one(g, downwardFiles(p), func(f *corev1.DownwardAPIVolumeFile) {
			switch g.intn(4) {
			case 0:
				f.FieldRef, f.ResourceFieldRef = &corev1.ObjectFieldSelector{FieldPath: pick(g.r, []string{"", "spec.nodeName", "status.podIP", "metadata.labels['a/b/c']", "bogus"})}, nil
			case 1:
				f.FieldRef = &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}
				f.ResourceFieldRef = &corev1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.cpu"}
			case 2:
				f.FieldRef, f.ResourceFieldRef = nil, &corev1.ResourceFieldSelector{ContainerName: pick(g.r, []string{"", "c1"}), Resource: pick(g.r, []string{"limits.gpu", "", "limits.cpu", "requests.hugepages-2Mi"})}
			default:
				f.FieldRef, f.ResourceFieldRef = nil, nil
			}
		})
	}},
	{"projected paths duplicate", func(g *gen, p *corev1.Pod) bool {
		v := g.volume1(p, func(v *corev1.Volume) bool { return v.Projected != nil })
		if v == nil {
			return false
		}
		v.Projected.Sources = append(v.Projected.Sources,
			corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "dup"}},
			corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "dup"}})
		return true
	}},
	{"serviceAccountToken", func(g *gen, p *corev1.Pod) bool {
		return one(g, tokens(p), func(t *corev1.ServiceAccountTokenProjection) {
			if g.chance(0.5) {
				t.Path = pick(g.r, badPaths)
			} else {
				t.ExpirationSeconds = new(pick(g.r, []int64{-1, 0, 599, 1 << 32, 1 << 33}))
			}
		})
	}},
	{"projection with two sources", func(g *gen, p *corev1.Pod) bool {
		v := g.volume1(p, func(v *corev1.Volume) bool { return v.Projected != nil && len(v.Projected.Sources) > 0 })
		if v == nil {
			return false
		}
		s := &v.Projected.Sources[0]
		if s.ServiceAccountToken == nil {
			s.ServiceAccountToken = &corev1.ServiceAccountTokenProjection{Path: "tok2"}
		} else {
			s.ConfigMap = &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}
		}
		return true
	}},

	// Modes.
	{"defaultMode", func(g *gen, p *corev1.Pod) bool {
		return one(g, defaultModes(p), func(m **int32) { *m = new(pick(g.r, badModes)) })
	}},
	{"items mode", func(g *gen, p *corev1.Pod) bool {
		return one(g, keyPaths(p), func(k *corev1.KeyToPath) { k.Mode = new(pick(g.r, badModes)) })
	}},
	{"downwardAPI mode", func(g *gen, p *corev1.Pod) bool {
		return one(g, downwardFiles(p), func(f *corev1.DownwardAPIVolumeFile) { f.Mode = new(pick(g.r, badModes)) })
	}},
	{"emptyDir mode", func(g *gen, p *corev1.Pod) bool {
		v := g.volume1(p, func(v *corev1.Volume) bool { return v.EmptyDir != nil })
		if v == nil {
			return false
		}
		v.EmptyDir.Mode = new(pick(g.r, []int32{-1, 0, 0o755, 0o777, 0o1777, 0o2000, 0o4755, 0o7777, 1 << 22}))
		return true
	}},

	// Quantities.
	{"resource quantity", func(g *gen, p *corev1.Pod) bool {
		rr := g.resources1(p)
		list := rr.Requests
		if g.chance(0.5) {
			list = rr.Limits
		}
		list[pick(g.r, resourceNamesForMutation)] = resource.MustParse(pick(g.r, badQty))
		return true
	}},
	{"requests above limits", func(g *gen, p *corev1.Pod) bool {
		rr := g.resources1(p)
		name := pick(g.r, []corev1.ResourceName{"cpu", "memory", "ephemeral-storage", "example.com/gpu"})
		rr.Limits[name] = resource.MustParse("1")
		rr.Requests[name] = resource.MustParse(pick(g.r, []string{"2", "1001m", "1"}))
		return true
	}},
	{"extended resource request without limit", func(g *gen, p *corev1.Pod) bool {
		rr := g.resources1(p)
		delete(rr.Limits, "example.com/gpu")
		rr.Requests["example.com/gpu"] = resource.MustParse("1")
		return true
	}},
	{"emptyDir sizeLimit", func(g *gen, p *corev1.Pod) bool {
		v := g.volume1(p, func(v *corev1.Volume) bool { return v.EmptyDir != nil })
		if v == nil {
			return false
		}
		v.EmptyDir.SizeLimit = new(resource.MustParse(pick(g.r, []string{"-1", "0", "-1Gi", "1e18"})))
		return true
	}},

	// Probes, lifecycle and grace.
	{"probe timing", func(g *gen, p *corev1.Pod) bool {
		return one(g, probes(p), func(pr *corev1.Probe) {
			v := pick(g.r, []int32{-1, 0, 2, -1000})
			switch g.intn(5) {
			case 0:
				pr.InitialDelaySeconds = v
			case 1:
				pr.TimeoutSeconds = v
			case 2:
				pr.PeriodSeconds = v
			case 3:
				pr.SuccessThreshold = v
			default:
				pr.FailureThreshold = v
			}
		})
	}},
	{"liveness successThreshold 2", func(g *gen, p *corev1.Pod) bool {
		c := g.container1(p)
		if c.LivenessProbe == nil && c.StartupProbe == nil {
			return false
		}
		if c.LivenessProbe != nil {
			c.LivenessProbe.SuccessThreshold = 2
		} else {
			c.StartupProbe.SuccessThreshold = 2
		}
		return true
	}},
	{"probe handler", func(g *gen, p *corev1.Pod) bool {
		return one(g, probes(p), func(pr *corev1.Probe) {
			switch g.intn(5) {
			case 0:
				pr.ProbeHandler = corev1.ProbeHandler{}
			case 1:
				pr.Exec, pr.TCPSocket = &corev1.ExecAction{Command: []string{"x"}}, &corev1.TCPSocketAction{Port: intstr.FromInt32(1)}
			case 2:
				pr.ProbeHandler = corev1.ProbeHandler{Exec: &corev1.ExecAction{}}
			case 3:
				pr.ProbeHandler = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: pick(g.r, []intstr.IntOrString{intstr.FromInt32(0), intstr.FromInt32(70000), intstr.FromString("UPPER"), intstr.FromString(""), intstr.FromString("toolongportname1")})}}
			default:
				pr.ProbeHandler = corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: pick(g.r, []int32{0, -1, 65536})}}
			}
		})
	}},
	{"probe terminationGracePeriodSeconds", func(g *gen, p *corev1.Pod) bool {
		return one(g, probes(p), func(pr *corev1.Probe) { pr.TerminationGracePeriodSeconds = new(pick(g.r, []int64{-1, 0, 1})) })
	}},
	{"probes and lifecycle on an init container", func(g *gen, p *corev1.Pod) bool {
		if len(p.Spec.InitContainers) == 0 {
			return false
		}
		c := &p.Spec.InitContainers[g.intn(len(p.Spec.InitContainers))]
		switch g.intn(4) {
		case 0:
			c.LivenessProbe = g.probe(true)
		case 1:
			c.ReadinessProbe = g.probe(false)
		case 2:
			c.StartupProbe = g.probe(true)
		default:
			c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"x"}}}}
		}
		return true
	}},
	{"lifecycle handler", func(g *gen, p *corev1.Pod) bool {
		c := g.container1(p)
		h := &corev1.LifecycleHandler{}
		switch g.intn(4) {
		case 0:
			h.Sleep = &corev1.SleepAction{Seconds: pick(g.r, []int64{-1, -100})}
		case 1:
			h.Exec, h.Sleep = &corev1.ExecAction{Command: []string{"x"}}, &corev1.SleepAction{Seconds: 1}
		case 2:
			h.HTTPGet = &corev1.HTTPGetAction{Port: intstr.FromInt32(0)}
		}
		c.Lifecycle = &corev1.Lifecycle{PostStart: h}
		return true
	}},
	{"terminationGracePeriodSeconds", func(g *gen, p *corev1.Pod) bool {
		p.Spec.TerminationGracePeriodSeconds = new(pick(g.r, []int64{-1, -5, -1 << 40, 0}))
		return true
	}},
	{"activeDeadlineSeconds", func(g *gen, p *corev1.Pod) bool {
		p.Spec.ActiveDeadlineSeconds = new(pick(g.r, []int64{0, -1, 1 << 33, 1<<31 - 1}))
		return true
	}},

	// Sysctls.
	{"sysctl name", func(g *gen, p *corev1.Pod) bool {
		sc := g.podSC(p)
		sc.Sysctls = append(sc.Sysctls, corev1.Sysctl{Name: pick(g.r, badSysctls), Value: pick(g.r, []string{"1", ""})})
		return true
	}},
	{"sysctl duplicate", func(g *gen, p *corev1.Pod) bool {
		sc := g.podSC(p)
		s := pick(g.r, sysctlsSafe)
		dup := s
		if g.chance(0.5) {
			dup.Name = strings.ReplaceAll(s.Name, ".", "/")
		}
		sc.Sysctls = append(sc.Sysctls, s, dup)
		return true
	}},
	{"sysctl with host namespaces", func(g *gen, p *corev1.Pod) bool {
		sc := g.podSC(p)
		if g.chance(0.5) {
			p.Spec.HostNetwork = true
			sc.Sysctls = append(sc.Sysctls, corev1.Sysctl{Name: "net.core.somaxconn", Value: "1"})
		} else {
			p.Spec.HostIPC = true
			sc.Sysctls = append(sc.Sysctls, corev1.Sysctl{Name: "kernel.shm_rmid_forced", Value: "1"})
		}
		return true
	}},

	// Environment.
	{"env name", func(g *gen, p *corev1.Pod) bool {
		c := g.container1(p)
		c.Env = append(c.Env, corev1.EnvVar{Name: pick(g.r, badEnvNames), Value: "v"})
		return true
	}},
	{"env valueFrom", func(g *gen, p *corev1.Pod) bool {
		c := g.container1(p)
		e := corev1.EnvVar{Name: "X"}
		switch g.intn(5) {
		case 0:
			e.Value, e.ValueFrom = "v", &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}
		case 1:
			e.ValueFrom = &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}, SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}
		case 2:
			e.ValueFrom = &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: pick(g.r, []string{"", "spec.containers", "metadata.labels", "status.phase", "metadata.labels['-bad-']"})}}
		case 3:
			e.ValueFrom = &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: pick(g.r, []string{"", "nope"}), Resource: pick(g.r, []string{"", "limits.gpu", "cpu", "requests.hugepages-2Mi"})}}
		default:
			e.ValueFrom = &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: pick(g.r, []string{"", "s", "A_B"})}, Key: pick(g.r, []string{"", "a/b", ".."})}}
		}
		c.Env = append(c.Env, e)
		return true
	}},
	{"envFrom", func(g *gen, p *corev1.Pod) bool {
		c := g.container1(p)
		s := corev1.EnvFromSource{Prefix: pick(g.r, []string{"", "A=", "=", "P_"})}
		switch g.intn(3) {
		case 0:
			s.ConfigMapRef = &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}
			s.SecretRef = &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}
		case 1:
			s.ConfigMapRef = &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: pick(g.r, []string{"", "A_B", "a/b"})}}
		}
		c.EnvFrom = append(c.EnvFrom, s)
		return true
	}},

	// Security contexts.
	{"privileged without privilege escalation", func(g *gen, p *corev1.Pod) bool {
		sc := g.containerSC(p)
		sc.Privileged, sc.AllowPrivilegeEscalation = ptrBool(true), ptrBool(false)
		return true
	}},
	{"CAP_SYS_ADMIN without privilege escalation", func(g *gen, p *corev1.Pod) bool {
		sc := g.containerSC(p)
		sc.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{pick(g.r, []corev1.Capability{"SYS_ADMIN", "CAP_SYS_ADMIN"})}}
		sc.AllowPrivilegeEscalation = ptrBool(false)
		return true
	}},
	{"procMount Unmasked", func(g *gen, p *corev1.Pod) bool {
		sc := g.containerSC(p)
		sc.ProcMount = new(pick(g.r, []corev1.ProcMountType{"Unmasked", "Bogus"}))
		if g.chance(0.3) {
			p.Spec.HostUsers = ptrBool(false)
			p.Spec.HostPID, p.Spec.HostIPC, p.Spec.HostNetwork = false, false, false
		} else if g.chance(0.5) {
			p.Spec.HostUsers = ptrBool(true)
		}
		return true
	}},
	{"user and group IDs", func(g *gen, p *corev1.Pod) bool {
		id := new(pick(g.r, []int64{-1, -100, 2147483648, 1 << 40}))
		if g.chance(0.5) {
			sc := g.containerSC(p)
			if g.chance(0.5) {
				sc.RunAsUser = id
			} else {
				sc.RunAsGroup = id
			}
			return true
		}
		sc := g.podSC(p)
		switch g.intn(4) {
		case 0:
			sc.RunAsUser = id
		case 1:
			sc.RunAsGroup = id
		case 2:
			sc.FSGroup = id
		default:
			sc.SupplementalGroups = append(sc.SupplementalGroups, *id)
		}
		return true
	}},
	{"seccomp profile", func(g *gen, p *corev1.Pod) bool {
		prof := pick(g.r, []*corev1.SeccompProfile{
			{Type: "Localhost"}, {Type: "Localhost", LocalhostProfile: new("")}, {Type: "Localhost", LocalhostProfile: new("../x")},
			{Type: "Localhost", LocalhostProfile: new("/abs.json")},
			{Type: "RuntimeDefault", LocalhostProfile: new("x")}, {Type: "Bogus"}, {Type: ""},
		})
		if g.chance(0.5) {
			g.containerSC(p).SeccompProfile = prof
		} else {
			g.podSC(p).SeccompProfile = prof
		}
		return true
	}},
	{"appArmor profile", func(g *gen, p *corev1.Pod) bool {
		prof := pick(g.r, []*corev1.AppArmorProfile{
			{Type: "Localhost"}, {Type: "Localhost", LocalhostProfile: new("")}, {Type: "Unconfined", LocalhostProfile: new("x")}, {Type: "Bogus"},
		})
		if g.chance(0.5) {
			g.containerSC(p).AppArmorProfile = prof
		} else {
			g.podSC(p).AppArmorProfile = prof
		}
		return true
	}},
	{"host namespaces with user namespace", func(g *gen, p *corev1.Pod) bool {
		p.Spec.HostUsers = ptrBool(false)
		switch g.intn(3) {
		case 0:
			p.Spec.HostPID = true
		case 1:
			p.Spec.HostIPC = true
		default:
			p.Spec.HostNetwork = true
		}
		return true
	}},
	{"shareProcessNamespace with hostPID", func(g *gen, p *corev1.Pod) bool {
		p.Spec.HostPID, p.Spec.ShareProcessNamespace = true, ptrBool(true)
		if p.Spec.HostUsers != nil && !*p.Spec.HostUsers {
			p.Spec.HostUsers = nil
		}
		return true
	}},
	{"capabilities", func(g *gen, p *corev1.Pod) bool {
		g.containerSC(p).Capabilities = &corev1.Capabilities{Add: []corev1.Capability{pick(g.r, []corev1.Capability{"", "net_admin", "ALL", "CAP_NET_RAW", "a b"})}}
		return true
	}},

	// v1.37 fields (alpha: their gates are off by default).
	{"bindMountOptions", func(g *gen, p *corev1.Pod) bool {
		return one(g, mounts(p), func(m *corev1.VolumeMount) {
			m.BindMountOptions = pick(g.r, [][]string{{"noexec"}, {"nodev", "nosuid"}, {"ro"}, {"nosuid", "nosuid"}, {""}, {"NOEXEC"}, {"noexec", "suid"}})
		})
	}},
	{"volume user/defaultUser", func(g *gen, p *corev1.Pod) bool {
		uid := new(pick(g.r, badIDs))
		switch g.intn(4) {
		case 0:
			return one(g, keyPaths(p), func(k *corev1.KeyToPath) { k.User = uid })
		case 1:
			return one(g, downwardFiles(p), func(f *corev1.DownwardAPIVolumeFile) { f.User = uid })
		case 2:
			return one(g, tokens(p), func(t *corev1.ServiceAccountTokenProjection) { t.User = uid })
		}
		v := g.volume1(p, func(v *corev1.Volume) bool {
			return v.Secret != nil || v.ConfigMap != nil || v.DownwardAPI != nil || v.Projected != nil
		})
		if v == nil {
			return false
		}
		switch {
		case v.Secret != nil:
			v.Secret.DefaultUser = uid
		case v.ConfigMap != nil:
			v.ConfigMap.DefaultUser = uid
		case v.DownwardAPI != nil:
			v.DownwardAPI.DefaultUser = uid
		default:
			v.Projected.DefaultUser = uid
		}
		return true
	}},
	{"ephemeral containers", func(g *gen, p *corev1.Pod) bool {
		// Mostly what kubectl debug sends; sometimes with the fields an
		// ephemeral container may not have, or a bad target.
		c := g.container(p.Spec.Volumes, true, false)
		if g.chance(0.7) {
			c.Ports, c.Resources, c.ResizePolicy, c.RestartPolicy, c.RestartPolicyRules = nil, corev1.ResourceRequirements{}, nil, nil, nil
			for i := range c.VolumeMounts {
				c.VolumeMounts[i].SubPath, c.VolumeMounts[i].SubPathExpr = "", ""
			}
		}
		if g.chance(0.1) {
			c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"x"}}}}
		}
		if g.chance(0.1) {
			c.ReadinessProbe = g.probe(false)
		}
		e := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon(c)}
		if g.chance(0.5) && len(p.Spec.Containers) > 0 {
			e.TargetContainerName = pick(g.r, []string{p.Spec.Containers[0].Name, "missing", ""})
		}
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, e)
		return true
	}},

	// Missing required fields and bad enums.
	{"container image empty", func(g *gen, p *corev1.Pod) bool {
		g.container1(p).Image = pick(g.r, []string{"", " ", " nginx"})
		return true
	}},
	{"no containers", func(g *gen, p *corev1.Pod) bool { p.Spec.Containers = nil; return true }},
	{"volume source", func(g *gen, p *corev1.Pod) bool {
		v := g.volume1(p, nil)
		if v == nil {
			return false
		}
		if g.chance(0.5) {
			v.VolumeSource = corev1.VolumeSource{}
		} else {
			v.HostPath, v.EmptyDir = &corev1.HostPathVolumeSource{Path: "/x"}, &corev1.EmptyDirVolumeSource{}
		}
		return true
	}},
	{"volume reference names", func(g *gen, p *corev1.Pod) bool {
		v := g.volume1(p, func(v *corev1.Volume) bool {
			return v.Secret != nil || v.ConfigMap != nil || v.PersistentVolumeClaim != nil
		})
		if v == nil {
			return false
		}
		name := pick(g.r, []string{"", "A_B", "a/b", ".."})
		switch {
		case v.Secret != nil:
			v.Secret.SecretName = name
		case v.ConfigMap != nil:
			v.ConfigMap.Name = name
		default:
			v.PersistentVolumeClaim.ClaimName = name
		}
		return true
	}},
	{"enums", func(g *gen, p *corev1.Pod) bool {
		c := g.container1(p)
		switch g.intn(6) {
		case 0:
			p.Spec.RestartPolicy = "Sometimes"
		case 1:
			p.Spec.DNSPolicy = "Bogus"
		case 2:
			c.ImagePullPolicy = "Sometimes"
		case 3:
			c.TerminationMessagePolicy = "Bogus"
		case 4:
			c.RestartPolicy = new(corev1.ContainerRestartPolicy(pick(g.r, []string{"Never", "OnFailure", "Bogus", "Always"})))
		default:
			v := g.volume1(p, func(v *corev1.Volume) bool { return v.EmptyDir != nil })
			if v == nil {
				return false
			}
			v.EmptyDir.Medium = "Disk"
		}
		return true
	}},
	{"dns", func(g *gen, p *corev1.Pod) bool {
		switch g.intn(4) {
		case 0:
			p.Spec.DNSPolicy, p.Spec.DNSConfig = "None", nil
		case 1:
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"}}
		case 2:
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{pick(g.r, []string{"", "not-an-ip", "1.2.3"})}, Searches: []string{pick(g.r, []string{"UPPER", "a..b", "", strings.Repeat("a", 256)})}}
		default:
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Options: []corev1.PodDNSConfigOption{{Name: ""}}}
		}
		return true
	}},
	{"hostAliases", func(g *gen, p *corev1.Pod) bool {
		p.Spec.HostAliases = append(p.Spec.HostAliases, corev1.HostAlias{IP: pick(g.r, []string{"", "bad", "10.0.0.1"}), Hostnames: []string{pick(g.r, []string{"UPPER", "a_b", "ok", ""})}})
		return true
	}},
	{"hostname and subdomain", func(g *gen, p *corev1.Pod) bool {
		v := pick(g.r, []string{"UPPER", "a.b", "a_b", strings.Repeat("h", 64), "-h"})
		if g.chance(0.5) {
			p.Spec.Hostname = v
		} else {
			p.Spec.Subdomain = v
		}
		return true
	}},
	{"serviceAccountName", func(g *gen, p *corev1.Pod) bool {
		p.Spec.ServiceAccountName = pick(g.r, []string{"A_b", "a/b", "..", strings.Repeat("s", 254)})
		return true
	}},
	{"hostNetwork host port", func(g *gen, p *corev1.Pod) bool {
		p.Spec.HostNetwork = true
		c := g.container1(p)
		c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: 8080, HostPort: pick(g.r, []int32{8081, 8080, 0})})
		return true
	}},
	{"pod-level names", func(g *gen, p *corev1.Pod) bool {
		bad := pick(g.r, badNames[1:])
		switch g.intn(6) {
		case 0:
			p.Spec.PriorityClassName = bad
		case 1:
			p.Spec.RuntimeClassName = &bad
		case 2:
			p.Spec.HostnameOverride = &bad
		case 3:
			p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: pick(g.r, []string{"", "A_B"})})
		case 4:
			p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: corev1.PodConditionType(pick(g.r, []string{"", "a/b/c", "-x"}))})
		default:
			p.Spec.NodeSelector = map[string]string{pick(g.r, []string{"a/b/c", "", "ok"}): pick(g.r, []string{"has space", "ok", strings.Repeat("v", 64)})}
		}
		return true
	}},
	{"pod enums", func(g *gen, p *corev1.Pod) bool {
		switch g.intn(4) {
		case 0:
			p.Spec.PreemptionPolicy = new(corev1.PreemptionPolicy(pick(g.r, []string{"Bogus", ""})))
		case 1:
			p.Spec.OS = &corev1.PodOS{Name: corev1.OSName(pick(g.r, []string{"plan9", "", "Linux"}))}
		case 2:
			p.Spec.SetHostnameAsFQDN = ptrBool(true)
			p.Spec.Hostname = ""
		default:
			sc := g.podSC(p)
			switch g.intn(3) {
			case 0:
				sc.FSGroupChangePolicy = new(corev1.PodFSGroupChangePolicy("Sometimes"))
			case 1:
				sc.SupplementalGroupsPolicy = new(corev1.SupplementalGroupsPolicy("Loose"))
			default:
				sc.SELinuxChangePolicy = new(corev1.PodSELinuxChangePolicy("Never"))
			}
		}
		return true
	}},
	{"container restart rules", func(g *gen, p *corev1.Pod) bool {
		c := g.container1(p)
		switch g.intn(4) {
		case 0:
			c.RestartPolicy = new(corev1.ContainerRestartPolicy(pick(g.r, []string{"Bogus", ""})))
		case 1:
			c.RestartPolicyRules = []corev1.ContainerRestartRule{{Action: "Restart"}}
		case 2:
			c.RestartPolicy = new(corev1.ContainerRestartPolicyNever)
			c.RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleAction(pick(g.r, []string{"Bogus", "RestartAllContainers", "Restart"})), ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{
				Operator: corev1.ContainerRestartRuleOnExitCodesOperator(pick(g.r, []string{"In", "Bogus", ""})), Values: pick(g.r, [][]int32{nil, {-1}, {1, 1}, {256}})}}}
		default:
			c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: pick(g.r, []corev1.ResourceName{"cpu", "gpu", ""}), RestartPolicy: corev1.ResourceResizeRestartPolicy(pick(g.r, []string{"Bogus", "", "NotRequired", "RestartContainer"}))}}
		}
		return true
	}},
	{"stopSignal", func(g *gen, p *corev1.Pod) bool {
		c := g.container1(p)
		if c.Lifecycle == nil {
			c.Lifecycle = &corev1.Lifecycle{}
		}
		c.Lifecycle.StopSignal = new(corev1.Signal(pick(g.r, []string{"SIGTERM", "SIGBOGUS", ""})))
		return true
	}},
	// Edges: values at the API's limits, on either side, and rules
	// between fields that hand-ported validation tends to miss.
	{"length limits", func(g *gen, p *corev1.Pod) bool {
		at := func(n int) string { return strings.Repeat("a", n) }
		switch g.intn(7) {
		case 0:
			p.Name = pick(g.r, []string{at(253), at(254), at(63) + "." + at(63) + "." + at(63) + "." + at(61), "a." + at(63), "a." + at(64)})
		case 1:
			p.Labels = map[string]string{pick(g.r, []string{at(63), at(64), "example.com/" + at(63), at(254) + "/x"}): pick(g.r, []string{at(63), at(64), ""})}
		case 2:
			g.container1(p).Name = pick(g.r, []string{at(63), at(64)})
		case 3:
			c := g.container1(p)
			c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: 81, Name: pick(g.r, []string{"abcdefghijklmno", "abcdefghijklmnop", "a1", "1a", "a"})})
		case 4:
			p.Annotations = map[string]string{"big": strings.Repeat("x", pick(g.r, []int{256*1024 - 3, 256 * 1024, 256*1024 + 1}))}
		case 5:
			v := g.volume1(p, nil)
			if v == nil {
				return false
			}
			v.Name = pick(g.r, []string{at(63), at(64)})
		default:
			p.Spec.DNSPolicy = "None"
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}}
			n := pick(g.r, []int{32, 33})
			for i := range n {
				p.Spec.DNSConfig.Searches = append(p.Spec.DNSConfig.Searches, fmt.Sprintf("s%d.%s", i, pick(g.r, []string{"a", at(60)})))
			}
		}
		return true
	}},
	{"valid edges", func(g *gen, p *corev1.Pod) bool {
		c := g.container1(p)
		switch g.intn(9) {
		case 0:
			c.Env = append(c.Env, corev1.EnvVar{Name: pick(g.r, []string{"a-b.c:d", "~", "A$B", "%x", "`", "1", "[]{}"}), Value: "v"})
		case 1:
			return one(g, mounts(p), func(m *corev1.VolumeMount) {
				m.SubPath, m.SubPathExpr = pick(g.r, []string{"a..b", "...", "a/..b", "..a", "a/b/"}), ""
			})
		case 2:
			return one(g, keyPaths(p), func(k *corev1.KeyToPath) { k.Path = pick(g.r, []string{"a..b", "a/..b/c", "...x", "a/b/", "a//b"}) })
		case 3:
			return one(g, defaultModes(p), func(m **int32) { *m = new(pick(g.r, []int32{0, 0o777, 0o1, 0o111})) })
		case 4:
			return one(g, tokens(p), func(t *corev1.ServiceAccountTokenProjection) {
				t.ExpirationSeconds = new(pick(g.r, []int64{600, 1 << 32, 1<<32 + 1, 4294967295}))
			})
		case 5:
			grace := int64(30)
			if p.Spec.TerminationGracePeriodSeconds != nil {
				grace = *p.Spec.TerminationGracePeriodSeconds
			}
			c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: grace + pick(g.r, []int64{0, 1, -1})}}}
		case 6:
			rr := g.resources1(p)
			rr.Requests["cpu"] = resource.MustParse(pick(g.r, []string{"1m", "0.1m", "0", "1n"}))
			rr.Limits["memory"] = resource.MustParse(pick(g.r, []string{"1", "0", "1.5", "100m"}))
		case 7:
			v := g.volume1(p, func(v *corev1.Volume) bool { return v.HostPath != nil })
			if v == nil {
				return false
			}
			v.HostPath.Path = pick(g.r, []string{"/", "//", "/a/./b", "/a..b", "a", "/var/lib/..x", "C:\\x"})
		default:
			p.Spec.ActiveDeadlineSeconds = new(pick(g.r, []int64{1, 1<<31 - 1, 1 << 31}))
		}
		return true
	}},
	{"hugepages", func(g *gen, p *corev1.Pod) bool {
		rr := g.resources1(p)
		name := pick(g.r, []corev1.ResourceName{"hugepages-2Mi", "hugepages-1Gi", "hugepages-3Mi", "hugepages-"})
		rr.Limits[name] = resource.MustParse(pick(g.r, []string{"2Mi", "4Mi", "1Mi", "1Gi", "0"}))
		if g.chance(0.5) {
			rr.Requests[name] = resource.MustParse(pick(g.r, []string{"2Mi", "4Mi"}))
		}
		if g.chance(0.5) {
			rr.Limits["memory"] = resource.MustParse("1Gi")
			rr.Requests["memory"] = resource.MustParse("1Gi")
		}
		if g.chance(0.3) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "hp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
				Medium: corev1.StorageMedium(pick(g.r, []string{"HugePages", "HugePages-2Mi", "HugePages-3Mi"}))}}})
		}
		return true
	}},
	{"fileKeyRef", func(g *gen, p *corev1.Pod) bool {
		c := g.container1(p)
		vol := "missing"
		if v := g.volume1(p, nil); v != nil && g.chance(0.8) {
			vol = v.Name
		}
		c.Env = append(c.Env, corev1.EnvVar{Name: "F", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{
			VolumeName: vol,
			Path:       pick(g.r, []string{"env.txt", "../env", "/abs", "", "a/b.env"}),
			Key:        pick(g.r, []string{"KEY", "", "A=B", "1x", "a.b"}),
		}}})
		return true
	}},
	{"seccomp and AppArmor annotations", func(g *gen, p *corev1.Pod) bool {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		c := g.container1(p)
		switch g.intn(4) {
		case 0:
			p.Annotations["seccomp.security.alpha.kubernetes.io/pod"] = pick(g.r, []string{"runtime/default", "unconfined", "localhost/x.json", "bogus", "localhost/"})
		case 1:
			p.Annotations["container.seccomp.security.alpha.kubernetes.io/"+c.Name] = pick(g.r, []string{"runtime/default", "unconfined", "docker/default", "bogus"})
		case 2:
			p.Annotations["container.apparmor.security.beta.kubernetes.io/"+pick(g.r, []string{c.Name, "nope"})] = pick(g.r, []string{"runtime/default", "unconfined", "localhost/prof", "localhost/", "bogus"})
		default:
			p.Annotations[pick(g.r, []string{"kubernetes.io/config.mirror", "controller.kubernetes.io/pod-deletion-cost"})] = pick(g.r, []string{"abc", "10", "", "-5", "99999999999"})
		}
		return true
	}},
	{"probe and hook details", func(g *gen, p *corev1.Pod) bool {
		return one(g, probes(p), func(pr *corev1.Probe) {
			switch g.intn(4) {
			case 0:
				pr.ProbeHandler = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80), Scheme: corev1.URIScheme(pick(g.r, []string{"FTP", "http", "HTTPS"}))}}
			case 1:
				pr.ProbeHandler = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80), HTTPHeaders: []corev1.HTTPHeader{{Name: pick(g.r, []string{"", "X Bad", "X-Ok", "x:y"}), Value: "v"}}}}
			case 2:
				pr.ProbeHandler = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80), Host: pick(g.r, []string{"bad host", "10.0.0.1", "example.com"}), Path: pick(g.r, []string{"healthz", "/a b", ""})}}
			default:
				pr.ProbeHandler = corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(pick(g.r, []string{"http", "a_b", "1"})), Host: pick(g.r, []string{"", "bad host"})}}
			}
		})
	}},
	{"port hostIP and protocols", func(g *gen, p *corev1.Pod) bool {
		c := g.container1(p)
		c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: 90, HostPort: pick(g.r, []int32{0, 9090}), HostIP: pick(g.r, []string{"bad", "10.0.0.1", "::1", "010.0.0.1"}), Protocol: "TCP"})
		return true
	}},
	{"probe protocol and mode (alpha)", func(g *gen, p *corev1.Pod) bool {
		return one(g, probes(p), func(pr *corev1.Probe) {
			if g.chance(0.5) {
				pr.ProbeHandler = corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090, Mode: new(corev1.GRPCProbeMode(pick(g.r, []string{"TLS", "Plaintext", "Bogus", ""})))}}
			} else {
				pr.ProbeHandler = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80), Protocol: new(corev1.HTTPProtocol(pick(g.r, []string{"HTTP1", "HTTP2", "Bogus", ""})))}}
			}
		})
	}},
	{"recursiveReadOnly and mountPropagation", func(g *gen, p *corev1.Pod) bool {
		return one(g, mounts(p), func(m *corev1.VolumeMount) {
			if g.chance(0.6) {
				m.RecursiveReadOnly = new(corev1.RecursiveReadOnlyMode(pick(g.r, []string{"Disabled", "IfPossible", "Enabled", "Bogus", ""})))
				m.ReadOnly = g.chance(0.7)
			}
			if g.chance(0.6) {
				m.MountPropagation = new(corev1.MountPropagationMode(pick(g.r, []string{"None", "HostToContainer", "Bidirectional", "Bogus"})))
			}
		})
	}},
	{"image volume", func(g *gen, p *corev1.Pod) bool {
		v := corev1.Volume{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{
			Reference:  pick(g.r, []string{"busybox:1.36", "", " x", "registry.example.com/a@sha256:" + strings.Repeat("ab", 32)}),
			PullPolicy: corev1.PullPolicy(pick(g.r, []string{"", "Always", "IfNotPresent", "Bogus"})),
		}}}
		p.Spec.Volumes = append(p.Spec.Volumes, v)
		c := g.container1(p)
		m := corev1.VolumeMount{Name: "img", MountPath: "/img", ReadOnly: g.chance(0.7)}
		switch g.intn(4) {
		case 0:
			m.SubPath = "sub"
		case 1:
			m.SubPathExpr = "$(X)"
		case 2:
			m.BindMountOptions = []string{"noexec"}
		}
		c.VolumeMounts = append(c.VolumeMounts, m)
		return true
	}},
	{"pod-level resources and overhead", func(g *gen, p *corev1.Pod) bool {
		if g.chance(0.25) {
			p.Spec.Overhead = corev1.ResourceList{pick(g.r, resourceNamesForMutation): resource.MustParse(pick(g.r, badQty))}
			return true
		}
		if p.Spec.Resources == nil {
			p.Spec.Resources = &corev1.ResourceRequirements{}
		}
		r := p.Spec.Resources
		if r.Limits == nil {
			r.Limits = corev1.ResourceList{}
		}
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		switch g.intn(4) {
		case 0: // below the containers'
			r.Limits[pick(g.r, []corev1.ResourceName{"cpu", "memory"})] = resource.MustParse(pick(g.r, []string{"1m", "1Mi", "100m"}))
		case 1:
			r.Requests[pick(g.r, []corev1.ResourceName{"cpu", "memory"})] = resource.MustParse(pick(g.r, []string{"1m", "1Mi", "100m", "64Mi"}))
		case 2: // requests above limits
			r.Limits["cpu"], r.Requests["cpu"] = resource.MustParse("16"), resource.MustParse("17")
		default:
			list := r.Requests
			if g.chance(0.5) {
				list = r.Limits
			}
			list[pick(g.r, append(resourceNamesForMutation, "hugepages-1Gi"))] = resource.MustParse(pick(g.r, append(badQty, "2Gi")))
		}
		return true
	}},
	{"nodeName", func(g *gen, p *corev1.Pod) bool {
		p.Spec.NodeName = pick(g.r, []string{"Node_1", "a/b", "..", strings.Repeat("n", 254)})
		return true
	}},
}

// mutate applies 1 to 3 mutations of the catalogue and returns their names.
func (g *gen) mutate(pod *corev1.Pod) []string {
	var names []string
	for want, tries := 1+g.intn(3), 0; len(names) < want && tries < 20; tries++ {
		m := pick(g.r, catalogue)
		if m.apply(g, pod) {
			names = append(names, m.name)
		}
	}
	return names
}
