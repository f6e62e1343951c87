package images_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/images/pullrecords"
	"github.com/podstart/podstart/runtime"
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

// Kubelet's "ensure secret-pulled images" (KEP-2535): a pod without the
// pull secret may not use the private image another pod pulled.
func ExampleWithPullRecords() {
	ctx := context.Background()
	rt := fake.New(fake.WithRegistryAuth("registry.example.com", "ci", "s3cret"))
	dir, err := os.MkdirTemp("", "image_manager")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	// Kubelet keeps these in <root-dir>/image_manager; the policy defaults
	// to NeverVerifyPreloadedImages.
	records, err := pullrecords.New(ctx, pullrecords.Config{Dir: dir}, rt)
	if err != nil {
		panic(err)
	}
	m := images.NewManager(rt, images.WithPullRecords(records))
	defer m.Close()

	newPod := func(name string) (*corev1.Pod, *corev1.Container) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID(name)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: "registry.example.com/team/web:1.0", ImagePullPolicy: corev1.PullIfNotPresent,
			}}},
		}
		return pod, &pod.Spec.Containers[0]
	}
	secret := corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "regcred", UID: "secret-uid"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(
			`{"auths":{"registry.example.com":{"username":"ci","password":"s3cret"}}}`)},
	}

	a, ca := newPod("a")
	_, _, err = m.EnsureImageExists(ctx, a, ca, []corev1.Secret{secret}, nil)
	fmt.Println("pod a, with the secret:", err)

	b, cb := newPod("b")
	_, _, err = m.EnsureImageExists(ctx, b, cb, nil, nil)
	fmt.Println("pod b, without:", err, errors.Is(err, runtime.ErrUnauthorized))

	c, cc := newPod("c")
	_, msg, _ := m.EnsureImageExists(ctx, c, cc, []corev1.Secret{secret}, nil)
	fmt.Println("pod c, with the secret:", msg)
	// Output:
	// pod a, with the secret: <nil>
	// pod b, without: ErrImagePull true
	// pod c, with the secret: Container image "registry.example.com/team/web:1.0" already present on machine and can be accessed by the pod
}
