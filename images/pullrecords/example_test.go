package pullrecords_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/podstart/podstart/credentials"
	"github.com/podstart/podstart/images/pullrecords"
)

// A private image pulled for one pod with its pull secret, then asked for
// by other pods on the same node (KEP-2535). With the default policy,
// NeverVerifyPreloadedImages, an image the manager pulled is verified: a
// pod without a matching secret must pull it itself, with its own
// credentials (the registry then refuses it, as it should), while a pod
// holding the secret, or another secret with the same credential, uses the
// image on the node. An image the manager never pulled (preloaded) is not
// verified.
//
// The images package does this for every pull when given
// images.WithPullRecords; here the manager is called by hand.
func ExampleManager_MustAttemptImagePull() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "pullrecords-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	m, err := pullrecords.New(ctx, pullrecords.Config{Dir: dir}, nil)
	if err != nil {
		panic(err)
	}

	const (
		image    = "registry.example.com/team/app:v1"
		imageRef = "sha256:9b2a6cc94e6b3a3f0a6b5c8a2b0b11a5f6e8e6a4b1c9a1f0d3c6e7b8a9f0e1d2"
	)
	hash := credentials.AuthConfig{Username: "team", Password: "s3cret"}.Hash()
	regcred := pullrecords.Secret{UID: "uid-regcred", Namespace: "team", Name: "regcred", CredentialHash: hash}

	// A pod of namespace "team" pulls the image with its secret regcred.
	if err := m.RecordPullIntent(image); err != nil {
		panic(err)
	}
	if err := m.RecordImagePulled(ctx, image, imageRef, &pullrecords.Credentials{
		KubernetesSecrets: []pullrecords.Secret{regcred},
	}); err != nil {
		panic(err)
	}
	records, _ := os.ReadDir(filepath.Join(dir, "pulled"))
	fmt.Println("pulled records on disk:", len(records))

	// Other pods want the same image, now present on the node.
	pods := []struct {
		name    string
		secrets []pullrecords.Secret
	}{
		{"pod without a pull secret", nil},
		{"pod with regcred", []pullrecords.Secret{regcred}},
		{"pod with another secret, same credential", []pullrecords.Secret{
			{UID: "uid-copy", Namespace: "other", Name: "copy", CredentialHash: hash}}},
		{"pod with another credential", []pullrecords.Secret{
			{UID: "uid-mine", Namespace: "other", Name: "mine",
				CredentialHash: credentials.AuthConfig{Username: "me", Password: "guess"}.Hash()}}},
	}
	for _, pod := range pods {
		must, err := m.MustAttemptImagePull(ctx, image, imageRef, func() ([]pullrecords.Secret, *pullrecords.ServiceAccount, error) {
			return pod.secrets, nil, nil
		})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: must pull: %v\n", pod.name, must)
	}

	// The record now lists both secrets that hold the credential.
	rec, _, err := m.Record(imageRef)
	if err != nil {
		panic(err)
	}
	for _, s := range rec.CredentialMapping["registry.example.com/team/app"].KubernetesSecrets {
		fmt.Printf("recorded secret: %s/%s\n", s.Namespace, s.Name)
	}

	// An image on the node that the manager never pulled.
	must, _ := m.MustAttemptImagePull(ctx, "busybox:1.35", "sha256:7b3ccabffc97de872a30dfd234fd972a66d247c8cfc69b0550f276481852627c",
		func() ([]pullrecords.Secret, *pullrecords.ServiceAccount, error) { return nil, nil, nil })
	fmt.Println("preloaded busybox: must pull:", must)
	// Output:
	// pulled records on disk: 1
	// pod without a pull secret: must pull: true
	// pod with regcred: must pull: false
	// pod with another secret, same credential: must pull: false
	// pod with another credential: must pull: true
	// recorded secret: other/copy
	// recorded secret: team/regcred
	// preloaded busybox: must pull: false
}
