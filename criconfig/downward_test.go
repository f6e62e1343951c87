package criconfig

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestResourceFieldRefLimits follows kubelet v1.37.2's
// TestPodResourceLimitsDefaulting (node allocatable cpu 6, memory 4Gi): a
// limit the container does not set, or sets to 0, reads as the pod-level
// limit, then as the node's allocatable.
func TestResourceFieldRefLimits(t *testing.T) {
	n := Node{Allocatable: rl("cpu", "6", "memory", "4Gi")}
	limits := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] != "" {
				l[corev1.ResourceName(kv[i])] = rl(kv[i], kv[i+1])[corev1.ResourceName(kv[i])]
			}
		}
		return l
	}
	tests := []struct {
		name               string
		pod, container     corev1.ResourceList
		noPodLevel         bool
		wantCPU, wantBytes string
	}{
		{"zero limits read as allocatable", nil, limits("cpu", "0", "memory", "0"), true, "6", "4294967296"},
		{"own cpu, zero memory", nil, limits("cpu", "1", "memory", "0"), true, "1", "4294967296"},
		{"no limits", nil, limits(), true, "6", "4294967296"},
		{"zero cpu, own memory", nil, limits("cpu", "0", "memory", "1Mi"), true, "6", "1048576"},
		{"pod-level memory, zero pod-level cpu", limits("cpu", "0", "memory", "1Mi"), limits("cpu", "0", "memory", "0"), false, "6", "1048576"},
		{"pod-level cpu, zero pod-level memory", limits("cpu", "1", "memory", "0"), limits("cpu", "0", "memory", "0"), false, "1", "4294967296"},
		{"pod-level limits, none in the container", limits("cpu", "1", "memory", "1Mi"), limits(), false, "1", "1048576"},
		{"pod-level memory above the container's", limits("cpu", "1", "memory", "5Mi"), limits("cpu", "0", "memory", "1Mi"), false, "1", "1048576"},
		{"container's own limits win", limits("cpu", "1", "memory", "5Mi"), limits("cpu", "1", "memory", "1Mi"), false, "1", "1048576"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Limits = tt.container
				if !tt.noPodLevel {
					p.Spec.Resources = &corev1.ResourceRequirements{Limits: tt.pod}
				}
			})
			for res, want := range map[string]string{"limits.cpu": tt.wantCPU, "limits.memory": tt.wantBytes} {
				src := &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: res}}
				got, _, err := FieldRefValue(p, &p.Spec.Containers[0], src, nil, n)
				if err != nil || got != want {
					t.Errorf("%s = %q, %v; want %q", res, got, err, want)
				}
			}
		})
	}
	t.Run("an init container named by containerName keeps its own (no) limit", func(t *testing.T) {
		p := testPod(func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{{Name: "init"}} })
		src := &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "init", Resource: "limits.cpu"}}
		if got, _, err := FieldRefValue(p, &p.Spec.Containers[0], src, nil, n); err != nil || got != "0" {
			t.Fatalf("= %q, %v; want 0 as kubelet", got, err)
		}
	})
	t.Run("a missing container", func(t *testing.T) {
		p := testPod(nil)
		src := &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "nope", Resource: "limits.cpu"}}
		if _, _, err := FieldRefValue(p, &p.Spec.Containers[0], src, nil, n); err == nil || err.Error() != "container nope not found" {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestUnknownNodeFacts: what kubelet would read from its node object and
// podstart was not told is refused by name, never sent as "" or "0".
func TestUnknownNodeFacts(t *testing.T) {
	p := testPod(func(p *corev1.Pod) { p.Spec.Containers[0].Resources = res(rl("cpu", "1"), rl("cpu", "1")) })
	c := &p.Spec.Containers[0]
	tests := []struct {
		name string
		src  *corev1.EnvVarSource
		node Node
	}{
		{"status.hostIP", &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}, Node{}},
		{"status.hostIPs", &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIPs"}}, Node{}},
		{"limits.memory", &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}, Node{Allocatable: rl("cpu", "2")}},
		{"limits.ephemeral-storage", &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.ephemeral-storage"}}, Node{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, _, err := FieldRefValue(p, c, tt.src, nil, tt.node)
			if !errors.Is(err, ErrUnknownNodeFact) {
				t.Fatalf("= %q, %v; want ErrUnknownNodeFact", v, err)
			}
		})
	}
	t.Run("OOM score of a Burstable container", func(t *testing.T) {
		p := testPod(func(p *corev1.Pod) { p.Spec.Containers[0].Resources = res(rl("memory", "1Gi"), nil) })
		_, err := ContainerConfig(Container{Pod: p, Container: &p.Spec.Containers[0]}, Node{})
		if !errors.Is(err, ErrUnknownNodeFact) {
			t.Fatalf("err = %v, want ErrUnknownNodeFact", err)
		}
		// BestEffort and Guaranteed scores need no capacity.
		for _, r := range []corev1.ResourceRequirements{{}, res(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))} {
			p.Spec.Containers[0].Resources = r
			if _, err := ContainerConfig(Container{Pod: p, Container: &p.Spec.Containers[0]}, Node{}); err != nil {
				t.Fatal(err)
			}
		}
	})
	// What needs no node fact is still answered.
	for res, want := range map[string]string{"limits.cpu": "1", "requests.memory": "0"} {
		src := &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: res}}
		if v, _, err := FieldRefValue(p, c, src, nil, Node{}); err != nil || v != want {
			t.Errorf("%s = %q, %v; want %q", res, v, err, want)
		}
	}
}
