package apiobjects

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/mounts"
	fakemount "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podsync"
)

// testRoot is a self-signed CA certificate, PEM, as kubelet's tests make
// them.
func testRoot(t *testing.T, cn string) string {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(0), Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func testBundle(name, signer string, lbls map[string]string, pemData string) *certificatesv1.ClusterTrustBundle {
	return &certificatesv1.ClusterTrustBundle{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
		Spec:       certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: pemData},
	}
}

// sortedPEM is the given certificates (PEM) as podstart writes them: each
// once, by DER bytes.
func sortedPEM(t *testing.T, certs ...string) string {
	t.Helper()
	var ders [][]byte
	for _, c := range certs {
		b, _ := pem.Decode([]byte(c))
		if b == nil {
			t.Fatalf("not PEM: %q", c)
		}
		ders = append(ders, b.Bytes)
	}
	var out strings.Builder
	for len(ders) > 0 {
		min := 0
		for i := range ders {
			if bytes.Compare(ders[i], ders[min]) < 0 {
				min = i
			}
		}
		out.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ders[min]}))
		dup := ders[min]
		kept := ders[:0]
		for _, d := range ders {
			if !bytes.Equal(d, dup) {
				kept = append(kept, d)
			}
		}
		ders = kept
	}
	return out.String()
}

// listFailing is a ClusterTrustBundleSource whose List fails, and which
// otherwise gives every bundle it holds, whatever the signer or selector.
type listFailing struct {
	Objects
	err error
	all []*certificatesv1.ClusterTrustBundle
}

func (l *listFailing) ListClusterTrustBundles(ctx context.Context, signer string, sel labels.Selector) ([]*certificatesv1.ClusterTrustBundle, error) {
	return l.all, l.err
}

// The cases of kubelet's clustertrustbundle manager tests
// (TestGetTrustAnchorsByName, TestGetTrustAnchorsBySignerName), with
// kubelet's messages, and the projection rules around them.
func TestClusterTrustBundlePayload(t *testing.T) {
	t.Parallel()
	root1, root2 := testRoot(t, "root1"), testRoot(t, "root2")
	a0, a1, a2, b3 := testRoot(t, "0"), testRoot(t, "1"), testRoot(t, "2"), testRoot(t, "3")
	objs := &Objects{}
	for _, b := range []*certificatesv1.ClusterTrustBundle{
		testBundle("ctb1", "", nil, root1),
		testBundle("ctb2", "", nil, root2),
		testBundle("signer-a-label-a-1", "foo.bar/a", map[string]string{"label": "a"}, a0),
		testBundle("signer-a-label-a-2", "foo.bar/a", map[string]string{"label": "a"}, a1),
		testBundle("signer-a-label-2-dup", "foo.bar/a", map[string]string{"label": "a"}, a1),
		testBundle("signer-a-label-b-1", "foo.bar/a", map[string]string{"label": "b"}, a2),
		testBundle("signer-b-label-a-1", "foo.bar/b", map[string]string{"label": "a"}, b3),
		// Text around blocks, headers, another block type, a repeat
		// inside one bundle: every block's DER, once, as CERTIFICATE.
		testBundle("messy", "", nil, "# roots\n"+root2+"junk\n"+
			string(pem.EncodeToMemory(&pem.Block{Type: "X509 CERTIFICATE", Headers: map[string]string{"k": "v"}, Bytes: pemDER(t, root1)}))+root2),
		testBundle("empty", "", nil, ""),
	} {
		objs.SetClusterTrustBundle(b)
	}
	bigLabels := map[string]string{}
	for i := 0; i < 100*1024/63+1; i++ {
		bigLabels[fmt.Sprintf("key-%d", i)] = strings.Repeat("v", 63)
	}
	sel := func(l map[string]string) *metav1.LabelSelector { return &metav1.LabelSelector{MatchLabels: l} }
	otherSigners := &listFailing{all: []*certificatesv1.ClusterTrustBundle{
		testBundle("x", "foo.bar/b", nil, b3), testBundle("y", "foo.bar/a", map[string]string{"label": "b"}, a2), testBundle("z", "foo.bar/a", map[string]string{"label": "a"}, a0),
	}}

	for _, tc := range []struct {
		name     string
		src      ClusterTrustBundleSource
		noSource bool
		proj     corev1.ClusterTrustBundleProjection
		want     string
		wantErr  string
		is       []error
	}{
		{name: "by name", proj: corev1.ClusterTrustBundleProjection{Name: ptr.To("ctb1")}, want: sortedPEM(t, root1)},
		{name: "by name, another", proj: corev1.ClusterTrustBundleProjection{Name: ptr.To("ctb2")}, want: sortedPEM(t, root2)},
		{name: "by name, missing", proj: corev1.ClusterTrustBundleProjection{Name: ptr.To("not-found")},
			wantErr: `while getting ClusterTrustBundle: clustertrustbundle.certificates.k8s.io "not-found" not found`},
		{name: "by name, missing, optional", proj: corev1.ClusterTrustBundleProjection{Name: ptr.To("not-found"), Optional: ptr.To(true)}, want: ""},
		{name: "by name, optional false", proj: corev1.ClusterTrustBundleProjection{Name: ptr.To("not-found"), Optional: ptr.To(false)},
			wantErr: `while getting ClusterTrustBundle: clustertrustbundle.certificates.k8s.io "not-found" not found`},
		{name: "by name, blocks normalized and deduplicated", proj: corev1.ClusterTrustBundleProjection{Name: ptr.To("messy")}, want: sortedPEM(t, root1, root2)},
		{name: "by name, no blocks", proj: corev1.ClusterTrustBundleProjection{Name: ptr.To("empty")}, want: ""},
		{name: "signer a, label a: two certificates, the duplicate once", proj: corev1.ClusterTrustBundleProjection{SignerName: ptr.To("foo.bar/a"), LabelSelector: sel(map[string]string{"label": "a"})},
			want: sortedPEM(t, a0, a1)},
		{name: "signer a, nil selector, optional: nothing", proj: corev1.ClusterTrustBundleProjection{SignerName: ptr.To("foo.bar/a"), Optional: ptr.To(true)}, want: ""},
		{name: "signer a, nil selector", proj: corev1.ClusterTrustBundleProjection{SignerName: ptr.To("foo.bar/a")},
			wantErr: "combination of signerName and labelSelector matched zero ClusterTrustBundles"},
		{name: "signer b, empty selector: all of b", proj: corev1.ClusterTrustBundleProjection{SignerName: ptr.To("foo.bar/b"), LabelSelector: &metav1.LabelSelector{}}, want: sortedPEM(t, b3)},
		{name: "signer a, label b", proj: corev1.ClusterTrustBundleProjection{SignerName: ptr.To("foo.bar/a"), LabelSelector: sel(map[string]string{"label": "b"})}, want: sortedPEM(t, a2)},
		{name: "signer a, all", proj: corev1.ClusterTrustBundleProjection{SignerName: ptr.To("foo.bar/a"), LabelSelector: &metav1.LabelSelector{}}, want: sortedPEM(t, a0, a1, a2)},
		{name: "signer b, label a", proj: corev1.ClusterTrustBundleProjection{SignerName: ptr.To("foo.bar/b"), LabelSelector: sel(map[string]string{"label": "a"})}, want: sortedPEM(t, b3)},
		{name: "signer b, label b, optional", proj: corev1.ClusterTrustBundleProjection{SignerName: ptr.To("foo.bar/b"), LabelSelector: sel(map[string]string{"label": "b"}), Optional: ptr.To(true)}, want: ""},
		{name: "signer b, label b", proj: corev1.ClusterTrustBundleProjection{SignerName: ptr.To("foo.bar/b"), LabelSelector: sel(map[string]string{"label": "b"})},
			wantErr: "combination of signerName and labelSelector matched zero ClusterTrustBundles", is: []error{ErrNoClusterTrustBundleMatch}},
		{name: "the signer's name does not select a bundle by name", proj: corev1.ClusterTrustBundleProjection{SignerName: ptr.To("ctb1"), LabelSelector: &metav1.LabelSelector{}},
			wantErr: "combination of signerName and labelSelector matched zero ClusterTrustBundles"},
		{name: "a big label selector", proj: corev1.ClusterTrustBundleProjection{SignerName: ptr.To("foo.bar/a"), LabelSelector: sel(bigLabels), Optional: ptr.To(true)},
			wantErr: fmt.Sprintf("label selector length (%d) is larger than 102400", len(labels.SelectorFromSet(bigLabels).String())), is: []error{ErrInvalidClusterTrustBundleProjection}},
		{name: "a label selector that does not parse", proj: corev1.ClusterTrustBundleProjection{SignerName: ptr.To("foo.bar/a"),
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "label", Operator: "Near"}}}},
			wantErr: `while parsing label selector: "Near" is not a valid label selector operator`, is: []error{ErrInvalidClusterTrustBundleProjection}},
		{name: "neither name nor signer", proj: corev1.ClusterTrustBundleProjection{Optional: ptr.To(true)},
			wantErr: "ClusterTrustBundle projection requires either name or signerName to be set", is: []error{ErrInvalidClusterTrustBundleProjection}},
		{name: "no source", noSource: true, proj: corev1.ClusterTrustBundleProjection{Name: ptr.To("ctb1"), Optional: ptr.To(true)},
			wantErr: "ClusterTrustBundle projection is not supported in static kubelet mode", is: []error{ErrNoClusterTrustBundles}},
		{name: "a list that fails", src: &listFailing{err: apierrors.NewServiceUnavailable("etcd down")},
			proj:    corev1.ClusterTrustBundleProjection{SignerName: ptr.To("foo.bar/a"), LabelSelector: sel(map[string]string{"label": "a"}), Optional: ptr.To(true)},
			wantErr: `while listing ClusterTrustBundles matching label selector &LabelSelector{MatchLabels:map[string]string{label: a,},MatchExpressions:[]LabelSelectorRequirement{},}: etcd down`},
		{name: "a source that ignores signer and selector", src: otherSigners,
			proj: corev1.ClusterTrustBundleProjection{SignerName: ptr.To("foo.bar/a"), LabelSelector: sel(map[string]string{"label": "a"})}, want: sortedPEM(t, a0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.src
			if src == nil && !tc.noSource {
				src = objs
			}
			got, err := ClusterTrustBundlePayload(context.Background(), src, &tc.proj)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v\nwant %s", err, tc.wantErr)
				}
				for _, class := range tc.is {
					if !errors.Is(err, class) {
						t.Errorf("errors.Is(%v, %v) = false", err, class)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || string(got) != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}

	// A missing bundle stays a NotFound for callers that look.
	_, err := ClusterTrustBundlePayload(context.Background(), objs, &corev1.ClusterTrustBundleProjection{Name: ptr.To("gone")})
	if !apierrors.IsNotFound(err) {
		t.Errorf("IsNotFound(%v) = false", err)
	}
}

func pemDER(t *testing.T, s string) []byte {
	t.Helper()
	b, _ := pem.Decode([]byte(s))
	if b == nil {
		t.Fatalf("not PEM: %q", s)
	}
	return b.Bytes
}

// kubelet's TestCollectDataWithClusterTrustBundle: the file at the path,
// defaultMode, or 0600 owned by the fsUser when the pod has an fsUser or
// fsGroup; projection.user and defaultUser wait for
// AtomicWriteVolumeUserFields (alpha, off).
func TestProjectedClusterTrustBundleModes(t *testing.T) {
	t.Parallel()
	root := testRoot(t, "root1")
	objs := &Objects{}
	objs.SetClusterTrustBundle(testBundle("foo", "", nil, root))
	src := func(mode int32) *corev1.ProjectedVolumeSource {
		return &corev1.ProjectedVolumeSource{DefaultMode: ptr.To(mode), Sources: []corev1.VolumeProjection{
			{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: ptr.To("foo"), Path: "bundle.pem"}},
		}}
	}
	pod := volumePod()
	for _, tc := range []struct {
		name            string
		mode            int32
		fsUser, fsGroup *int64
		want            mounts.File
	}{
		{name: "default mode", mode: 0o644, want: mounts.File{Data: []byte(root), Mode: 0o644}},
		{name: "non-default mode", mode: 0o600, want: mounts.File{Data: []byte(root), Mode: 0o600}},
		{name: "fsUser", mode: 0o644, fsUser: ptr.To[int64](1000), want: mounts.File{Data: []byte(root), Mode: 0o600, FsUser: ptr.To[int64](1000)}},
		{name: "fsGroup", mode: 0o644, fsGroup: ptr.To[int64](1000), want: mounts.File{Data: []byte(root), Mode: 0o600}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ProjectedPayload(context.Background(), Projection{Pod: pod, VolumeName: "v", Source: src(tc.mode),
				Objects: objs, TrustBundles: objs, FsUser: tc.fsUser, FsGroup: tc.fsGroup})
			checkPayload(t, got, err, map[string]mounts.File{"bundle.pem": tc.want}, "")
		})
	}
}

func trustBundleVolume(name string, proj corev1.ClusterTrustBundleProjection) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644), Sources: []corev1.VolumeProjection{{ClusterTrustBundle: &proj}}}}}
}

// Each setup of the volume reads the bundles again: a new certificate, a
// removed bundle (optional: an empty file; not optional: a failed setup,
// the old file kept) reach the pod as kubelet's informer-fed manager
// gives them.
func TestVolumesClusterTrustBundleRefresh(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	r1, r2 := testRoot(t, "r1"), testRoot(t, "r2")
	objs := &Objects{}
	objs.SetClusterTrustBundle(testBundle("example.com:s:one", "example.com/s", map[string]string{"trust": "yes"}, r1))
	vol := trustBundleVolume("cas", corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/s"),
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"trust": "yes"}}, Path: "ca/bundle.pem", Optional: ptr.To(true)})
	strict := trustBundleVolume("strict", corev1.ClusterTrustBundleProjection{Name: ptr.To("example.com:s:one"), Path: "ca.pem"})
	pod := volumePod(vol, strict)
	rec := &testRecorder{}
	v := NewVolumes(objs, root, WithMounter(fakemount.New()), WithEventRecorder(rec))
	ctx := context.Background()

	setUp := func() error {
		_, err := v.Volumes(ctx, pod)
		return err
	}
	dir := filepath.Join(podsync.PodDir(root, pod), "volumes", projectedPluginDir)
	check := func(vol string, want map[string]string) {
		t.Helper()
		if got := readVolume(t, filepath.Join(dir, vol)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %q\nwant %q", vol, got, want)
		}
	}
	if err := setUp(); err != nil {
		t.Fatal(err)
	}
	check("cas", map[string]string{"ca/bundle.pem": sortedPEM(t, r1)})
	check("strict", map[string]string{"ca.pem": sortedPEM(t, r1)})
	if m := mode(t, filepath.Join(dir, "cas", "ca", "bundle.pem")); m != 0o644 {
		t.Errorf("mode %v", m)
	}

	objs.SetClusterTrustBundle(testBundle("example.com:s:two", "example.com/s", map[string]string{"trust": "yes"}, r2+r1))
	objs.SetClusterTrustBundle(testBundle("example.com:s:off", "example.com/s", map[string]string{"trust": "no"}, testRoot(t, "off")))
	if err := setUp(); err != nil {
		t.Fatal(err)
	}
	check("cas", map[string]string{"ca/bundle.pem": sortedPEM(t, r1, r2)})

	objs.DeleteClusterTrustBundle("example.com:s:one")
	objs.DeleteClusterTrustBundle("example.com:s:two")
	err := setUp()
	const want = `MountVolume.SetUp failed for volume "strict" : while getting ClusterTrustBundle: clustertrustbundle.certificates.k8s.io "example.com:s:one" not found`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	check("cas", map[string]string{"ca/bundle.pem": ""})
	check("strict", map[string]string{"ca.pem": sortedPEM(t, r1)})
	if len(rec.events) != 1 || rec.events[0].reason != "FailedMount" || rec.events[0].message != want {
		t.Errorf("events %+v", rec.events)
	}
}

// WithClusterTrustBundles takes precedence over a Source that is also a
// ClusterTrustBundleSource; a Source that is not one, without the option,
// fails the projection with ErrNoClusterTrustBundles.
func TestVolumesClusterTrustBundleSource(t *testing.T) {
	t.Parallel()
	r1, r2 := testRoot(t, "r1"), testRoot(t, "r2")
	inSource, inOption := &Objects{}, &Objects{}
	inSource.SetClusterTrustBundle(testBundle("b", "", nil, r1))
	inOption.SetClusterTrustBundle(testBundle("b", "", nil, r2))
	pod := volumePod(trustBundleVolume("cas", corev1.ClusterTrustBundleProjection{Name: ptr.To("b"), Path: "ca.pem"}))
	ctx := context.Background()

	root := t.TempDir()
	if _, err := NewVolumes(inSource, root, WithMounter(fakemount.New()), WithClusterTrustBundles(inOption)).Volumes(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if got := readVolume(t, filepath.Join(podsync.PodDir(root, pod), "volumes", projectedPluginDir, "cas")); got["ca.pem"] != r2 {
		t.Errorf("got %q, want the option's bundle", got)
	}

	_, err := NewVolumes(newTestSource(), t.TempDir(), WithMounter(fakemount.New())).Volumes(ctx, pod)
	if !errors.Is(err, ErrNoClusterTrustBundles) {
		t.Errorf("err = %v", err)
	}
}

// noAPI is a source that finds no ClusterTrustBundle API.
type noAPI struct{}

func (noAPI) GetClusterTrustBundle(context.Context, string) (*certificatesv1.ClusterTrustBundle, error) {
	return nil, fmt.Errorf("discovery: %w", ErrNoClusterTrustBundles)
}

func (noAPI) ListClusterTrustBundles(context.Context, string, labels.Selector) ([]*certificatesv1.ClusterTrustBundle, error) {
	return nil, ErrNoClusterTrustBundles
}

// A source without the API fails even optional projections, with
// kubelet's NoopManager message as the source gives it, unwrapped.
func TestClusterTrustBundleNoAPI(t *testing.T) {
	t.Parallel()
	for _, proj := range []corev1.ClusterTrustBundleProjection{
		{Name: ptr.To("b"), Optional: ptr.To(true)},
		{SignerName: ptr.To("example.com/s"), LabelSelector: &metav1.LabelSelector{}, Optional: ptr.To(true)},
	} {
		_, err := ClusterTrustBundlePayload(context.Background(), noAPI{}, &proj)
		if !errors.Is(err, ErrNoClusterTrustBundles) || strings.HasPrefix(err.Error(), "while") {
			t.Errorf("%+v: %v", proj, err)
		}
	}
}
