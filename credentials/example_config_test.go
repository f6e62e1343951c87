package credentials_test

import (
	"errors"
	"fmt"

	"github.com/podstart/podstart/credentials"
)

// The repository a keyring is looked up with, from an image as a pod
// writes it.
func ExampleRepository() {
	for _, image := range []string{
		"nginx",
		"team/app:v2",
		"registry:5000/a/b:tag@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"Not/Valid",
	} {
		repo, err := credentials.Repository(image)
		if errors.Is(err, credentials.ErrInvalidImageName) {
			fmt.Println("invalid:", err)
			continue
		}
		fmt.Println(repo)
	}
	// Output:
	// docker.io/library/nginx
	// docker.io/team/app
	// registry:5000/a/b
	// invalid: couldn't parse image name "Not/Valid": invalid reference format: repository name (Valid) must be lowercase
}

// An image reference split as kubelet splits it: no tag and no digest
// means "latest".
func ExampleParseImageName() {
	n, err := credentials.ParseImageName("busybox")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s %s %q\n", n.Repository, n.Tag, n.Digest)
	// Output:
	// docker.io/library/busybox latest ""
}

// An operator holding a pull secret's bytes asks which credentials kubelet
// would try for an image.
func ExampleKeyringFromConfigJSON() {
	data := []byte(`{"auths":{
		"registry.example.com":      {"username":"everyone","password":"p1"},
		"registry.example.com/team": {"username":"team-ci","password":"p2"},
		"https://index.docker.io/v1/": {"auth":"aHViLXVzZXI6cDM="}}}`)
	keyring, err := credentials.KeyringFromConfigJSON(data, credentials.Source{Kind: credentials.SourceSecret, Namespace: "shop", Name: "regcred"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, image := range []string{"registry.example.com/team/web:1.0", "nginx"} {
		repo, err := credentials.Repository(image)
		if err != nil {
			fmt.Println(err)
			return
		}
		creds, _ := keyring.Lookup(repo)
		for _, c := range creds {
			fmt.Println(image, "->", c.Username, "from", c.Source) // never print the secret
		}
	}

	// Errors name the source, never the content.
	_, err = credentials.KeyringFromConfigJSON([]byte(`{"auths":{"r.io":{"password":s3cret}}}`), credentials.Source{Kind: credentials.SourceSecret, Namespace: "shop", Name: "broken"})
	fmt.Println(errors.Is(err, credentials.ErrMalformedConfig), err)
	// Output:
	// registry.example.com/team/web:1.0 -> team-ci from secret shop/regcred
	// registry.example.com/team/web:1.0 -> everyone from secret shop/regcred
	// nginx -> hub-user from secret shop/regcred
	// true secret shop/broken: malformed docker config: error occurred while trying to unmarshal json (invalid JSON at byte 30)
}

// The legacy .dockercfg form: registry keys at the top level.
func ExampleKeyringFromDockercfg() {
	keyring, err := credentials.KeyringFromDockercfg([]byte(`{"quay.io":{"auth":"cm9ib3Q6dG9rZW4="}}`),
		credentials.Source{Kind: credentials.SourceNodeFile, Path: "/root/.dockercfg"})
	if err != nil {
		fmt.Println(err)
		return
	}
	creds, found := keyring.Lookup("quay.io/org/app")
	fmt.Println(found, creds[0].Username, "from", creds[0].Source)
	// Output:
	// true robot from node file /root/.dockercfg
}

// The zero BasicKeyring is ready to use: empty until Add.
func ExampleBasicKeyring() {
	var keyring credentials.BasicKeyring
	_, found := keyring.Lookup("registry.example.com/app")
	fmt.Println(found)
	keyring.Add(credentials.DockerConfig{"registry.example.com": {Username: "u", Password: "p"}})
	creds, found := keyring.Lookup("registry.example.com/app")
	fmt.Println(found, creds[0].Username)
	// Output:
	// false
	// true u
}
