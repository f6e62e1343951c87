package mounts

import (
	"errors"
	"strings"
)

// ErrInvalidBind: a mount cannot be written as a docker bind string.
var ErrInvalidBind = errors.New("mount cannot be a docker bind")

// DockerBinds writes mounts as docker bind strings,
// "host:container[:opts]", with the options in kubelet's (dockershim,
// cri-dockerd) order: "ro", "Z", then "rshared" (Bidirectional) or
// "rslave" (HostToContainer). Private propagation adds nothing. "Z" is
// written only when selinuxEnabled (the node has SELinux), as kubelet asks
// for relabelling only then.
//
// Docker 25 made "ro" in a bind string recursive; for a non-recursive
// read-only mount on Docker 25 or later use DockerMounts instead.
func DockerBinds(mounts []Mount, selinuxEnabled bool) ([]string, error) {
	out := make([]string, 0, len(mounts))
	for _, m := range mounts {
		if err := checkBind(m); err != nil {
			return nil, err
		}
		var opts []string
		if m.ReadOnly {
			opts = append(opts, "ro")
		}
		if m.SELinuxRelabel && selinuxEnabled {
			opts = append(opts, "Z")
		}
		switch m.Propagation {
		case PropagationBidirectional:
			opts = append(opts, "rshared")
		case PropagationHostToContainer:
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

func checkBind(m Mount) error {
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

// DockerMounts writes mounts as Docker API bind mounts the way current
// cri-dockerd does: read-only mounts are non-recursive unless the mount
// asks for recursive read-only, which then needs a runtime handler that
// supports it (rroSupported), private propagation and read-only, checked
// in cri-dockerd's order. SELinux relabelling is not expressed in a mount.
func DockerMounts(mounts []Mount, rroSupported bool) ([]DockerMount, error) {
	out := make([]DockerMount, 0, len(mounts))
	for _, m := range mounts {
		if m.RecursiveReadOnly {
			if !rroSupported {
				return nil, errorf(ErrRecursiveReadOnly, "recursive read-only mount is not supported by the runtime handler")
			}
			if m.Propagation != PropagationPrivate {
				return nil, errorf(ErrRecursiveReadOnly, "recursive read-only mount needs private propagation")
			}
			if !m.ReadOnly {
				return nil, errorf(ErrRecursiveReadOnly, "recursive read-only mount conflicts with RW mount")
			}
		}
		dm := DockerMount{Type: "bind", Source: m.HostPath, Target: m.ContainerPath, ReadOnly: m.ReadOnly, CreateMountpoint: true}
		if m.ReadOnly {
			dm.ReadOnlyNonRecursive = !m.RecursiveReadOnly
		}
		switch m.Propagation {
		case PropagationBidirectional:
			dm.Propagation = "rshared"
		case PropagationHostToContainer:
			dm.Propagation = "rslave"
		}
		out = append(out, dm)
	}
	return out, nil
}
