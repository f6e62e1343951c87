//go:build tools

// Package csibuild names the binaries test/csi/build.sh builds: the CSI
// sidecars that run against the tier's API server (external-provisioner
// v6, external-attacher v4, external-resizer v2, as released on the Go module proxy) beside
// the tier's own driver (./bindcsi) and registrar (./registrar).
package csibuild

import (
	_ "github.com/kubernetes-csi/external-attacher/v4/cmd/csi-attacher"
	_ "github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner"
	_ "github.com/kubernetes-csi/external-resizer/v2/cmd/csi-resizer"
)
