package nodestatus_test

import (
	"context"
	"fmt"
	"net"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/nodestatus"
	"github.com/podstart/podstart/runtime/fake"
)

// The Node kubelet would register, its status from kubelet's setters fed
// by a runtime's CRI Status. Heartbeat.Run keeps such a node alive through
// an API client adapted to nodestatus.Client.
func Example() {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rt := fake.New()
	state := nodestatus.NewRuntimeState(clk)
	if err := state.Update(ctx, rt); err != nil {
		panic(err)
	}
	setters := nodestatus.DefaultSetters(nodestatus.SetterConfig{
		NodeName: "node-1",
		Address:  nodestatus.AddressConfig{NodeIPs: []net.IP{net.ParseIP("10.0.0.5")}, ValidateNodeIP: func(net.IP) error { return nil }},
		MachineInfo: func() (*nodestatus.Machine, error) {
			return &nodestatus.Machine{NumCores: 4, MemoryCapacity: 8 << 30, EphemeralStorage: 100 << 30}, nil
		},
		KernelVersion:  "6.1.0",
		OSImage:        "Debian GNU/Linux 12 (bookworm)",
		Runtime:        versionOf{"containerd", "v2.1.0"},
		KubeletVersion: "v1.36.3",
		State:          state,
		Clock:          clk,
	})
	node := nodestatus.InitialNode(nodestatus.Registration{Name: "node-1"})
	for _, set := range setters {
		if err := set(ctx, node); err != nil {
			panic(err)
		}
	}
	fmt.Println(node.Labels["kubernetes.io/hostname"], node.Annotations[nodestatus.AnnotationControllerManagedAttach])
	fmt.Println(node.Status.Addresses)
	fmt.Println(node.Status.Capacity.Cpu(), node.Status.Capacity.Memory(), node.Status.Capacity.Pods())
	fmt.Println(node.Status.NodeInfo.ContainerRuntimeVersion)
	for _, c := range node.Status.Conditions {
		fmt.Println(c.Type, c.Status, c.Reason)
	}
	// Output:
	// node-1 true
	// [{InternalIP 10.0.0.5} {Hostname node-1}]
	// 4 8Gi 110
	// containerd://2.1.0
	// MemoryPressure False KubeletHasSufficientMemory
	// DiskPressure False KubeletHasNoDiskPressure
	// PIDPressure False KubeletHasSufficientPID
	// Ready True KubeletReady
}

type versionOf [2]string

func (v versionOf) Version(context.Context, string) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: v[0], RuntimeVersion: v[1]}, nil
}
