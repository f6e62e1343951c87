package apiobjects_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/apiobjects"
	fakemount "github.com/podstart/podstart/mounts/fake"
)

// secretsOnly is a Source serving a few Secrets, as an informer's lister
// would; its missing objects are NotFound.
type secretsOnly map[string]*corev1.Secret

func (s secretsOnly) GetSecret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	if o, ok := s[ns+"/"+name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secret"), name)
}

func (s secretsOnly) GetConfigMap(_ context.Context, _, name string) (*corev1.ConfigMap, error) {
	return nil, apierrors.NewNotFound(corev1.Resource("configmap"), name)
}

// A pod's Secret volume, written as kubelet writes it, on a tmpfs; podsync
// takes the provider with podsync.WithVolumes. The example mounts through
// mounts/fake, so that it runs without the privilege to mount; a node
// agent leaves the default, the host's mounter.
func ExampleVolumes() {
	root, _ := os.MkdirTemp("", "podstart-example")
	defer os.RemoveAll(root)
	src := secretsOnly{"shop/db": {Data: map[string][]byte{"password": []byte("hunter2")}}}
	mode := int32(0o400)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "web-1"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}},
			Volumes: []corev1.Volume{
				{Name: "db", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db", DefaultMode: &mode}}},
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls", DefaultMode: &mode}}},
			},
		},
	}
	mounter := fakemount.New()
	v := apiobjects.NewVolumes(src, root, apiobjects.WithMounter(mounter))
	if _, err := v.Volumes(context.Background(), pod); err != nil {
		fmt.Println(err)
	}
	pod.Spec.Volumes = pod.Spec.Volumes[:1]
	vols, _ := v.Volumes(context.Background(), pod)
	rel, _ := filepath.Rel(root, vols["db"].HostPath)
	b, _ := os.ReadFile(filepath.Join(vols["db"].HostPath, "password"))
	fmt.Println(rel, vols["db"].ReadOnly)
	fmt.Printf("password: %s\n", b)
	for _, m := range mounter.Tmpfs() {
		rel, _ := filepath.Rel(root, m.Path)
		fmt.Println("tmpfs at", rel)
	}
	// Output:
	// MountVolume.SetUp failed for volume "tls" : secret "tls" not found
	// pods/web-1/volumes/kubernetes.io~secret/db true
	// password: hunter2
	// tmpfs at pods/web-1/volumes/kubernetes.io~secret/db
}
