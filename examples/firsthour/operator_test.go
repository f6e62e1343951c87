package firsthour

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/credentials"
	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/defaults"
	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/validation"
)

// Program 2, an operator: which of a pull secret's credentials a node
// would send for each image of a pod, and the CRI configs (mounts
// included, no disk touched) as the files crictl reads.
func TestOperatorCredentialsAndConfigs(t *testing.T) {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: "shop"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{
			"registry.example.com/team": {"username":"team-ci","password":"s3cret"}}}`)},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web"},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "html", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/team/web:1.0",
				VolumeMounts: []corev1.VolumeMount{{Name: "html", MountPath: "/srv", SubPath: "site"}}}},
		},
	}
	defaults.Pod(pod)
	if err := validation.Check(pod); err != nil {
		t.Fatal(err)
	}

	keyring, err := credentials.KeyringFromConfigJSON(secret.Data[corev1.DockerConfigJsonKey],
		credentials.Source{Kind: credentials.SourceSecret, Namespace: secret.Namespace, Name: secret.Name})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := credentials.Repository(pod.Spec.Containers[0].Image)
	if err != nil {
		t.Fatal(err)
	}
	creds, _ := keyring.Lookup(repo)
	if len(creds) != 1 || creds[0].Username != "team-ci" {
		t.Errorf("credentials for %s: %v, want team-ci's", repo, creds)
	}

	node := criconfig.Node{MemoryCapacity: 8 << 30}
	sandbox, err := criconfig.SandboxConfig(pod, 0, node)
	if err != nil {
		t.Fatal(err)
	}
	podDir := criconfig.PodDir(node, pod)
	volume := podDir + "/volumes/kubernetes.io~empty-dir/html"
	disk := &mounts.MemDisk{}
	if err := disk.MkdirAll(volume, 0o777); err != nil {
		t.Fatal(err)
	}
	ms, err := mounts.Make(context.Background(), mounts.Request{Pod: pod, Container: &pod.Spec.Containers[0],
		Volumes: mounts.VolumeMap{"html": {HostPath: volume}}, PodDir: podDir, PodIPs: []string{"10.1.2.3"}},
		mounts.WithDisk(disk))
	if err != nil {
		t.Fatal(err)
	}
	container, err := criconfig.ContainerConfig(criconfig.Container{Pod: pod, Container: &pod.Spec.Containers[0],
		ImageRef: pod.Spec.Containers[0].Image, Mounts: criconfig.CRIMounts(ms, false)}, node)
	if err != nil {
		t.Fatal(err)
	}
	podJSON, err := criconfig.SandboxJSON(sandbox)
	if err != nil {
		t.Fatal(err)
	}
	containerJSON, err := criconfig.ContainerJSON(container)
	if err != nil {
		t.Fatal(err)
	}

	var files struct {
		Mounts []struct {
			ContainerPath string `json:"container_path"`
		} `json:"mounts"`
	}
	if err := json.Unmarshal(containerJSON, &files); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, m := range files.Mounts {
		paths = append(paths, m.ContainerPath)
	}
	// The subPath, kubelet's /etc/hosts and the termination log.
	if len(paths) != 3 || paths[0] != "/srv" || paths[1] != "/etc/hosts" || paths[2] != "/dev/termination-log" {
		t.Errorf("container-config.json mounts %v", paths)
	}
	if len(podJSON) == 0 {
		t.Error("empty pod-config.json")
	}
}
