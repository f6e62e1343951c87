package apiobjects_test

import (
	"context"
	"encoding/pem"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/apiobjects"
)

// A clusterTrustBundle projection by signer and labels: the certificates
// of the selected bundles, each once, in one PEM file.
func ExampleClusterTrustBundlePayload() {
	cert := func(der string) string {
		return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte(der)}))
	}
	objs := &apiobjects.Objects{}
	objs.SetClusterTrustBundle(&certificatesv1.ClusterTrustBundle{
		ObjectMeta: metav1.ObjectMeta{Name: "example.com:ca:2026", Labels: map[string]string{"live": "true"}},
		Spec:       certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/ca", TrustBundle: cert("root-2026") + cert("root-2025")},
	})
	objs.SetClusterTrustBundle(&certificatesv1.ClusterTrustBundle{
		ObjectMeta: metav1.ObjectMeta{Name: "example.com:ca:2025", Labels: map[string]string{"live": "true"}},
		Spec:       certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/ca", TrustBundle: cert("root-2025")},
	})
	signer := "example.com/ca"
	data, err := apiobjects.ClusterTrustBundlePayload(context.Background(), objs, &corev1.ClusterTrustBundleProjection{
		SignerName:    &signer,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"live": "true"}},
		Path:          "ca.pem",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		fmt.Printf("%s %s\n", b.Type, b.Bytes)
	}

	signer = "example.com/other"
	_, err = apiobjects.ClusterTrustBundlePayload(context.Background(), objs, &corev1.ClusterTrustBundleProjection{
		SignerName: &signer, LabelSelector: &metav1.LabelSelector{}, Path: "ca.pem",
	})
	fmt.Println(err)
	// Output:
	// CERTIFICATE root-2025
	// CERTIFICATE root-2026
	// combination of signerName and labelSelector matched zero ClusterTrustBundles
}
