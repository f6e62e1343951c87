package mounts

import (
	"errors"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ErrInvalidBind: a mount cannot be written as a docker bind string.
var ErrInvalidBind = errors.New("mount cannot be a docker bind")

// DockerBinds writes CRI mounts as docker bind strings,
// "host:container[:opts]", with the options in kubelet's (dockershim,
// cri-dockerd) order: "ro", "Z", then "rshared" (Bidirectional) or
// "rslave" (HostToContainer). Private propagation adds nothing.
//
// Docker 25 made "ro" in a bind string recursive; for a non-recursive
// read-only mount on Docker 25 or later use DockerMounts instead.
func DockerBinds(mounts []*runtimeapi.Mount) ([]string, error) {
	out := make([]string, 0, len(mounts))
	for _, m := range mounts {
		if err := checkBind(m); err != nil {
			return nil, err
		}
		var opts []string
		if m.Readonly {
			opts = append(opts, "ro")
		}
		if m.SelinuxRelabel {
			opts = append(opts, "Z")
		}
		switch m.Propagation {
		case runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL:
			opts = append(opts, "rshared")
		case runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER:
			opts = append(opts, "rslave")
		}
		bind := m.HostPath + ":" + m.ContainerPath
		if len(opts) > 0 {
			bind += ":" + strings.Join(opts, ",")
		}
		out = append(out, bind)
	}
	return out, nil
}

func checkBind(m *runtimeapi.Mount) error {
	for _, p := range []string{m.HostPath, m.ContainerPath} {
		if p == "" || strings.ContainsAny(p, ":,\x00") {
			return errorf(ErrInvalidBind, "path %q is empty or contains ':', ',' or NUL", p)
		}
	}
	return nil
}

// DockerMount is a bind mount in the shape of the Docker Engine API's
// mount.Mount (Type "bind"), which cri-dockerd sends today.
type DockerMount struct {
	Type     string
	Source   string
	Target   string
	ReadOnly bool
	// Propagation is "rshared", "rslave" or "" (docker's default).
	Propagation string
	// ReadOnlyNonRecursive keeps a read-only mount from being made
	// recursively read-only by Docker 25 and later.
	ReadOnlyNonRecursive bool
	CreateMountpoint     bool
}

// DockerMounts writes CRI mounts as Docker API bind mounts the way current
// cri-dockerd does: read-only mounts are non-recursive unless the CRI
// mount asks for recursive read-only, which then needs read-only and
// private propagation. SELinux relabelling is not expressed in a mount.
func DockerMounts(mounts []*runtimeapi.Mount) ([]DockerMount, error) {
	out := make([]DockerMount, 0, len(mounts))
	for _, m := range mounts {
		if m.RecursiveReadOnly {
			if !m.Readonly {
				return nil, errorf(ErrRecursiveReadOnly, "recursive read-only mount conflicts with RW mount")
			}
			if m.Propagation != runtimeapi.MountPropagation_PROPAGATION_PRIVATE {
				return nil, errorf(ErrRecursiveReadOnly, "recursive read-only mount needs private propagation")
			}
		}
		dm := DockerMount{Type: "bind", Source: m.HostPath, Target: m.ContainerPath, ReadOnly: m.Readonly, CreateMountpoint: true}
		if m.Readonly {
			dm.ReadOnlyNonRecursive = !m.RecursiveReadOnly
		}
		switch m.Propagation {
		case runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL:
			dm.Propagation = "rshared"
		case runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER:
			dm.Propagation = "rslave"
		}
		out = append(out, dm)
	}
	return out, nil
}
