package diff

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	kubeconfig "k8s.io/kubernetes/pkg/kubelet/config"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
	"sigs.k8s.io/yaml"

	"github.com/podstart/podstart/staticpods"
)

type noSLI struct{}

func (noSLI) ObservedPodOnWatch(klog.Logger, *corev1.Pod, time.Time) {}

// kubeletReadDir runs kubelet's own file source (config.NewSourceFile,
// through the exported PodConfig channel) over dir once and returns the
// pods of its first update by file name (through their generated names).
func kubeletReadDir(t *testing.T, dir, node string) []*corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg := kubeconfig.NewPodConfig(record.NewFakeRecorder(1000), noSLI{})
	ch := cfg.Channel(ctx, kubetypes.FileSource)
	// A period of an hour: only the immediate first read happens.
	kubeconfig.NewSourceFile(klog.Background(), dir, types.NodeName(node), time.Hour, ch)
	select {
	case u := <-cfg.Updates():
		return u.Pods
	case <-time.After(time.Minute):
		t.Fatal("kubelet's file source sent nothing")
		return nil
	}
}

// randomStaticPod is a pod manifest a static pod path might hold: mostly
// valid, sometimes refused (no image, an upper-case name, a secret).
func randomStaticPod(r *rand.Rand, i int) map[string]any {
	name := fmt.Sprintf("pod-%d", i)
	if r.IntN(20) == 0 {
		name = "Bad_Name"
	}
	meta := map[string]any{"name": name}
	if r.IntN(2) == 0 {
		meta["namespace"] = []string{"kube-system", "default", "other"}[r.IntN(3)]
	}
	if r.IntN(3) == 0 {
		meta["labels"] = map[string]any{"tier": "control-plane", "component": fmt.Sprintf("c%d", r.IntN(4))}
	}
	if r.IntN(3) == 0 {
		meta["annotations"] = map[string]any{"example.com/a": fmt.Sprint(r.IntN(9))}
	}
	if r.IntN(15) == 0 {
		meta["uid"] = fmt.Sprintf("fixed-uid-%d", i)
	}
	c := map[string]any{"name": "c", "image": []string{"nginx", "busybox:1.36", "registry.k8s.io/pause:3.10", "r.io/a@sha256:" + strings.Repeat("ab", 32)}[r.IntN(4)]}
	if r.IntN(25) == 0 {
		delete(c, "image")
	}
	if r.IntN(2) == 0 {
		c["command"] = []any{"sleep", "3600"}
	}
	if r.IntN(2) == 0 {
		c["resources"] = map[string]any{"requests": map[string]any{"cpu": []string{"100m", "0.25", "1"}[r.IntN(3)], "memory": "64Mi"}}
	}
	if r.IntN(3) == 0 {
		c["ports"] = []any{map[string]any{"containerPort": 8000 + r.IntN(100), "name": "http"}}
	}
	if r.IntN(3) == 0 {
		c["livenessProbe"] = map[string]any{"httpGet": map[string]any{"path": "/healthz", "port": 8080}}
	}
	if r.IntN(4) == 0 {
		c["env"] = []any{map[string]any{"name": "A", "value": "b"}}
	}
	if r.IntN(20) == 0 {
		c["env"] = []any{map[string]any{"name": "S", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k"}}}}
	}
	spec := map[string]any{"containers": []any{c}}
	if r.IntN(2) == 0 {
		spec["hostNetwork"] = true
	}
	if r.IntN(3) == 0 {
		spec["priorityClassName"] = "system-node-critical"
		spec["priority"] = 2000001000
	}
	if r.IntN(3) == 0 {
		spec["volumes"] = []any{map[string]any{"name": "v", "hostPath": map[string]any{"path": "/etc/kubernetes", "type": "DirectoryOrCreate"}}}
		c["volumeMounts"] = []any{map[string]any{"name": "v", "mountPath": "/etc/kubernetes"}}
	}
	if r.IntN(4) == 0 {
		tol := []any{map[string]any{"operator": "Exists", "effect": "NoExecute"}}
		if r.IntN(2) == 0 {
			tol = []any{map[string]any{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}, map[string]any{"key": "k", "operator": "Exists"}}
		}
		spec["tolerations"] = tol
	}
	if r.IntN(20) == 0 {
		spec["serviceAccountName"] = "sa"
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
}

// writeManifest writes m as YAML or as JSON (either is read the same).
func writeManifest(t *testing.T, path string, m map[string]any, asJSON bool) {
	t.Helper()
	var data []byte
	var err error
	if asJSON {
		data, err = json.MarshalIndent(m, "", "    ")
	} else {
		data, err = yaml.Marshal(m)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// normalise blanks what differs by time (config.seen). The UID and
// config.hash are compared: they are kubelet's.
func normalise(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	delete(p.Annotations, staticpods.ConfigSeenAnnotation)
	return p
}

// TestStaticPodsFileSource compares staticpods' file source with kubelet's
// (config.NewSourceFile) on random manifest directories: the same files
// refused and kept, and every kept pod equal in full (names, namespace,
// defaults, tolerations, node name, annotations, the UID and config.hash)
// but for the config.seen time. The directory is then written again at the
// same paths, with each manifest either re-encoded (JSON for YAML: the same
// pod) or changed, and compared again.
func TestStaticPodsFileSource(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	dir := filepath.Join(t.TempDir(), "manifests")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A node name kubelet accepts: with capitals (kubelet's pod names get
	// it lowercased, spec.nodeName does not) both refuse every pod.
	const node = "node-a"
	n := cases(60)
	manifests := make([]map[string]any, n)
	for i := range manifests {
		manifests[i] = randomStaticPod(r, i)
		writeManifest(t, filepath.Join(dir, fmt.Sprintf("m%03d.yaml", i)), manifests[i], false)
	}
	// A pod mounting the manifest directory itself: kubelet does not
	// check hostPaths against staticPodPath.
	self := randomStaticPod(r, n)
	self["spec"].(map[string]any)["volumes"] = []any{map[string]any{"name": "m", "hostPath": map[string]any{"path": dir}}}
	self["metadata"].(map[string]any)["name"] = "self-mount"
	self["spec"].(map[string]any)["containers"] = []any{map[string]any{"name": "c", "image": "nginx"}}
	delete(self["spec"].(map[string]any), "serviceAccountName")
	writeManifest(t, filepath.Join(dir, "self.yaml"), self, false)
	read := func() (kube, ours map[string]*corev1.Pod) {
		kube = map[string]*corev1.Pod{}
		for _, p := range kubeletReadDir(t, dir, node) {
			kube[p.Namespace+"/"+p.Name] = p
		}
		src, err := staticpods.NewFileSource(dir, node)
		if err != nil {
			t.Fatal(err)
		}
		pods, refused, ok := src.Read()
		t.Logf("staticpods refused %d manifests", len(refused))
		if !ok {
			t.Fatal("staticpods read nothing")
		}
		ours = map[string]*corev1.Pod{}
		for _, p := range pods {
			p.Annotations[staticpods.ConfigSourceAnnotation] = staticpods.SourceFile
			ours[p.Namespace+"/"+p.Name] = p
		}
		return kube, ours
	}
	uids := 0
	compare := func(kube, ours map[string]*corev1.Pod) {
		for k, kp := range kube {
			op, ok := ours[k]
			if !ok {
				d.add("pod %s: kubelet kept it, staticpods refused it", k)
				continue
			}
			if diff := cmp.Diff(normalise(kp), normalise(op)); diff != "" {
				d.add("pod %s (-kubelet +staticpods):\n%s", k, diff)
			}
			if op.UID != kp.UID {
				d.add("pod %s: UID %q, kubelet's %q", k, op.UID, kp.UID)
			}
			uids++
		}
		for k := range ours {
			if _, ok := kube[k]; !ok {
				d.add("pod %s: staticpods kept it, kubelet refused it", k)
			}
		}
	}
	kube1, ours1 := read()
	for _, m := range []map[string]*corev1.Pod{kube1, ours1} {
		found := false
		for k := range m {
			found = found || strings.HasPrefix(k, "default/self-mount-") || strings.Contains(k, "/self-mount-")
		}
		if !found {
			t.Error("the pod mounting the manifest directory was refused")
		}
	}
	t.Logf("kubelet kept %d, staticpods %d", len(kube1), len(ours1))
	compare(kube1, ours1)
	if len(kube1) < n/2 {
		t.Errorf("only %d of %d random manifests valid: the generator is too hostile", len(kube1), n)
	}

	// Second round at the same paths: re-encoded or changed.
	changed := map[int]bool{}
	for i, m := range manifests {
		if r.IntN(2) == 0 {
			changed[i] = true
			spec := m["spec"].(map[string]any)
			spec["terminationGracePeriodSeconds"] = 1 + r.IntN(100)
		}
		writeManifest(t, filepath.Join(dir, fmt.Sprintf("m%03d.yaml", i)), m, !changed[i])
	}
	kube2, ours2 := read()
	compare(kube2, ours2)
	for k, k1 := range kube1 {
		k2, ok := kube2[k]
		o1, o2 := ours1[k], ours2[k]
		if !ok || o1 == nil || o2 == nil {
			continue
		}
		if (k1.UID == k2.UID) != (o1.UID == o2.UID) {
			d.add("pod %s: kubelet's UID same=%v across rounds, staticpods' same=%v", k, k1.UID == k2.UID, o1.UID == o2.UID)
		}
	}
	t.Logf("%d UIDs compared with kubelet's", uids)
	if d.n > 0 {
		t.Errorf("%d differences", d.n)
	}
}

// TestStaticPodsURLSource compares staticpods' HTTP source with kubelet's
// (config.NewSourceURL) on random PodLists and single pods served over
// HTTP: the same bodies accepted or refused, the pods equal in full (the
// UID and config.hash included) but for config.seen.
func TestStaticPodsURLSource(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	const node = "node-a"
	refused := 0
	for i := range cases(20) {
		var body []byte
		var err error
		if r.IntN(3) == 0 {
			body, err = json.Marshal(randomStaticPod(r, i))
		} else {
			var items []any
			for j := range 1 + r.IntN(4) {
				m := randomStaticPod(r, 100*i+j)
				delete(m, "apiVersion")
				delete(m, "kind")
				items = append(items, m)
			}
			body, err = json.Marshal(map[string]any{"apiVersion": "v1", "kind": "PodList", "items": items})
		}
		if err != nil {
			t.Fatal(err)
		}
		// The first request gets the body; every later one a valid marker
		// pod. kubelet's source polls every 100 ms and sends nothing for a
		// body it refuses, so its first update is the body's pods when it
		// accepted them, the marker's otherwise.
		var requests atomic.Int64
		marker, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "marker"},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Who") != "podstart" && requests.Add(1) > 1 {
				w.Write(marker)
				return
			}
			w.Write(body)
		}))
		url := srv.URL + fmt.Sprintf("/pods/%d", i)

		ctx, cancel := context.WithCancel(context.Background())
		cfg := kubeconfig.NewPodConfig(record.NewFakeRecorder(1000), noSLI{})
		kubeconfig.NewSourceURL(klog.Background(), url, nil, types.NodeName(node), 100*time.Millisecond, cfg.Channel(ctx, kubetypes.HTTPSource))
		var kube []*corev1.Pod
		kubeOK := false
		select {
		case u := <-cfg.Updates():
			kube = u.Pods
			kubeOK = len(u.Pods) == 0 || u.Pods[0].Name != "marker-"+node
		case <-time.After(time.Minute):
			t.Fatal("kubelet's HTTP source sent nothing")
		}

		// staticpods': its first poll's update, or its refusal.
		src, err := staticpods.NewURLSource(url, http.Header{"X-Who": []string{"podstart"}}, node, staticpods.WithOnRefused(func(staticpods.Refusal) { cancel() }))
		if err != nil {
			t.Fatal(err)
		}
		out := make(chan staticpods.Update, 10)
		go src.Run(ctx, out)
		var ours []*corev1.Pod
		oursOK := false
		select {
		case u := <-out:
			ours, oursOK = u.Pods, true

		case <-ctx.Done():
		}
		cancel()
		// The server stays up: kubelet's source cannot be stopped and polls
		// it (the marker, unchanged: nothing more is decoded) until the
		// test binary exits.

		if kubeOK != oursOK {
			d.add("body %d: kubelet accepted %v, staticpods %v", i, kubeOK, oursOK)
			continue
		}
		if !kubeOK {
			refused++
			continue // both refused it
		}
		if len(kube) != len(ours) {
			d.add("body %d: kubelet %d pods, staticpods %d", i, len(kube), len(ours))
			continue
		}
		sortByName := func(ps []*corev1.Pod) {
			sort.Slice(ps, func(a, b int) bool { return ps[a].Name < ps[b].Name })
		}
		sortByName(kube)
		sortByName(ours)
		for j := range kube {
			if diff := cmp.Diff(normalise(kube[j]), normalise(ours[j])); diff != "" {
				d.add("body %d pod %s (-kubelet +staticpods):\n%s", i, kube[j].Name, diff)
			}
		}
	}
	t.Logf("%d of %d bodies refused by both", refused, cases(20))
	if d.n > 0 {
		t.Errorf("%d differences", d.n)
	}
}
