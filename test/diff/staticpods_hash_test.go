package diff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/capabilities"
	kubeconfig "k8s.io/kubernetes/pkg/kubelet/config"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
	"k8s.io/kubernetes/pkg/util/hash"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/podstart/podstart/defaults"
	"github.com/podstart/podstart/staticpods"
)

// kubeletUID is kubelet's applyDefaults UID for a manifest, from its own
// pieces: tryDecodeSinglePod's decode (legacyscheme's universal decoder:
// JSON, v1 defaults, conversion to the internal core.Pod), then
// hash.DeepHashObject into FNV-128a and the source suffix. ok is false
// when kubelet's decoder refuses the manifest or it has no name.
func kubeletUID(data []byte, o staticpods.Origin) (types.UID, bool) {
	js, err := utilyaml.ToJSON(data)
	if err != nil {
		return "", false
	}
	obj, err := runtime.Decode(legacyscheme.Codecs.UniversalDecoder(), js)
	if err != nil {
		return "", false
	}
	pod, ok := obj.(*api.Pod)
	if !ok || pod.Name == "" {
		return "", false
	}
	h := fnv.New128a()
	hash.DeepHashObject(h, pod)
	if o.Source == staticpods.SourceFile {
		fmt.Fprintf(h, "host:%s", o.NodeName)
		fmt.Fprintf(h, "file:%s", o.Location)
	} else {
		fmt.Fprintf(h, "url:%s", o.Location)
	}
	return types.UID(fmt.Sprintf("%x", h.Sum(nil))), true
}

// podstartPreHash is the pod as staticpods.DecodePod holds it when it
// calls Hash (decoded, API defaults, serviceAccount kept in step), for
// manifests DecodePod refuses after hashing (validation, API references).
func podstartPreHash(data []byte) (*corev1.Pod, bool) {
	js, err := utilyaml.ToJSON(data)
	if err != nil {
		return nil, false
	}
	pod := &corev1.Pod{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, pod); err != nil || pod.Name == "" {
		return nil, false
	}
	pod.TypeMeta.Kind = "Pod" // ignored by Hash
	// The v1 defaults alone, as kubelet's decoder (see staticpods'
	// apiDefaults): no pod-level resources defaulting.
	podLevel := pod.Spec.Resources.DeepCopy()
	defaults.Pod(pod)
	pod.Spec.Resources = podLevel
	if podLevel != nil {
		for _, list := range []corev1.ResourceList{podLevel.Limits, podLevel.Requests} {
			for name, q := range list {
				q.RoundUp(resource.Milli)
				list[name] = q
			}
		}
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = pod.Spec.DeprecatedServiceAccount
	}
	pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	return pod, true
}

func encodeManifest(t *testing.T, m map[string]any, asJSON bool) []byte {
	t.Helper()
	var data []byte
	var err error
	if asJSON {
		data, err = json.Marshal(m)
	} else {
		data, err = yaml.Marshal(m)
	}
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestStaticPodsHashRandom compares staticpods' UID with kubelet's on rich
// random manifests (every volume kind, probes, hooks, resources with
// quantities spelled many ways, security contexts, affinity, tolerations,
// topology spread, resource claims, os, scheduling gates, status, as YAML
// or JSON), for file and HTTP origins and node names with capitals:
// staticpods.Hash on the pod DecodePod hashes against kubelet's decoder and
// DeepHashObject, and DecodePod's UID (for the manifests it accepts)
// against the same.
func TestStaticPodsHashRandom(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	n := cases(3000)
	compared, decoded := 0, 0
	for i := range n {
		m := richStaticPod(r, i, maybe(r, 2))
		data := encodeManifest(t, m, maybe(r, 2))
		o := staticpods.Origin{Source: staticpods.SourceFile, Location: fmt.Sprintf("/etc/kubernetes/manifests/m%d.yaml", i), NodeName: pick(r, []string{"node-a", "Node-B", "n"})}
		if maybe(r, 3) {
			o = staticpods.Origin{Source: staticpods.SourceHTTP, Location: fmt.Sprintf("http://10.0.0.1:8080/pods?i=%d", i), NodeName: o.NodeName}
		}
		want, kubeOK := kubeletUID(data, o)
		pod, ours := podstartPreHash(data)
		if kubeOK != ours {
			d.add("manifest %d: kubelet decoded it %v, podstart %v\n%s", i, kubeOK, ours, data)
			continue
		}
		if !kubeOK {
			continue
		}
		got, err := staticpods.Hash(pod, o)
		if err != nil {
			d.add("manifest %d: Hash: %v", i, err)
			continue
		}
		compared++
		if got != want {
			d.add("manifest %d: Hash %s, kubelet's %s\n%s", i, got, want, data)
		}
		p, _, err := staticpods.DecodePod(data, o)
		if err != nil {
			if !errors.Is(err, staticpods.ErrInvalidManifest) {
				d.add("manifest %d: DecodePod: %v", i, err)
			}
			continue
		}
		if m["metadata"].(map[string]any)["uid"] != nil {
			continue
		}
		decoded++
		if p.UID != want || p.Annotations[staticpods.ConfigHashAnnotation] != string(want) {
			d.add("manifest %d: DecodePod's UID %s, config.hash %s, kubelet's %s", i, p.UID, p.Annotations[staticpods.ConfigHashAnnotation], want)
		}
	}
	t.Logf("%d random manifests, %d hashes compared with kubelet's, %d of them through DecodePod", n, compared, decoded)
	if compared < n/2 || decoded < n/10 {
		t.Errorf("too few comparisons: the generator is too hostile")
	}
	d.report(compared, "UIDs")
}

// TestStaticPodsRichSources runs kubelet's file and HTTP sources and
// staticpods' on the same rich random manifests (those a static pod may
// hold) and compares every pod both keep in full, UID and config.hash
// included.
func TestStaticPodsRichSources(t *testing.T) {
	// kubelet's own setting at start (cmd/kubelet/app/server.go): without
	// it its validation refuses privileged containers.
	capabilities.Initialize(capabilities.Capabilities{AllowPrivileged: true})
	r := newRand(t)
	d := &differences{t: t}
	const node = "node-a"
	dir := filepath.Join(t.TempDir(), "manifests")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	n := cases(200)
	manifests := map[string]map[string]any{}
	for i := range n {
		m := richStaticPod(r, i, true)
		manifests[m["metadata"].(map[string]any)["name"].(string)] = m
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%03d.yaml", i)), encodeManifest(t, m, maybe(r, 2)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	byName := func(ps []*corev1.Pod) map[string]*corev1.Pod {
		out := map[string]*corev1.Pod{}
		for _, p := range ps {
			out[p.Namespace+"/"+p.Name] = p
		}
		return out
	}
	compared := 0
	compare := func(what string, kube, ours map[string]*corev1.Pod) {
		for k, kp := range kube {
			op, ok := ours[k]
			if !ok {
				d.add("%s pod %s: kubelet kept it, staticpods refused it", what, k)
				continue
			}
			compared++
			if diff := cmp.Diff(normalise(kp), normalise(op)); diff != "" {
				d.add("%s pod %s (-kubelet +staticpods):\n%s", what, k, diff)
			}
		}
		for k := range ours {
			if _, ok := kube[k]; !ok {
				d.add("%s pod %s: staticpods kept it, kubelet refused it", what, k)
			}
		}
	}

	kubeFile := byName(kubeletReadDir(t, dir, node))
	src, err := staticpods.NewFileSource(dir, node)
	if err != nil {
		t.Fatal(err)
	}
	pods, refused, ok := src.Read()
	if !ok {
		t.Fatal("staticpods read nothing")
	}
	for _, p := range pods {
		p.Annotations[staticpods.ConfigSourceAnnotation] = staticpods.SourceFile
	}
	t.Logf("file: kubelet kept %d of %d, staticpods %d (refused %d)", len(kubeFile), n, len(pods), len(refused))
	compare("file", kubeFile, byName(pods))
	if len(kubeFile) < n/4 {
		t.Errorf("only %d of %d manifests kept by kubelet: the generator is too hostile", len(kubeFile), n)
	}

	// The pods kubelet's file source kept, as one PodList over HTTP.
	var items []any
	for name, m := range manifests {
		for _, p := range kubeFile {
			if p.Name == name+"-"+node {
				item := map[string]any{"metadata": m["metadata"], "spec": m["spec"]}
				if st, ok := m["status"]; ok {
					item["status"] = st
				}
				items = append(items, item)
			}
		}
	}
	body, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "PodList", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(body) }))
	// Not closed: kubelet's source cannot be stopped and polls until the
	// test binary exits.
	url := srv.URL + "/pods"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := kubeconfig.NewPodConfig(record.NewFakeRecorder(1000), noSLI{})
	kubeconfig.NewSourceURL(klog.Background(), url, nil, types.NodeName(node), time.Hour, cfg.Channel(ctx, kubetypes.HTTPSource))
	var kubeHTTP []*corev1.Pod
	select {
	case u := <-cfg.Updates():
		kubeHTTP = u.Pods
	case <-time.After(time.Minute):
		t.Fatal("kubelet's HTTP source sent nothing")
	}
	usrc, err := staticpods.NewURLSource(url, nil, node, staticpods.WithOnRefused(func(rf staticpods.Refusal) { t.Errorf("staticpods refused the list: %v", rf.Err) }))
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan staticpods.Update, 1)
	go usrc.Run(ctx, out)
	var oursHTTP []*corev1.Pod
	select {
	case u := <-out:
		oursHTTP = u.Pods
	case <-time.After(time.Minute):
		t.Fatal("staticpods' HTTP source sent nothing")
	}
	t.Logf("http: %d pods in the list, kubelet kept %d, staticpods %d", len(items), len(kubeHTTP), len(oursHTTP))
	compare("http", byName(kubeHTTP), byName(oursHTTP))
	t.Logf("%d pods compared in full with kubelet's, UID included", compared)
	d.report(compared, "pods")
}

// TestStaticPodsHashGolden checks staticpods' table of kubelet UIDs
// (staticpods/testdata/uid/uids.json, used by its TestHashIsKubelets
// without kubelet) against kubelet's own code; a failure prints the value
// to write there.
func TestStaticPodsHashGolden(t *testing.T) {
	dir := filepath.Join("..", "..", "staticpods", "testdata", "uid")
	data, err := os.ReadFile(filepath.Join(dir, "uids.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table []struct {
		Manifest, Source, Location, Node string
		UID                              types.UID
	}
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatal(err)
	}
	for _, g := range table {
		manifest, err := os.ReadFile(filepath.Join(dir, g.Manifest))
		if err != nil {
			t.Fatal(err)
		}
		want, ok := kubeletUID(manifest, staticpods.Origin{Source: g.Source, Location: g.Location, NodeName: g.Node})
		if !ok {
			t.Errorf("%s: kubelet cannot decode it", g.Manifest)
			continue
		}
		if g.UID != want {
			t.Errorf("%s (%s): table says %s, kubelet's UID is %s", g.Manifest, g.Source, g.UID, want)
		}
	}
}
