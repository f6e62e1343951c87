//go:build tools

// Package containerdbuild pins containerd v2 for the real-runtime tiers:
// its daemon and the runc v2 shim it starts, built by ../build.sh.
package containerdbuild

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
)
