package criconfig_test

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/criconfig"
)

// crictlDecode is crictl's loadPodSandboxConfig and loadContainerConfig
// decoding (cri-tools cmd/crictl/util.go: apimachinery's
// NewYAMLOrJSONDecoder with a 4096-byte buffer into cri-api's types),
// reproduced here rather than importing cri-tools and its dependencies.
func crictlDecode(t *testing.T, data []byte, into proto.Message) {
	t.Helper()
	if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(into); err != nil {
		t.Fatalf("crictl's decoder: %v\n%s", err, data)
	}
}

func TestCrictlJSONRoundTrip(t *testing.T) {
	t.Parallel()
	grace := int64(30)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "1234", Annotations: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{
			DNSPolicy: corev1.DNSClusterFirst, TerminationGracePeriodSeconds: &grace,
			SecurityContext: &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_forward", Value: "1"}}},
			Containers: []corev1.Container{{
				Name: "app", Image: "nginx:1.27", Command: []string{"nginx", "-g", "daemon off;"},
				Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
			}},
		},
	}
	node := criconfig.Node{ClusterDNS: []string{"10.96.0.10"}, MemoryCapacity: 8 << 30}
	sandbox, err := criconfig.SandboxConfig(pod, 1, node)
	if err != nil {
		t.Fatal(err)
	}
	data, err := criconfig.SandboxJSON(sandbox)
	if err != nil {
		t.Fatal(err)
	}
	var gotSandbox runtimeapi.PodSandboxConfig
	crictlDecode(t, data, &gotSandbox)
	if !proto.Equal(&gotSandbox, sandbox) {
		t.Errorf("sandbox changed through crictl's decoder:\n%v\n%v", &gotSandbox, sandbox)
	}
	for _, field := range []string{`"log_directory"`, `"cgroup_parent"`, `"port_mappings"`, `"security_context"`} {
		if !bytes.Contains(data, []byte(field)) {
			t.Errorf("sandbox JSON has no %s:\n%s", field, data)
		}
	}

	c, err := criconfig.ContainerConfig(criconfig.Container{Pod: pod, Container: &pod.Spec.Containers[0], ImageRef: "sha256:0123",
		Env: []criconfig.EnvVar{{Name: "GREETING", Value: "grüß dich"}, {Name: "EMPTY"}}}, node)
	if err != nil {
		t.Fatal(err)
	}
	data, err = criconfig.ContainerJSON(c)
	if err != nil {
		t.Fatal(err)
	}
	var gotContainer runtimeapi.ContainerConfig
	crictlDecode(t, data, &gotContainer)
	if !proto.Equal(&gotContainer, c) {
		t.Errorf("container changed through crictl's decoder:\n%v\n%v", &gotContainer, c)
	}
	if !bytes.Contains(data, []byte(`"value": "grüß dich"`)) {
		t.Errorf("environment values are not strings:\n%s", data)
	}
}

func TestCrictlJSONRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    func() ([]byte, error)
	}{
		{"sandbox without metadata", func() ([]byte, error) { return criconfig.SandboxJSON(&runtimeapi.PodSandboxConfig{}) }},
		{"sandbox without namespace", func() ([]byte, error) {
			return criconfig.SandboxJSON(&runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p"}})
		}},
		{"nil sandbox", func() ([]byte, error) { return criconfig.SandboxJSON(nil) }},
		{"container without name", func() ([]byte, error) {
			return criconfig.ContainerJSON(&runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{}})
		}},
		{"container with a non-UTF-8 value", func() ([]byte, error) {
			return criconfig.ContainerJSON(&runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
				Envs: []*runtimeapi.KeyValue{{Key: "K", Value: []byte{0xff}}}})
		}},
	}
	for _, tt := range tests {
		if _, err := tt.f(); !errors.Is(err, criconfig.ErrNotCrictlReadable) {
			t.Errorf("%s: %v, want ErrNotCrictlReadable", tt.name, err)
		}
	}
}
