package runtime_test

import (
	cri "k8s.io/cri-api/pkg/apis"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

// These assignments compile only while podstart's interfaces are subsets,
// with identical signatures, of cri-api's: kubelet's client
// (k8s.io/cri-client returns these cri-api interfaces) and cri-api's own
// fakes can be passed wherever podstart wants a runtime.
var (
	_ runtime.ImageService   = cri.ImageManagerService(nil)
	_ runtime.RuntimeService = cri.RuntimeService(nil)
	_ runtime.ImageService   = (*critest.FakeImageService)(nil)
	_ runtime.RuntimeService = (*critest.FakeRuntimeService)(nil)
	_ runtime.Runtime        = (*runtime.Client)(nil)
	_ runtime.Runtime        = (*fake.Runtime)(nil)
)
