package criconfig_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/criconfig"
)

// A pod without a security context (never through an API server, which
// defaults one) gets the sandbox namespaces a defaulted pod gets, so its
// containers' user namespace matches its sandbox's.
func TestSandboxNamespacesWithoutSecurityContext(t *testing.T) {
	node := criconfig.Node{MemoryCapacity: 1 << 30}
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "i"}}}}
	defaulted := bare.DeepCopy()
	defaulted.Spec.SecurityContext = &corev1.PodSecurityContext{}
	got, err := criconfig.SandboxConfig(bare, 0, node)
	if err != nil {
		t.Fatal(err)
	}
	want, err := criconfig.SandboxConfig(defaulted, 0, node)
	if err != nil {
		t.Fatal(err)
	}
	gns, wns := got.GetLinux().GetSecurityContext().GetNamespaceOptions(), want.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if wns == nil || !proto.Equal(gns, wns) {
		t.Errorf("namespaces %v, want %v", gns, wns)
	}
}

func TestWithRuntimeStatus(t *testing.T) {
	for _, tc := range []struct {
		name             string
		st               *runtimeapi.StatusResponse
		userns, strictSG bool
	}{
		{"containerd 1.6: nothing said", &runtimeapi.StatusResponse{}, false, false},
		{"containerd 2: both", &runtimeapi.StatusResponse{
			RuntimeHandlers: []*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}},
				{Name: "runc", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}}},
			Features: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true}}, true, true},
		{"another handler only", &runtimeapi.StatusResponse{
			RuntimeHandlers: []*runtimeapi.RuntimeHandler{{Name: "kata", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}}}}, false, false},
	} {
		n := criconfig.Node{UserNamespaces: true, SupplementalGroupsPolicyStrict: true}.WithRuntimeStatus(tc.st)
		if n.UserNamespaces != tc.userns || n.SupplementalGroupsPolicyStrict != tc.strictSG {
			t.Errorf("%s: user namespaces %v, strict groups %v", tc.name, n.UserNamespaces, n.SupplementalGroupsPolicyStrict)
		}
	}
}
