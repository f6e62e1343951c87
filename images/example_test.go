package images_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/runtime/fake"
)

type printer struct{}

func (printer) Eventf(_ apiruntime.Object, typ, reason, format string, args ...interface{}) {
	fmt.Printf("event %s %s\n", typ, reason)
}

// Pull an image from a registry that needs the pod's pull secret.
func ExampleManager_EnsureImageExists() {
	rt := fake.New(fake.WithRegistryAuth("registry.example.com", "ci", "s3cret"))
	m := images.NewManager(rt, images.WithRecorder(printer{}))
	defer m.Close()

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "registry.example.com/team/web:1.0", ImagePullPolicy: corev1.PullIfNotPresent,
		}}},
	}
	secret := corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "regcred"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(
			`{"auths":{"registry.example.com":{"username":"ci","password":"s3cret"}}}`)},
	}
	ref, _, err := m.EnsureImageExists(context.Background(), pod, &pod.Spec.Containers[0], []corev1.Secret{secret}, nil)
	fmt.Println(ref != "", err)
	_, msg, _ := m.EnsureImageExists(context.Background(), pod, &pod.Spec.Containers[0], nil, nil)
	fmt.Println(msg)
	// Output:
	// event Normal Pulling
	// event Normal Pulled
	// true <nil>
	// event Normal Pulled
	// Container image "registry.example.com/team/web:1.0" already present on machine
}
