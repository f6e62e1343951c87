package defaults

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestPullPolicy(t *testing.T) {
	digest := "@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name, image string
		want        corev1.PullPolicy
	}{
		{"no tag means latest", "nginx", corev1.PullAlways},
		{"latest", "nginx:latest", corev1.PullAlways},
		{"a tag", "nginx:1.27", corev1.PullIfNotPresent},
		{"registry with port, no tag", "localhost:5000/team/app", corev1.PullAlways},
		{"registry with port and tag", "localhost:5000/team/app:v1", corev1.PullIfNotPresent},
		{"digest only", "nginx" + digest, corev1.PullIfNotPresent},
		{"latest and a digest", "nginx:latest" + digest, corev1.PullAlways},
		{"a short digest does not parse", "nginx@sha256:abc", corev1.PullIfNotPresent},
		{"upper case does not parse", "Nginx", corev1.PullIfNotPresent},
		{"empty does not parse", "", corev1.PullIfNotPresent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PullPolicy(tc.image); got != tc.want {
				t.Errorf("PullPolicy(%q) = %s, want %s", tc.image, got, tc.want)
			}
		})
	}
}

func TestPod(t *testing.T) {
	sidecar := corev1.ContainerRestartPolicyAlways
	q := resource.MustParse
	for _, tc := range []struct {
		name  string
		pod   corev1.Pod
		check func(t *testing.T, p *corev1.Pod)
	}{{
		name: "set fields are kept",
		pod: corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, DNSPolicy: corev1.DNSNone,
			Containers: []corev1.Container{{Name: "a", Image: "nginx", ImagePullPolicy: corev1.PullNever, TerminationMessagePath: "/x"}}}},
		check: func(t *testing.T, p *corev1.Pod) {
			c := p.Spec.Containers[0]
			if p.Spec.RestartPolicy != corev1.RestartPolicyNever || p.Spec.DNSPolicy != corev1.DNSNone ||
				c.ImagePullPolicy != corev1.PullNever || c.TerminationMessagePath != "/x" {
				t.Errorf("set fields changed: %+v", p.Spec)
			}
		},
	}, {
		name: "requests from limits, rounded up to milli-units",
		pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: q("0.0001"), corev1.ResourceMemory: q("1Gi")}}}}}},
		check: func(t *testing.T, p *corev1.Pod) {
			r := p.Spec.Containers[0].Resources
			if got := r.Requests.Cpu().String(); got != "1m" {
				t.Errorf("cpu request %s, want 1m", got)
			}
			if got := r.Limits.Cpu().String(); got != "1m" {
				t.Errorf("cpu limit %s, want 1m", got)
			}
			if got := r.Requests.Memory().String(); got != "1Gi" {
				t.Errorf("memory request %s, want 1Gi", got)
			}
		},
	}, {
		name: "pod-level requests: app containers and sidecars, or an init container with the sidecars before it",
		pod: corev1.Pod{Spec: corev1.PodSpec{
			Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("4Gi")}},
			InitContainers: []corev1.Container{
				{Name: "side", RestartPolicy: &sidecar, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("1")}}},
				{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("2")}}},
			},
			Containers: []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("500m")}}}},
		}},
		check: func(t *testing.T, p *corev1.Pod) {
			r := p.Spec.Resources.Requests
			if got := r.Cpu().String(); got != "3" { // init 2 + sidecar 1 > app 0.5 + sidecar 1
				t.Errorf("pod cpu request %s, want 3", got)
			}
			if got := r.Memory().String(); got != "4Gi" { // no container asks: the pod limit
				t.Errorf("pod memory request %s, want 4Gi", got)
			}
		},
	}, {
		name: "volumes: a source, modes, host path type",
		pod: corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "none"},
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}},
			{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}},
		}}},
		check: func(t *testing.T, p *corev1.Pod) {
			v := p.Spec.Volumes
			if v[0].EmptyDir == nil {
				t.Error("a volume without a source is not an emptyDir")
			}
			if v[1].Secret.DefaultMode == nil || *v[1].Secret.DefaultMode != 0o644 {
				t.Errorf("secret defaultMode %v, want 0644", v[1].Secret.DefaultMode)
			}
			if v[2].HostPath.Type == nil || *v[2].HostPath.Type != corev1.HostPathUnset {
				t.Errorf("hostPath type %v, want \"\"", v[2].HostPath.Type)
			}
		},
	}, {
		name: "host network: host ports from container ports",
		pod: corev1.Pod{Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "a",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 53, HostPort: 5353, Protocol: corev1.ProtocolUDP}}}}}},
		check: func(t *testing.T, p *corev1.Pod) {
			ports := p.Spec.Containers[0].Ports
			if ports[0].HostPort != 8080 || ports[0].Protocol != corev1.ProtocolTCP || ports[1].HostPort != 5353 || ports[1].Protocol != corev1.ProtocolUDP {
				t.Errorf("ports %+v", ports)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pod.DeepCopy()
			Pod(p)
			tc.check(t, p)
			again := p.DeepCopy()
			Pod(again)
			if !reflect.DeepEqual(p, again) {
				t.Errorf("a second Pod changed the pod:\n%+v\n%+v", p.Spec, again.Spec)
			}
		})
	}
}

func BenchmarkPod(b *testing.B) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "w"}}}}
	for range 10 {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
			Name: "c", Image: "registry.example.com/team/app:v1",
			Ports:         []corev1.ContainerPort{{ContainerPort: 80}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{}}},
			Resources:     corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
		})
	}
	b.ReportAllocs()
	for b.Loop() {
		Pod(pod.DeepCopy())
	}
}

// TestPodV137 holds the cases of kubelet v1.37.2's own tests of what
// changed in v1.37: pkg/apis/core/v1's TestSetDefaultPodTerminationGracePeriodSeconds,
// TestSetDefaultServiceAccountAlias and TestSetDefaultPodStatusPodIPs, and
// pkg/registry/core/pod's pod-level resources defaulting cases.
func TestPodV137(t *testing.T) {
	t.Parallel()
	t.Run("terminationGracePeriodSeconds", func(t *testing.T) {
		for _, tc := range []struct {
			name        string
			grace, want *int64
		}{
			{"negative clamped to 1", ptr(int64(-1)), ptr(int64(1))},
			{"very negative clamped to 1", ptr(int64(-9999)), ptr(int64(1))},
			{"zero preserved", ptr(int64(0)), ptr(int64(0))},
			{"positive preserved", ptr(int64(42)), ptr(int64(42))},
			{"unset is 30", nil, ptr(int64(30))},
		} {
			p := &corev1.Pod{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: tc.grace}}
			Pod(p)
			if !reflect.DeepEqual(p.Spec.TerminationGracePeriodSeconds, tc.want) {
				t.Errorf("%s: grace %d, want %d", tc.name, *p.Spec.TerminationGracePeriodSeconds, *tc.want)
			}
		}
	})
	t.Run("serviceAccountName and serviceAccount", func(t *testing.T) {
		for _, tc := range []struct {
			name, account, deprecated, want string
		}{
			{"neither set", "", "", ""},
			{"both set to the same value", "a", "a", "a"},
			{"both set, serviceAccountName wins", "a", "b", "a"},
			{"only serviceAccountName set", "a", "", "a"},
			{"only deprecated alias set", "", "a", "a"},
		} {
			p := &corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: tc.account, DeprecatedServiceAccount: tc.deprecated}}
			Pod(p)
			if p.Spec.ServiceAccountName != tc.want || p.Spec.DeprecatedServiceAccount != tc.want {
				t.Errorf("%s: serviceAccountName %q, serviceAccount %q, want both %q", tc.name,
					p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount, tc.want)
			}
		}
	})
	t.Run("podIP and podIPs", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			ip      string
			ips     []corev1.PodIP
			wantIP  string
			wantIPs []corev1.PodIP
		}{
			{"only podIP, podIPs synthesized", "10.0.0.1", nil, "10.0.0.1", []corev1.PodIP{{IP: "10.0.0.1"}}},
			{"mismatched, podIP authoritative", "10.0.0.2", []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "2000::"}}, "10.0.0.2", []corev1.PodIP{{IP: "10.0.0.2"}}},
			{"only podIPs, podIP filled", "", []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "2000::"}}, "10.0.0.1", []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "2000::"}}},
			{"consistent dual-stack preserved", "10.0.0.1", []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "2000::"}}, "10.0.0.1", []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "2000::"}}},
			{"neither set", "", nil, "", nil},
		} {
			p := &corev1.Pod{Status: corev1.PodStatus{PodIP: tc.ip, PodIPs: tc.ips}}
			Pod(p)
			if p.Status.PodIP != tc.wantIP || !reflect.DeepEqual(p.Status.PodIPs, tc.wantIPs) {
				t.Errorf("%s: podIP %q podIPs %v, want %q %v", tc.name, p.Status.PodIP, p.Status.PodIPs, tc.wantIP, tc.wantIPs)
			}
		}
	})
	t.Run("pod-level resources", func(t *testing.T) {
		list := func(cpu, memory string) corev1.ResourceList {
			l := corev1.ResourceList{}
			if cpu != "" {
				l[corev1.ResourceCPU] = resource.MustParse(cpu)
			}
			if memory != "" {
				l[corev1.ResourceMemory] = resource.MustParse(memory)
			}
			return l
		}
		ctr := func(name string, requests, limits corev1.ResourceList) corev1.Container {
			return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
		}
		gpu := corev1.ResourceName("example.com/gpu")
		for _, tc := range []struct {
			name             string
			pod              corev1.PodSpec
			requests, limits corev1.ResourceList
		}{{
			name:     "spec.resources is nil - noop",
			pod:      corev1.PodSpec{Containers: []corev1.Container{ctr("c1", list("100m", "128Mi"), list("100m", "128Mi"))}},
			requests: nil, limits: nil,
		}, {
			name: "unsupported resources ignored in limit defaulting",
			pod: corev1.PodSpec{
				Containers: []corev1.Container{ctr("c1", corev1.ResourceList{gpu: resource.MustParse("1")}, corev1.ResourceList{gpu: resource.MustParse("1")})},
				Resources:  &corev1.ResourceRequirements{Requests: corev1.ResourceList{gpu: resource.MustParse("1")}},
			},
			requests: corev1.ResourceList{gpu: resource.MustParse("1")}, limits: nil,
		}, {
			name: "requests only: a missing memory request from the containers, no limits when c2 has none",
			pod: corev1.PodSpec{
				Containers: []corev1.Container{ctr("c1", list("100m", "128Mi"), list("100m", "128Mi")), ctr("c2", list("100m", "128Mi"), nil)},
				Resources:  &corev1.ResourceRequirements{Requests: list("200m", "")},
			},
			requests: list("200m", "256Mi"), limits: nil,
		}, {
			name: "every container limits: pod limits are their total",
			pod: corev1.PodSpec{
				Containers: []corev1.Container{ctr("c1", list("100m", "128Mi"), list("100m", "128Mi")), ctr("c2", list("100m", "128Mi"), list("100m", "128Mi"))},
				Resources:  &corev1.ResourceRequirements{Requests: list("200m", "256Mi")},
			},
			requests: list("200m", "256Mi"), limits: list("200m", "256Mi"),
		}, {
			name: "c2 sets a cpu limit only: only the pod's cpu limit",
			pod: corev1.PodSpec{
				Containers: []corev1.Container{ctr("c1", list("100m", "128Mi"), list("100m", "128Mi")), ctr("c2", list("100m", "128Mi"), list("100m", ""))},
				Resources:  &corev1.ResourceRequirements{Requests: list("200m", "256Mi")},
			},
			requests: list("200m", "256Mi"), limits: list("200m", ""),
		}, {
			name: "pod-level request exceeds the containers' limits: the limit is raised to the request",
			pod: corev1.PodSpec{
				Containers: []corev1.Container{ctr("c1", list("100m", "128Mi"), list("200m", "256Mi"))},
				Resources:  &corev1.ResourceRequirements{Requests: list("500m", "512Mi")},
			},
			requests: list("500m", "512Mi"), limits: list("500m", "512Mi"),
		}, {
			name: "an ephemeral container without limits: no pod limits",
			pod: corev1.PodSpec{
				Containers:          []corev1.Container{ctr("c1", list("100m", "128Mi"), list("100m", "128Mi"))},
				EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}},
				Resources:           &corev1.ResourceRequirements{Requests: list("100m", "")},
			},
			requests: list("100m", "128Mi"), limits: nil,
		}} {
			p := &corev1.Pod{Spec: *tc.pod.DeepCopy()}
			Pod(p)
			var requests, limits corev1.ResourceList
			if r := p.Spec.Resources; r != nil {
				requests, limits = r.Requests, r.Limits
			}
			if !equalLists(requests, tc.requests) || !equalLists(limits, tc.limits) {
				t.Errorf("%s: pod-level requests %v limits %v, want %v %v", tc.name, requests, limits, tc.requests, tc.limits)
			}
		}
	})
}

// equalLists compares two resource lists by value, an empty list equal to
// none.
func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if other, ok := b[name]; !ok || q.Cmp(other) != 0 {
			return false
		}
	}
	return true
}
