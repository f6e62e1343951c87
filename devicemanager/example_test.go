package devicemanager_test

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podstart/podstart/devicemanager"
)

// A Manager in its own directory: plugins register on its kubelet.sock;
// its Admit goes in admission.Config.Resources, DeviceOptions in
// podsync.WithDevices and Capacity in nodestatus.MachineConfig.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "device-plugins")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	m, err := devicemanager.New(devicemanager.WithDir(dir))
	if err != nil {
		panic(err)
	}
	if err := m.Start(context.Background()); err != nil {
		panic(err)
	}
	defer m.Stop()

	// No plugin has registered: nothing to report, and a pod asking for
	// an unknown extended resource is left to the predicates.
	capacity, _, _ := m.Capacity()
	fmt.Println("resources:", len(capacity))
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}}}}}}
	fmt.Println("admit:", m.Admit(context.Background(), pod, nil))
	// Output:
	// resources: 0
	// admit: <nil>
}
