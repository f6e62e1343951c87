package criconfig

import (
	"errors"
	"maps"
	"math"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestMemoryQoS follows kubelet v1.37.2's kuberuntime tests
// (TestGenerateContainerConfigWithMemoryQoSEnforced,
// ...MemoryHighNotSetWhenThrottlingFactorNil, ...MemoryQoSPolicyNone,
// TestMemoryHighClearedWhenMemoryQoSDisabled,
// TestContainerMemoryHighSkippedWithPodLevelResources): the memory keys of
// the Unified resources kubelet sends, on create and on resize.
func TestMemoryQoS(t *testing.T) {
	const page = 4096
	factor := 0.9
	allocatable := int64(32 << 30)
	high := func(req, lim int64) string {
		return strconv.FormatInt(int64(math.Floor(float64(req)+(float64(lim)-float64(req))*factor)/page)*page, 10)
	}
	v2 := Node{CgroupV2: true, SingleProcessOOMKill: true, PageSize: page, MemoryCapacity: 32 << 30, MemoryThrottlingFactor: &factor,
		MemoryReservationPolicy: MemoryReservationTiered, Allocatable: rl("cpu", "4", "memory", "32Gi")}
	burstable := func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources = res(rl("memory", "128Mi"), rl("memory", "256Mi"))
	}
	noLimit := func(p *corev1.Pod) { p.Spec.Containers[0].Resources = res(rl("memory", "128Mi"), nil) }
	guaranteed := func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources = res(rl("cpu", "1", "memory", "256Mi"), rl("cpu", "1", "memory", "256Mi"))
	}
	with := func(mut func(*Node)) Node { n := v2; mut(&n); return n }
	tests := []struct {
		name string
		pod  func(*corev1.Pod)
		node Node
		want map[string]string
	}{
		{"burstable: memory.low at the request, memory.high from the limit", burstable, v2,
			map[string]string{"memory.low": "134217728", "memory.high": high(128<<20, 256<<20)}},
		{"burstable without a limit: memory.high from node allocatable", noLimit, v2,
			map[string]string{"memory.low": "134217728", "memory.high": high(128<<20, allocatable)}},
		{"best effort: memory.min and memory.low 0, memory.high from allocatable", nil, v2,
			map[string]string{"memory.min": "0", "memory.low": "0", "memory.high": high(0, allocatable)}},
		{"guaranteed: memory.min at the request, no memory.high", guaranteed, v2,
			map[string]string{"memory.min": "268435456"}},
		{"no throttling factor: no memory.high", burstable, with(func(n *Node) { n.MemoryThrottlingFactor = nil }),
			map[string]string{"memory.low": "134217728"}},
		{"policy None: memory.min and memory.low 0", guaranteed, with(func(n *Node) { n.MemoryReservationPolicy = MemoryReservationNone }),
			map[string]string{"memory.min": "0", "memory.low": "0"}},
		{"kubelet's defaults (gate on, policy None, no factor)", burstable, Node{CgroupV2: true, SingleProcessOOMKill: true, MemoryCapacity: 32 << 30},
			map[string]string{"memory.min": "0", "memory.low": "0"}},
		{"MemoryQoS off on cgroup v2: memory.high max", burstable, with(func(n *Node) { n.MemoryQoS = ptr(false) }),
			map[string]string{"memory.high": "max"}},
		{"cgroup v1: nothing", burstable, with(func(n *Node) { n.CgroupV2 = false }), map[string]string{}},
		{"pod-level memory limit, container without one: no container memory.high", func(p *corev1.Pod) {
			p.Spec.Resources = ptr(res(nil, rl("memory", "1Gi")))
			p.Spec.Containers[0].Resources = res(rl("memory", "128Mi"), nil)
		}, with(func(n *Node) { n.MemoryReservationPolicy = "" }), map[string]string{"memory.min": "0", "memory.low": "0"}},
		{"pod-level memory limit, container with one: memory.high from its own", func(p *corev1.Pod) {
			p.Spec.Resources = ptr(res(nil, rl("memory", "1Gi")))
			p.Spec.Containers[0].Resources = res(rl("memory", "128Mi"), rl("memory", "512Mi"))
		}, with(func(n *Node) { n.MemoryReservationPolicy = "" }),
			map[string]string{"memory.min": "0", "memory.low": "0", "memory.high": high(128<<20, 512<<20)}},
	}
	memoryKeys := func(u map[string]string) map[string]string {
		out := map[string]string{}
		for _, k := range []string{"memory.min", "memory.low", "memory.high"} {
			if v, ok := u[k]; ok {
				out[k] = v
			}
		}
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod(tt.pod)
			created := containerConfig(t, p, ImageUser{}, tt.node).Linux.Resources.Unified
			if got := memoryKeys(created); !maps.Equal(got, tt.want) {
				t.Fatalf("create: Unified memory keys %v, want %v", got, tt.want)
			}
			resized, err := ContainerResources(p, &p.Spec.Containers[0], tt.node)
			if err != nil {
				t.Fatal(err)
			}
			if got := memoryKeys(resized.Linux.Unified); !maps.Equal(got, tt.want) {
				t.Fatalf("resize: Unified memory keys %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("memory.high from allocatable that is unknown is refused", func(t *testing.T) {
		p := testPod(noLimit)
		n := with(func(n *Node) { n.Allocatable = nil })
		_, err := ContainerConfig(Container{Pod: p, Container: &p.Spec.Containers[0]}, n)
		if !errors.Is(err, ErrUnknownNodeFact) {
			t.Fatalf("err = %v, want ErrUnknownNodeFact", err)
		}
		if _, err := ContainerResources(p, &p.Spec.Containers[0], n); !errors.Is(err, ErrUnknownNodeFact) {
			t.Fatalf("resize err = %v, want ErrUnknownNodeFact", err)
		}
	})
	t.Run("an unknown reservation policy is refused by name", func(t *testing.T) {
		p := testPod(burstable)
		_, err := ContainerConfig(Container{Pod: p, Container: &p.Spec.Containers[0]}, with(func(n *Node) { n.MemoryReservationPolicy = "Strict" }))
		if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("err = %v, want ErrUnsupported", err)
		}
	})
}
