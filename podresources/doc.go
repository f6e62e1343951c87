// Package podresources is kubelet v1.37.2's pod-resources API
// (k8s.io/kubelet/pkg/apis/podresources/v1, the PodResourcesLister
// service monitoring agents such as GPU exporters read): List, Get and
// GetAllocatableResources, over small providers.
//
//   - List answers for the active pods (KubeletPodResourcesListUseActivePods,
//     on by default): each pod's restartable init containers (sidecars),
//     then its containers, with the devices of each (DevicesProvider) and
//     its DRA resources (DynamicResourcesProvider, when given). The device
//     provider first frees the devices of pods no longer active
//     (UpdateAllocatedDevices), as kubelet's List does.
//   - Get answers for one pod by namespace and name; an unknown pod is the
//     error "pod <name> in namespace <namespace> not found".
//   - GetAllocatableResources answers the node's allocatable devices.
//
// Serve serves a Server on a unix socket (kubelet's
// <root-dir>/pod-resources/kubelet.sock, DefaultSocket) with kubelet's
// rate limit (DefaultQPS, DefaultBurstTokens: beyond it a call fails with
// ResourceExhausted, "rejected by rate limit").
//
// # Differences from kubelet
//
//   - CPU IDs and memory are never filled: kubelet fills them from its CPU
//     and memory managers, whose default policies ("none") give none, and
//     pod-level CPU IDs and memory only with PodLevelResourceManagers
//     (beta, off by default). podstart has neither manager.
//   - The v1alpha1 service kubelet still serves beside v1 is not served.
//   - Devices are listed one entry per device and NUMA node, ordered by
//     resource and ID (kubelet: map order).
package podresources
