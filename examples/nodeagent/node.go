package main

import (
	"context"
	"log"
	"net"
	goruntime "runtime"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

const kubeletVersion = "v1.36.3-podstart"

// registerNode creates the Node, or takes over the one of that name, and
// sets its status.
func (a *agent) registerNode(ctx context.Context, runtimeVersion string) (*corev1.Node, error) {
	nodes := a.Client.CoreV1().Nodes()
	want := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: a.NodeName, Labels: map[string]string{
		corev1.LabelHostname: a.NodeName, corev1.LabelOSStable: goruntime.GOOS, corev1.LabelArchStable: goruntime.GOARCH,
	}}}
	node, err := nodes.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		node, err = nodes.Get(ctx, a.NodeName, metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	node.Status = a.nodeStatus(node.Status, runtimeVersion)
	return nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
}

// nodeStatus is the node's status now: capacity, addresses, conditions
// (transition times kept while a condition holds) and node info. Outside
// podstart's pod path, but every agent needs kubelet's node status
// setters: a podstart gap if podstart means to serve node agents.
func (a *agent) nodeStatus(old corev1.NodeStatus, runtimeVersion string) corev1.NodeStatus {
	now := metav1.NewTime(a.Clock.Now())
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(a.host.MemoryCapacity, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
	}
	st := corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: hostIP()}, {Type: corev1.NodeHostName, Address: a.NodeName}},
		NodeInfo:    old.NodeInfo,
	}
	st.NodeInfo.KubeletVersion = kubeletVersion
	st.NodeInfo.OperatingSystem, st.NodeInfo.Architecture = goruntime.GOOS, goruntime.GOARCH
	if runtimeVersion != "" {
		st.NodeInfo.ContainerRuntimeVersion = runtimeVersion
	}
	conds := []struct {
		typ             corev1.NodeConditionType
		status          corev1.ConditionStatus
		reason, message string
	}{
		{corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
		{corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
		{corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
		{corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"},
	}
	for _, c := range conds {
		nc := corev1.NodeCondition{Type: c.typ, Status: c.status, Reason: c.reason, Message: c.message, LastHeartbeatTime: now, LastTransitionTime: now}
		for _, o := range old.Conditions {
			if o.Type == c.typ && o.Status == c.status {
				nc.LastTransitionTime = o.LastTransitionTime
			}
		}
		st.Conditions = append(st.Conditions, nc)
	}
	return st
}

// heartbeat renews the node's Lease and updates its status every
// heartbeatPeriod, until ctx ends.
func (a *agent) heartbeat(ctx context.Context, node *corev1.Node) {
	a.renewLease(ctx, node)
	tick := a.Clock.NewTicker(heartbeatPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		a.renewLease(ctx, node)
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := a.Client.CoreV1().Nodes().Get(ctx, a.NodeName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.Status = a.nodeStatus(n.Status, "")
			_, err = a.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
			return err
		})
		if err != nil && ctx.Err() == nil {
			log.Printf("node status: %v", err)
		}
	}
}

// renewLease creates or renews the node's Lease in kube-node-lease, owned by
// the Node as kubelet's is.
func (a *agent) renewLease(ctx context.Context, node *corev1.Node) {
	leases := a.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(a.Clock.Now())
	secs := int32(leaseDuration.Seconds())
	lease, err := leases.Get(ctx, a.NodeName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: a.NodeName, Namespace: corev1.NamespaceNodeLease, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
			}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &a.NodeName, LeaseDurationSeconds: &secs, RenewTime: &now},
		}
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
	case err == nil:
		lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &a.NodeName, &secs, &now
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil && ctx.Err() == nil {
		log.Printf("node lease: %v", err)
	}
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

// hostIP is the first global unicast address of the host (loopback if none).
func hostIP() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	return "127.0.0.1"
}
