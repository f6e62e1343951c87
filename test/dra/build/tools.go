//go:build tools

// Package drabuild names the binary test/dra/build.sh builds: Kubernetes'
// own DRA test driver (k8s.io/kubernetes/test/e2e/dra/test-driver v1.37.2,
// the one its e2e suite runs), its staging modules replaced by their
// v0.37.2 releases so that podstart's go.mod never requires
// k8s.io/kubernetes.
package drabuild

import (
	_ "k8s.io/kubernetes/test/e2e/dra/test-driver"
)
