//go:build tools

// Package runcbuild pins runc for containerd v2 (the version its
// script/setup/runc-version names), built by ../build.sh with seccomp.
package runcbuild

import (
	_ "github.com/opencontainers/runc"
)
