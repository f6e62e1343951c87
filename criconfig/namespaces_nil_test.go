package criconfig_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
