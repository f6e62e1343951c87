package staticpods

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// golden is one entry of testdata/uid/uids.json: a manifest, its origin,
// and the UID kubelet v1.37.2 gives it (test/diff's
// TestStaticPodsHashGolden checks these values with kubelet's own code).
type golden struct {
	Manifest string    `json:"manifest"`
	Source   string    `json:"source"`
	Location string    `json:"location"`
	Node     string    `json:"node"`
	UID      types.UID `json:"uid"`
}

func TestHashIsKubelets(t *testing.T) {
	data, err := os.ReadFile("testdata/uid/uids.json")
	if err != nil {
		t.Fatal(err)
	}
	var table []golden
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatal(err)
	}
	for _, g := range table {
		manifest, err := os.ReadFile(filepath.Join("testdata/uid", g.Manifest))
		if err != nil {
			t.Fatal(err)
		}
		pod, _, err := DecodePod(manifest, Origin{Source: g.Source, Location: g.Location, NodeName: g.Node})
		if err != nil {
			t.Errorf("%s (%s): %v", g.Manifest, g.Source, err)
			continue
		}
		if pod.UID != g.UID || pod.Annotations[ConfigHashAnnotation] != string(g.UID) {
			t.Errorf("%s (%s): UID %s, config.hash %s; kubelet's %s", g.Manifest, g.Source, pod.UID, pod.Annotations[ConfigHashAnnotation], g.UID)
		}
	}
	if len(table) < 5 {
		t.Errorf("%d cases", len(table))
	}
}

// preHash is a control plane pod (kube-apiserver's as kubeadm writes it)
// as DecodePod returns it, UID cleared.
func preHash(b testing.TB) *corev1.Pod {
	b.Helper()
	data, err := os.ReadFile("testdata/uid/control-plane.json")
	if err != nil {
		b.Fatal(err)
	}
	pod, _, err := DecodePod(data, fileOrigin("node-1"))
	if err != nil {
		b.Fatal(err)
	}
	pod.UID = ""
	return pod
}

// Hash ignores TypeMeta (kubelet's internal pod has none) and depends on
// the origin.
func TestHashInputs(t *testing.T) {
	pod := preHash(t)
	a, err := Hash(pod, fileOrigin("node-1"))
	if err != nil {
		t.Fatal(err)
	}
	pod.Kind, pod.APIVersion = "Pod", "v1"
	if b, _ := Hash(pod, fileOrigin("node-1")); b != a {
		t.Errorf("TypeMeta changed the hash: %s, %s", a, b)
	}
	if b, _ := Hash(pod, fileOrigin("node-2")); b == a {
		t.Error("the node name did not change the hash")
	}
	if b, _ := Hash(pod, Origin{Source: SourceHTTP, Location: "/etc/kubernetes/manifests/web.yaml", NodeName: "node-1"}); b == a {
		t.Error("the source did not change the hash")
	}
}

func BenchmarkHash(b *testing.B) {
	pod := preHash(b)
	o := fileOrigin("node-1")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Hash(pod, o); err != nil {
			b.Fatal(err)
		}
	}
}
