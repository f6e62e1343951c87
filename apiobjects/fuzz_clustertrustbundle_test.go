package apiobjects

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The trust bundle parser: whatever two bundles hold, the file is
// CERTIFICATE blocks only, without headers, strictly ordered by DER bytes
// (so each once), and the DER of each is that of a block of the bundles;
// every block of the bundles is in it.
func FuzzClusterTrustBundlePayload(f *testing.F) {
	cert := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("der-1")}))
	f.Add(cert, cert)
	f.Add(cert+"junk"+string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Headers: map[string]string{"a": "b"}, Bytes: []byte("k")})), "")
	f.Add("-----BEGIN CERTIFICATE-----\nAAAA\n", "-----BEGIN X-----\n-----END X-----\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		objs := &Objects{}
		for i, tb := range []string{a, b} {
			objs.SetClusterTrustBundle(&certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("s:x:", i)},
				Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "s/x", TrustBundle: tb}})
		}
		out, err := ClusterTrustBundlePayload(context.Background(), objs, &corev1.ClusterTrustBundleProjection{
			SignerName: ptr.To("s/x"), LabelSelector: &metav1.LabelSelector{}, Path: "ca.pem"})
		if err != nil {
			t.Fatal(err)
		}
		in := map[string]bool{}
		for _, tb := range []string{a, b} {
			for _, blk := range pemBlocksOf([]byte(tb)) {
				in[string(blk.Bytes)] = true
			}
		}
		var prev []byte
		rest := out
		n := 0
		for {
			var blk *pem.Block
			blk, rest = pem.Decode(rest)
			if blk == nil {
				break
			}
			n++
			if blk.Type != "CERTIFICATE" || len(blk.Headers) != 0 || !in[string(blk.Bytes)] || n > 1 && bytes.Compare(prev, blk.Bytes) >= 0 {
				t.Fatalf("block %d %q %v %q after %q", n, blk.Type, blk.Headers, blk.Bytes, prev)
			}
			prev = blk.Bytes
		}
		if len(rest) != 0 || n != len(in) {
			t.Fatalf("%d blocks and %q left; want %d blocks", n, rest, len(in))
		}
	})
}

func pemBlocksOf(data []byte) []*pem.Block {
	var out []*pem.Block
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			return out
		}
		out = append(out, b)
	}
}

// A projection of a signer's three bundles of 8 certificates (1 KiB each)
// with overlaps: what each setup of such a volume costs.
func BenchmarkClusterTrustBundlePayload(b *testing.B) {
	objs := &Objects{}
	for i := range 3 {
		var tb []byte
		for j := range 8 {
			der := bytes.Repeat([]byte{byte(i*4 + j)}, 1024)
			tb = append(tb, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
		}
		objs.SetClusterTrustBundle(&certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("s:x:", i), Labels: map[string]string{"live": "yes"}},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "s/x", TrustBundle: string(tb)}})
	}
	proj := &corev1.ClusterTrustBundleProjection{SignerName: ptr.To("s/x"),
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"live": "yes"}}, Path: "ca.pem"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ClusterTrustBundlePayload(ctx, objs, proj); err != nil {
			b.Fatal(err)
		}
	}
}
