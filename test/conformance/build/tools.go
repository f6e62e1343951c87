//go:build tools

// Package conformancebuild names the binaries test/conformance/build.sh
// builds from k8s.io/kubernetes v1.37.2: the rest of the control plane
// (kube-controller-manager, kube-scheduler), agnhost (the image most specs
// run) and the ginkgo CLI that runs the suite on parallel nodes. The suite
// itself is ./e2e, built with "go test -c".
package conformancebuild

import (
	_ "github.com/onsi/ginkgo/v2/ginkgo"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/test/images/agnhost"
)
