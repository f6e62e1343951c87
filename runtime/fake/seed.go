package fake

import (
	"errors"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SeedSandbox puts a sandbox on the runtime as a node found after an agent
// restart: built from config as RunPodSandbox builds it (metadata, labels,
// annotations, namespace options, a pod IP unless on the host network),
// in the given state, created at createdAt (zero: now). No call is
// recorded, no interceptor runs and no event is sent. It panics on a
// config without metadata, which RunPodSandbox refuses.
func (r *Runtime) SeedSandbox(config *runtimeapi.PodSandboxConfig, state runtimeapi.PodSandboxState, createdAt time.Time) string {
	if config.GetMetadata() == nil {
		panic("fake.SeedSandbox: sandbox config must include metadata")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &sandbox{id: r.newID("sandbox"), config: clone(config), state: state, createdAt: r.stamp(createdAt)}
	if config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() != runtimeapi.NamespaceMode_NODE {
		s.ip = fmt.Sprintf("10.88.%d.%d", (r.nextID/250)%250, r.nextID%250+2)
	}
	r.addSandbox(s)
	return s.id
}

// Seeded is the state of a container instance for SeedContainer.
type Seeded struct {
	// State defaults to created.
	State runtimeapi.ContainerState
	// CreatedAt defaults to now. StartedAt defaults to CreatedAt for a
	// running or exited instance; FinishedAt defaults to now for an exited
	// one. Times that the state does not have are not reported, as on
	// containerd.
	CreatedAt, StartedAt, FinishedAt time.Time
	// Exit is how an exited instance ended; an empty Reason becomes
	// "Completed" or "Error" as ExitContainer makes it.
	Exit Exit
}

// SeedContainer puts a container instance in a sandbox as a node found
// after an agent restart: built from config as CreateContainer builds it
// (metadata, labels, annotations, mounts, the log path under the sandbox's
// log directory, the image's ID as its image ref; an absent image is
// stored), in the seeded state. No call is recorded, no interceptor runs
// and no event is sent. The sandbox must exist, in any state.
func (r *Runtime) SeedContainer(sandboxID string, config *runtimeapi.ContainerConfig, seed Seeded) (string, error) {
	if config.GetMetadata() == nil {
		return "", errors.New("fake.SeedContainer: container config must include metadata")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxes[sandboxID]
	if !ok {
		return "", fmt.Errorf("fake.SeedContainer: no sandbox %q", sandboxID)
	}
	name := config.GetImage().GetImage()
	img := r.findImage(name)
	if img == nil {
		n, err := normalize(name)
		if err != nil {
			return "", fmt.Errorf("fake.SeedContainer: image %q: %w", name, err)
		}
		img = r.storeImage(n)
	}
	c := &container{id: r.newID("container"), sandboxID: sandboxID, config: clone(config), imageRef: img.Id,
		logPath: joinLogPath(s.config.GetLogDirectory(), config.GetLogPath()),
		state:   seed.State, createdAt: r.stamp(seed.CreatedAt)}
	switch seed.State {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		c.startedAt = c.createdAt
		if !seed.StartedAt.IsZero() {
			c.startedAt = seed.StartedAt.UnixNano()
		}
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		c.startedAt = c.createdAt
		if !seed.StartedAt.IsZero() {
			c.startedAt = seed.StartedAt.UnixNano()
		}
		c.exitedAt = r.stamp(seed.FinishedAt)
		c.exit = withReason(seed.Exit)
	}
	r.addContainer(c)
	return c.id, nil
}

// stamp is t in nanoseconds, or now when t is zero. Callers hold mu.
func (r *Runtime) stamp(t time.Time) int64 {
	if t.IsZero() {
		return r.now()
	}
	return t.UnixNano()
}
