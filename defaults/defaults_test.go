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
