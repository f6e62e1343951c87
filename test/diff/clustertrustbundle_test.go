package diff

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/clustertrustbundle"

	"github.com/podstart/podstart/apiobjects"
)

var (
	ctbSigners    = []string{"", "foo.bar/a", "foo.bar/b", "example.com/x"}
	ctbLabelKeys  = []string{"label", "tier", "trust"}
	ctbLabelVals  = []string{"a", "b", "c"}
	ctbBlockTypes = []string{"CERTIFICATE", "CERTIFICATE", "CERTIFICATE", "X509 CERTIFICATE", "PRIVATE KEY", "TRUSTED CERTIFICATE"}
	ctbOperators  = []metav1.LabelSelectorOperator{metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist, "Near"}
)

// randomTrustBundle is a spec.trustBundle: PEM blocks drawn from a small
// pool of DER blobs (so bundles share and repeat them), of varied types,
// sometimes with headers, text between them, or a broken last block.
func randomTrustBundle(r *rand.Rand, pool [][]byte) string {
	var b strings.Builder
	for range r.IntN(5) {
		if r.IntN(4) == 0 {
			b.WriteString(pick(r, []string{"# comment\n", "junk", "\n\n", "-----BEGIN nothing"}))
		}
		block := &pem.Block{Type: pick(r, ctbBlockTypes), Bytes: pick(r, pool)}
		if r.IntN(8) == 0 {
			block.Headers = map[string]string{"Proc-Type": "4,ENCRYPTED"}
		}
		b.Write(pem.EncodeToMemory(block))
	}
	if r.IntN(10) == 0 {
		b.WriteString("-----BEGIN CERTIFICATE-----\nAAAA\n") // never ended
	}
	return b.String()
}

func randomCTBLabels(r *rand.Rand) map[string]string {
	if r.IntN(4) == 0 {
		return nil
	}
	l := map[string]string{}
	for range 1 + r.IntN(2) {
		l[pick(r, ctbLabelKeys)] = pick(r, ctbLabelVals)
	}
	return l
}

func randomCTBSelector(r *rand.Rand) *metav1.LabelSelector {
	switch r.IntN(5) {
	case 0:
		return nil
	case 1:
		return &metav1.LabelSelector{}
	}
	s := &metav1.LabelSelector{MatchLabels: randomCTBLabels(r)}
	for range r.IntN(3) {
		req := metav1.LabelSelectorRequirement{Key: pick(r, ctbLabelKeys), Operator: pick(r, ctbOperators)}
		if req.Operator == metav1.LabelSelectorOpIn || req.Operator == metav1.LabelSelectorOpNotIn || r.IntN(8) == 0 {
			for range r.IntN(3) {
				req.Values = append(req.Values, pick(r, ctbLabelVals))
			}
		}
		s.MatchExpressions = append(s.MatchExpressions, req)
	}
	return s
}

// pemBlocks is the blocks of a PEM text in order.
func pemBlocks(data []byte) []*pem.Block {
	var out []*pem.Block
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out
		}
		out = append(out, b)
	}
}

// sortedPEM re-encodes kubelet's answer, whose certificates kubelet
// shuffles, in podstart's order (by DER bytes); with what remains
// after the last block, so that a stray byte is seen.
func sortedPEM(data []byte) []byte {
	blocks := pemBlocks(data)
	slices.SortFunc(blocks, func(a, b *pem.Block) int { return bytes.Compare(a.Bytes, b.Bytes) })
	out := []byte{}
	for _, b := range blocks {
		out = append(out, pem.EncodeToMemory(b)...)
	}
	var rest []byte
	for rest = data; ; {
		b, r := pem.Decode(rest)
		if b == nil {
			break
		}
		rest = r
	}
	return append(out, rest...)
}

// kubeletTrustBundles is kubelet's GA informer manager over a fake
// clientset holding bundles, its informer synced.
func kubeletTrustBundles(t *testing.T, bundles []*certificatesv1.ClusterTrustBundle) clustertrustbundle.Manager {
	t.Helper()
	objs := make([]runtime.Object, len(bundles))
	for i, b := range bundles {
		objs[i] = b
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	factory := informers.NewSharedInformerFactoryWithOptions(fake.NewClientset(objs...), 0)
	t.Cleanup(func() {
		cancel() // the informers stop, then Shutdown waits for them
		factory.Shutdown()
	})
	m, err := clustertrustbundle.NewGAInformerManager(ctx, factory, 256, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer %v did not sync", typ)
		}
	}
	return m
}

// TestClusterTrustBundlePayload compares apiobjects.ClusterTrustBundlePayload
// (over apiobjects.Objects) with kubelet's ClusterTrustBundle manager
// (NewGAInformerManager over client-go's fake clientset and informers) on
// random sets of bundles and random projections by name and by signer
// name and label selector, optional or not: the same error messages, and
// the same certificates, each once. Kubelet shuffles them; podstart's
// order is kubelet's before the shuffle (by DER bytes), so kubelet's
// answer, sorted, must be podstart's byte for byte.
func TestClusterTrustBundlePayload(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	sets, perSet := cases(40), 25
	var total, failed, empty, certs int
	for range sets {
		var pool [][]byte
		for range 1 + r.IntN(5) {
			der := make([]byte, 1+r.IntN(40))
			for i := range der {
				der[i] = byte(r.IntN(256))
			}
			pool = append(pool, der)
		}
		var bundles []*certificatesv1.ClusterTrustBundle
		objs := &apiobjects.Objects{}
		var names []string
		for i := range r.IntN(7) {
			signer := pick(r, ctbSigners)
			name := fmt.Sprintf("b%d", i)
			if signer != "" {
				name = strings.ReplaceAll(signer, "/", ":") + ":" + name
			}
			b := &certificatesv1.ClusterTrustBundle{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: randomCTBLabels(r)},
				Spec:       certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: randomTrustBundle(r, pool)},
			}
			bundles = append(bundles, b)
			objs.SetClusterTrustBundle(b)
			names = append(names, name)
		}
		names = append(names, "missing")
		// Kubelet caches answers by the selector's string, which is ""
		// for a nil selector (matches nothing) and for an empty one
		// (matches all): after a projection with an empty selector, one
		// without a selector gets its bundles for up to 5 minutes.
		// Podstart, which does not cache, always matches nothing; a
		// second manager serves the projections without a selector, so
		// that kubelet's answer is that of a cold cache.
		m, noSelector := kubeletTrustBundles(t, bundles), kubeletTrustBundles(t, bundles)
		for range perSet {
			total++
			proj := corev1.ClusterTrustBundleProjection{Path: "ca.pem", Optional: pick(r, []*bool{nil, new(true), new(false)})}
			if r.IntN(2) == 0 {
				proj.Name = new(pick(r, names))
			} else {
				proj.SignerName = new(pick(r, append(ctbSigners, "other.io/none")))
				proj.LabelSelector = randomCTBSelector(r)
			}
			optional := proj.Optional != nil && *proj.Optional
			var want []byte
			var wantErr error
			if proj.Name != nil {
				want, wantErr = m.GetTrustAnchorsByName(t.Context(), *proj.Name, optional)
			} else {
				mgr := m
				if proj.LabelSelector == nil {
					mgr = noSelector
				}
				want, wantErr = mgr.GetTrustAnchorsBySigner(t.Context(), *proj.SignerName, proj.LabelSelector, optional)
			}
			got, err := apiobjects.ClusterTrustBundlePayload(t.Context(), objs, &proj)
			switch {
			case wantErr != nil || err != nil:
				failed++
				if fmt.Sprint(wantErr) != fmt.Sprint(err) {
					d.add("%s: error\n got %v\nwant %v", describeProjection(&proj), err, wantErr)
				}
				continue
			case len(want) == 0:
				empty++
			}
			certs += len(pemBlocks(want))
			if want := sortedPEM(want); !bytes.Equal(got, want) || got == nil {
				d.add("%s: payload\n got %q\nwant %q (kubelet's, sorted)", describeProjection(&proj), got, want)
			}
		}
	}
	d.report(total, "clusterTrustBundle projections")
	t.Logf("%d projections over %d random bundle sets: %d failed alike, %d empty, %d certificates written", total, sets, failed, empty, certs)
}

func describeProjection(p *corev1.ClusterTrustBundleProjection) string {
	opt := "unset"
	if p.Optional != nil {
		opt = fmt.Sprint(*p.Optional)
	}
	if p.Name != nil {
		return fmt.Sprintf("name %q optional %s", *p.Name, opt)
	}
	return fmt.Sprintf("signer %q selector %v optional %s", *p.SignerName, p.LabelSelector, opt)
}

// TestClusterTrustBundleNilSelectorCache pins the difference the
// comparison above steps around: kubelet's manager answers a projection
// without labelSelector from the cache entry of one with an empty
// selector (both are "" as strings), so it projects the signer's bundles;
// podstart matches no bundle, as kubelet does with a cold cache.
func TestClusterTrustBundleNilSelectorCache(t *testing.T) {
	b := &certificatesv1.ClusterTrustBundle{
		ObjectMeta: metav1.ObjectMeta{Name: "foo.bar:a:one"},
		Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "foo.bar/a",
			TrustBundle: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("der")}))},
	}
	m := kubeletTrustBundles(t, []*certificatesv1.ClusterTrustBundle{b})
	if _, err := m.GetTrustAnchorsBySigner(t.Context(), "foo.bar/a", nil, false); err == nil {
		t.Fatal("kubelet, cold cache: a nil selector matched a bundle")
	}
	if _, err := m.GetTrustAnchorsBySigner(t.Context(), "foo.bar/a", &metav1.LabelSelector{}, false); err != nil {
		t.Fatal(err)
	}
	warm, err := m.GetTrustAnchorsBySigner(t.Context(), "foo.bar/a", nil, false)
	if err != nil || len(pemBlocks(warm)) != 1 {
		t.Fatalf("kubelet, warm cache: %q, %v; want the bundle's certificate (if this changed, kubelet fixed its cache key)", warm, err)
	}
	objs := &apiobjects.Objects{}
	objs.SetClusterTrustBundle(b)
	_, err = apiobjects.ClusterTrustBundlePayload(t.Context(), objs, &corev1.ClusterTrustBundleProjection{SignerName: new("foo.bar/a"), Path: "ca.pem"})
	if err == nil || err.Error() != "combination of signerName and labelSelector matched zero ClusterTrustBundles" {
		t.Errorf("podstart: %v", err)
	}
}
