package podsync

import (
	"math"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerState is a container's state as the runtime reports it.
type ContainerState string

// Container states.
const (
	ContainerStateCreated ContainerState = "created"
	ContainerStateRunning ContainerState = "running"
	ContainerStateExited  ContainerState = "exited"
	ContainerStateUnknown ContainerState = "unknown"
)

// ContainerStatus is one container instance as the runtime reports it
// (kubelet's kubecontainer.Status).
type ContainerStatus struct {
	ID         string
	Name       string
	State      ContainerState
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	ExitCode   int
	Reason     string
	Message    string
	// Image is the image as the runtime names the instance's (CRI status
	// image.image, which kubelet reports: containerd gives the first repo
	// tag), not necessarily the spec's spelling; ImageRef is its ref.
	Image        string
	ImageRef     string
	RestartCount int
	// Hash is HashContainer of the spec the instance was created from.
	Hash uint64
	// SandboxID is the sandbox the instance ran in, when known. Kubelet
	// does not track it; podstart uses it to tell an app container that
	// exited in the current sandbox from one of a previous sandbox.
	SandboxID string
	// LogPath is the instance's log file on the host.
	LogPath string
	// Annotations are the instance's CRI annotations (kubelet's: hash,
	// restart count, grace periods, pre-stop hook).
	Annotations map[string]string
	// Resources are the CPU and memory the runtime reports the instance
	// runs with, nil when it reports none (kubelet's ContainerResources).
	Resources *ContainerResources
	// User is the identity of the instance's first process as the
	// runtime reports it (CRI ContainerStatus.user: containerd 2.x does,
	// 1.6 does not); nil when it reports none.
	User *runtimeapi.ContainerUser
}

// ContainerResources are a container's CPU and memory as the runtime
// reports them; a value the runtime does not report is nil.
type ContainerResources struct {
	CPULimit, CPURequest, MemoryLimit *resource.Quantity
}

// containerResourcesOf is kubelet's toKubeContainerResources: the CPU
// limit from the CFS quota, the request from the shares, the memory limit.
func containerResourcesOf(r *runtimeapi.ContainerResources) *ContainerResources {
	lr := r.GetLinux()
	if lr == nil {
		return nil
	}
	out := &ContainerResources{}
	if lr.CpuPeriod > 0 && lr.CpuQuota != -1 {
		if milli := lr.CpuQuota * 1000 / lr.CpuPeriod; milli > 0 {
			out.CPULimit = resource.NewMilliQuantity(milli, resource.DecimalSI)
		}
	}
	if lr.CpuShares >= 2 {
		if milli := int64(math.Ceil(float64(lr.CpuShares*1000) / 1024)); milli > 0 {
			out.CPURequest = resource.NewMilliQuantity(milli, resource.DecimalSI)
		}
	}
	if lr.MemoryLimitInBytes > 0 {
		out.MemoryLimit = resource.NewQuantity(lr.MemoryLimitInBytes, resource.BinarySI)
	}
	if out.CPULimit == nil && out.CPURequest == nil && out.MemoryLimit == nil {
		return nil
	}
	return out
}

// PodStatus is a pod as the runtime reports it (kubelet's
// kubecontainer.PodStatus).
type PodStatus struct {
	UID       types.UID
	Name      string
	Namespace string
	IPs       []string
	// SandboxStatuses, newest first.
	SandboxStatuses []*runtimeapi.PodSandboxStatus
	// ContainerStatuses, newest first: an instance restarted later comes
	// before its older instances.
	ContainerStatuses []*ContainerStatus
	// ActuatedResources are the CPU and memory last applied to each
	// container, by name (kubelet's actuated state): what an in-place
	// resize compares the spec with. SyncPod fills it from its records when
	// nil; with a nil map ComputePodActions computes no resize.
	ActuatedResources map[string]ResourceValues
}

// FindContainerStatusByName returns the newest instance of the named
// container, or nil.
func (s *PodStatus) FindContainerStatusByName(name string) *ContainerStatus {
	if s == nil {
		return nil
	}
	for _, c := range s.ContainerStatuses {
		if c.Name == name {
			return c
		}
	}
	return nil
}
