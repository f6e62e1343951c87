package main

import (
	"context"
	"net"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/podstart/podstart/eviction"
	"github.com/podstart/podstart/nodestatus"
)

const kubeletVersion = "v1.37.2-podstart"

// newHeartbeat is the node's registration, status and Lease, all
// nodestatus's; the agent supplies the API client and what it knows of
// the node.
func (a *agent) newHeartbeat() *nodestatus.Heartbeat {
	state := nodestatus.NewRuntimeState(a.Clock)
	var nodeIPs []net.IP
	if ip := hostIP(); ip != nil {
		nodeIPs = []net.IP{ip}
	}
	setters := nodestatus.DefaultSetters(nodestatus.SetterConfig{
		NodeName:       a.NodeName,
		Address:        nodestatus.AddressConfig{NodeIPs: nodeIPs},
		RootDir:        a.RootDir,
		Runtime:        a.Runtime,
		Images:         a.Runtime,
		KubeletVersion: kubeletVersion,
		KubeletPort:    a.NodeAPI.port(),
		State:          state,
		Clock:          a.Clock,
		MemoryPressure: a.pressure((*eviction.Manager).IsUnderMemoryPressure),
		DiskPressure:   a.pressure((*eviction.Manager).IsUnderDiskPressure),
		PIDPressure:    a.pressure((*eviction.Manager).IsUnderPIDPressure),
		// Device plugins' resources (devices.go), as kubelet's
		// GetDevicePluginResourceCapacity.
		Machine: nodestatus.MachineConfig{MaxPods: a.MaxPods, DevicePlugins: a.dm.Capacity},
	})
	// node.status.volumesInUse after Ready, as kubelet's setters; what
	// each sync reported tells the volume manager which attachable
	// volumes it may mount (kubelet's markVolumesFromNode).
	setters = append(setters, nodestatus.VolumesInUse(a.vm.StatesSynced, a.vm.VolumesInUse))
	return nodestatus.New(nodeClient{a.Client}, nodestatus.Registration{Name: a.NodeName}, setters,
		nodestatus.WithClock(a.Clock), nodestatus.WithRuntime(a.Runtime, state),
		nodestatus.WithReported(func(n *corev1.Node) { a.vm.MarkVolumesReportedInUse(n.Status.VolumesInUse) }))
}

// nodeClient is nodestatus.Client over client-go.
type nodeClient struct{ c kubernetes.Interface }

func (n nodeClient) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	return n.c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

func (n nodeClient) CreateNode(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
	return n.c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
}

func (n nodeClient) PatchNodeStatus(ctx context.Context, name string, patch []byte) (*corev1.Node, error) {
	return n.c.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
}

func (n nodeClient) GetLease(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error) {
	return n.c.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (n nodeClient) CreateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return n.c.CoordinationV1().Leases(l.Namespace).Create(ctx, l, metav1.CreateOptions{})
}

func (n nodeClient) UpdateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return n.c.CoordinationV1().Leases(l.Namespace).Update(ctx, l, metav1.UpdateOptions{})
}

// nodeIPs are the node's InternalIP addresses.
func nodeIPs(node *corev1.Node) []string {
	var ips []string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			ips = append(ips, a.Address)
		}
	}
	return ips
}

// hostIP is the host's first global unicast address, the agent's
// --node-ip; nil leaves the choice to kubelet's detection (DNS, then the
// default route's interface).
func hostIP() net.IP {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() {
			return n.IP
		}
	}
	return nil
}
