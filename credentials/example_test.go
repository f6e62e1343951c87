package credentials_test

import (
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/credentials"
)

// A keyring built as kubelet builds one for a pod: the pod's pull secret
// first, then the node's docker config. Lookup takes the normalised
// repository, as kubelet passes it.
func ExampleMakeKeyring() {
	root, _ := os.MkdirTemp("", "kubelet-root")
	defer os.RemoveAll(root)
	os.WriteFile(filepath.Join(root, "config.json"),
		[]byte(`{"auths":{"registry.example.com":{"auth":"bm9kZTpub2RlLXBhc3N3b3Jk"}}}`), 0o600)
	node := credentials.NewNodeKeyring(root)

	pullSecret := corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "regcred"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(
			`{"auths":{"registry.example.com/team":{"username":"ci","password":"s3cret"}}}`)},
	}
	keyring, err := credentials.MakeKeyring([]corev1.Secret{pullSecret}, node)
	if err != nil {
		fmt.Println(err)
		return
	}
	creds, _ := keyring.Lookup("registry.example.com/team/web")
	for _, c := range creds {
		fmt.Println(c.Username, "from", c.Source.Kind, c.Source.Name) // never print the secret
	}
	// Output:
	// ci from secret regcred
	// node from node-file
}
