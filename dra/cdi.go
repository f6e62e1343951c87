package dra

import (
	"fmt"

	"tags.cncf.io/container-device-interface/pkg/parser"
)

// validateCDIName checks that a driver's CDI device ID is a fully
// qualified CDI name, vendor/class=name, with the CDI specification's
// characters (the CDI project's own parser, which imports only the
// standard library). Kubelet passes the IDs to the runtime unchecked; the
// runtime then fails the container. podstart refuses them at prepare, so
// that nothing hostile reaches the checkpoint or the ContainerConfig.
func validateCDIName(id string) error {
	if _, _, _, err := parser.ParseQualifiedName(id); err != nil {
		return fmt.Errorf("%s is not a fully qualified CDI device name (vendor/class=name)", sanitize(id))
	}
	return nil
}
