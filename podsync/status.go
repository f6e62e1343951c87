package podsync

import (
	"time"

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
	ID           string
	Name         string
	State        ContainerState
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int
	Reason       string
	Message      string
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
