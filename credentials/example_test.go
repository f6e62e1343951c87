package credentials_test

import (
	"context"
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

// A plugin in service-account token mode (KEP-4412): the caller supplies
// the pod's service account and a token for it (kubelet asks the API
// server), and looks images up for a pod.
func ExamplePluginKeyring_ForPod() {
	dir, _ := os.MkdirTemp("", "plugins")
	defer os.RemoveAll(dir)
	// A plugin that answers with the identity annotation it was given.
	os.WriteFile(filepath.Join(dir, "ecr-token"), []byte(`#!/bin/sh
id=$(sed -n 's/.*"example.com\/role":"\([^"]*\)".*/\1/p')
echo '{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"Registry","auth":{"*.registry.example.com":{"username":"'"$id"'","password":"short-lived"}}}'
`), 0o755)
	cfg, err := credentials.ParsePluginConfig([]byte(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: ecr-token
    matchImages: ["*.registry.example.com"]
    defaultCacheDuration: 10m
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    tokenAttributes:
      serviceAccountTokenAudience: registry.example.com
      cacheType: ServiceAccount
      requireServiceAccount: true
      requiredServiceAccountAnnotationKeys: [example.com/role]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	getSA := func(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
		// e.g. a lister's ServiceAccounts(namespace).Get(name)
		return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: "7c9e6679-7425-40de-944b-e07fc1f90ae7",
			Annotations: map[string]string{"example.com/role": "puller-" + name}}}, nil
	}
	getToken := func(ctx context.Context, r credentials.ServiceAccountTokenRequest) (string, error) {
		// e.g. client.CoreV1().ServiceAccounts(r.Namespace).CreateToken(ctx,
		// r.ServiceAccountName, r.TokenRequest(), metav1.CreateOptions{}),
		// reused while fresh.
		return "a-bound-token", nil
	}
	plugins, err := credentials.NewPluginKeyring(cfg, dir, credentials.WithServiceAccounts(getSA, getToken))
	if err != nil {
		fmt.Println(err)
		return
	}
	pod := credentials.PodRef{Namespace: "shop", Name: "web-7d4f", UID: "b9f5c1e2-0d7a-4c3e-8f21-6a0e4d2c9b11", ServiceAccountName: "web"}
	keyring := plugins.ForPod(context.Background(), pod) // or Union{node, ...} as MakeKeyring's node keyring
	creds, _ := keyring.Lookup("eu.registry.example.com/shop/web")
	for _, c := range creds {
		fmt.Println(c.Username, "from", c.Source)
	}
	// Output:
	// puller-web from credential provider plugin ecr-token for service account shop/web
}
