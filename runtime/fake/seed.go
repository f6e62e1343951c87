package fake

import (
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SeedSandbox puts a sandbox on the runtime without a recorded call, as a
// node found after an agent restart: built from config as RunPodSandbox
// would, in the given state, created at createdAt (zero: now).
func (r *Runtime) SeedSandbox(config *runtimeapi.PodSandboxConfig, state runtimeapi.PodSandboxState, createdAt time.Time) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &sandbox{id: r.newID("sandbox"), config: clone(config), state: state, createdAt: r.stamp(createdAt)}
	if config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() != runtimeapi.NamespaceMode_NODE {
		s.ip = fmt.Sprintf("10.88.%d.%d", (r.nextID/250)%250, r.nextID%250+2)
	}
	r.sandboxes[s.id] = s
	return s.id
}

// Seeded is a container instance for SeedContainer. Zero times are left
// unset; State defaults to created; Exit applies to an exited instance.
type Seeded struct {
	State                            runtimeapi.ContainerState
	CreatedAt, StartedAt, FinishedAt time.Time
	Exit                             Exit
}

// SeedContainer puts a container instance in a sandbox without a recorded
// call, built from config as CreateContainer would (labels, annotations,
// log path, image reference; the image is stored if absent).
func (r *Runtime) SeedContainer(sandboxID string, config *runtimeapi.ContainerConfig, seed Seeded) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxes[sandboxID]
	if !ok {
		return "", fmt.Errorf("fake: no sandbox %q", sandboxID)
	}
	name := config.GetImage().GetImage()
	img := r.findImage(name)
	if img == nil {
		n, err := normalize(name)
		if err != nil {
			return "", fmt.Errorf("fake: image %q: %w", name, err)
		}
		img = r.storeImage(n)
	}
	c := &container{id: r.newID("container"), sandboxID: sandboxID, config: clone(config), imageRef: img.Id,
		logPath: joinLogPath(s.config.GetLogDirectory(), config.GetLogPath()),
		state:   runtimeapi.ContainerState_CONTAINER_CREATED, createdAt: r.stamp(seed.CreatedAt)}
	if seed.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		c.state = seed.State
	}
	if !seed.StartedAt.IsZero() {
		c.startedAt = seed.StartedAt.UnixNano()
	} else if seed.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
		c.startedAt = c.createdAt
	}
	if seed.State == runtimeapi.ContainerState_CONTAINER_EXITED {
		if c.startedAt == 0 {
			c.startedAt = c.createdAt
		}
		r.exitContainer(c, seed.Exit)
		if !seed.FinishedAt.IsZero() {
			c.exitedAt = seed.FinishedAt.UnixNano()
		}
	}
	r.containers[c.id] = c
	return c.id, nil
}

// stamp is t in nanoseconds, or now when t is zero. Callers hold mu.
func (r *Runtime) stamp(t time.Time) int64 {
	if t.IsZero() {
		return r.now()
	}
	return t.UnixNano()
}
