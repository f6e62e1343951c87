package admission_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/admission"
)

func Example() {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110"),
		}},
	}
	// kubelet's safe sysctls for the node's kernel, and its
	// --allowed-unsafe-sysctls.
	sysctls, err := admission.NewSysctlAllowlist(append(admission.SafeSysctls("6.1.0"), "net.core.somaxconn"))
	if err != nil {
		panic(err)
	}
	a, err := admission.New(admission.Config{
		Node:    func(context.Context, bool) (*corev1.Node, error) { return node, nil },
		Sysctls: sysctls,
	})
	if err != nil {
		panic(err)
	}
	running := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "1"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}},
	}}}}
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "tuned", UID: "2"}, Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "65536"}}},
			Containers:      []corev1.Container{{Name: "c"}},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "batch", UID: "3"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "small", UID: "4"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}},
	}
	for _, pod := range pods {
		err := a.Admit(context.Background(), pod, []*corev1.Pod{running})
		var r *admission.Rejection
		if errors.As(err, &r) {
			fmt.Printf("%s: %s: %s\n", pod.Name, r.Reason(), admission.StatusMessage(r.Message()))
			continue
		}
		fmt.Printf("%s: admitted\n", pod.Name)
	}
	// Output:
	// tuned: SysctlForbidden: Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted
	// batch: OutOfcpu: Pod was rejected: Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000
	// small: admitted
}
