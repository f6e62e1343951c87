package cgroups_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podstart/podstart/cgroups"
	"github.com/podstart/podstart/criconfig"
)

// A node's pod cgroups on cgroup v1 (here in memory; DetectTree("")
// gives the host's): the tiers, a Burstable pod's cgroup before its
// sandbox, and its removal after it is killed.
func Example() {
	ctx := context.Background()
	tree := cgroups.NewMemFS(false)
	node := criconfig.Node{} // cgroupfs driver, cgroupsPerQOS, cgroup root "/"
	m, err := cgroups.NewManager(tree.Tree(), node,
		cgroups.WithNodeAllocatable(cgroups.NodeAllocatable{
			Capacity:       corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
			SystemReserved: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		}),
		cgroups.WithKill(tree.Kill))
	if err != nil {
		panic(err)
	}
	if err := m.EnsureQoS(ctx); err != nil {
		panic(err)
	}
	pod := &corev1.Pod{}
	pod.UID = "6c1a4e95-6bb6-11e6"
	pod.Spec.Containers = []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("128Mi")},
	}}}
	if err := m.EnsurePod(ctx, pod); err != nil {
		panic(err)
	}
	fmt.Println("sandbox cgroup parent:", criconfig.CgroupParent(pod, node))
	for _, f := range []string{"memory/kubepods/memory.limit_in_bytes", "cpu/kubepods/burstable/pod6c1a4e95-6bb6-11e6/cpu.shares",
		"cpu/kubepods/burstable/pod6c1a4e95-6bb6-11e6/cpu.cfs_quota_us", "memory/kubepods/burstable/pod6c1a4e95-6bb6-11e6/memory.limit_in_bytes"} {
		v, _ := tree.ReadFile(f)
		fmt.Println(f, v)
	}
	n, _ := m.PodName(pod)
	systemd, _ := n.Systemd()
	fmt.Println("under systemd:", systemd)
	if err := m.RemovePod(ctx, pod); err != nil {
		panic(err)
	}
	fmt.Println("after removal:", tree.Exists("cpu/kubepods/burstable/pod6c1a4e95-6bb6-11e6"))
	// Output:
	// sandbox cgroup parent: /kubepods/burstable/pod6c1a4e95-6bb6-11e6
	// memory/kubepods/memory.limit_in_bytes 7516192768
	// cpu/kubepods/burstable/pod6c1a4e95-6bb6-11e6/cpu.shares 256
	// cpu/kubepods/burstable/pod6c1a4e95-6bb6-11e6/cpu.cfs_quota_us 100000
	// memory/kubepods/burstable/pod6c1a4e95-6bb6-11e6/memory.limit_in_bytes 134217728
	// under systemd: /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod6c1a4e95_6bb6_11e6.slice
	// after removal: false
}
