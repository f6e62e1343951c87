package staticpods

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const webPod = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: c
    image: nginx
`

func fileOrigin(node string) Origin {
	return Origin{Source: SourceFile, Location: "/etc/kubernetes/manifests/web.yaml", NodeName: node}
}

func TestDecodePodDefaults(t *testing.T) {
	pod, parsed, err := DecodePod([]byte(webPod), fileOrigin("node-1"))
	if err != nil || !parsed {
		t.Fatalf("DecodePod: parsed %v, %v", parsed, err)
	}
	if pod.Name != "web-node-1" || pod.Namespace != "default" || pod.Spec.NodeName != "node-1" {
		t.Errorf("name %q namespace %q nodeName %q", pod.Name, pod.Namespace, pod.Spec.NodeName)
	}
	if len(pod.UID) != 32 || pod.Annotations[ConfigHashAnnotation] != string(pod.UID) {
		t.Errorf("UID %q, config.hash %q", pod.UID, pod.Annotations[ConfigHashAnnotation])
	}
	want := corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	if len(pod.Spec.Tolerations) != 1 || pod.Spec.Tolerations[0] != want {
		t.Errorf("tolerations %+v", pod.Spec.Tolerations)
	}
	if pod.Status.Phase != corev1.PodPending {
		t.Errorf("phase %q", pod.Status.Phase)
	}
	c := pod.Spec.Containers[0]
	if c.ImagePullPolicy != corev1.PullAlways || c.TerminationMessagePath == "" || pod.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("API defaults not applied: %+v", pod.Spec)
	}
	if got := PodName("web", "Node-1"); got != "web-node-1" {
		t.Errorf("PodName %q", got)
	}
	// A node name with capitals: spec.nodeName keeps them and fails
	// validation, as in kubelet (test/diff checks it too).
	if _, _, err := DecodePod([]byte(webPod), fileOrigin("Node-1")); !errors.Is(err, ErrInvalidManifest) {
		t.Errorf("node name with capitals: %v", err)
	}
	if _, ok := pod.Annotations[ConfigSourceAnnotation]; ok {
		t.Error("config.source set by DecodePod; the merge sets it")
	}

	// The HTTP source adds no toleration.
	hp, _, err := DecodePod([]byte(webPod), Origin{Source: SourceHTTP, Location: "http://x/pods", NodeName: "n"})
	if err != nil || len(hp.Spec.Tolerations) != 0 {
		t.Errorf("HTTP pod: %v, tolerations %+v", err, hp.Spec.Tolerations)
	}
}

func TestHashChangesWithContentNodeAndLocation(t *testing.T) {
	uid := func(data, node, loc string) string {
		t.Helper()
		p, _, err := DecodePod([]byte(data), Origin{Source: SourceFile, Location: loc, NodeName: node})
		if err != nil {
			t.Fatal(err)
		}
		return string(p.UID)
	}
	base := uid(webPod, "n", "/m/a")
	asJSON := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"image":"nginx","name":"c"}]}}`
	if got := uid(asJSON, "n", "/m/a"); got != base {
		t.Errorf("same pod as JSON: UID %s, YAML's %s", got, base)
	}
	for name, got := range map[string]string{
		"node":     uid(webPod, "m", "/m/a"),
		"location": uid(webPod, "n", "/m/b"),
		"content":  uid(strings.Replace(webPod, "nginx", "nginx:1", 1), "n", "/m/a"),
	} {
		if got == base {
			t.Errorf("another %s, same UID %s", name, got)
		}
	}
	fixed := strings.Replace(webPod, "name: web\n", "name: web\n  uid: my-uid\n", 1)
	p, _, err := DecodePod([]byte(fixed), fileOrigin("n"))
	if err != nil || p.UID != "my-uid" || p.Annotations[ConfigHashAnnotation] != "my-uid" {
		t.Errorf("manifest's UID: %v %q", err, p.UID)
	}
}

func TestDecodePodRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		parsed     bool
		is         error
		msg        string
	}{
		{"not yaml", "\t:::", false, ErrInvalidManifest, ""},
		{"no kind", "apiVersion: v1\nmetadata: {name: a}\n", false, ErrInvalidManifest, "Object 'Kind' is missing"},
		{"other kind", "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n", false, ErrInvalidManifest, ""},
		{"other version", "apiVersion: v2\nkind: Pod\nmetadata: {name: a}\n", false, ErrInvalidManifest, ""},
		{"no name", strings.Replace(webPod, "name: web", "labels: {a: b}", 1), true, ErrInvalidManifest, "invalid pod: name is needed for the pod"},
		{"no image", strings.Replace(webPod, "    image: nginx\n", "", 1), true, ErrInvalidManifest, "spec.containers[0].image: Required value"},
		{"secret env", webPod + "    env:\n    - name: A\n      valueFrom: {secretKeyRef: {name: s, key: k}}\n", true, ErrAPIReference, "static pods may not reference secrets"},
		{"configmap volume", webPod + "  volumes:\n  - name: v\n    configMap: {name: c}\n", true, ErrAPIReference, "static pods may not reference configmaps"},
		{"service account", webPod + "  serviceAccountName: sa\n", true, ErrAPIReference, "static pods may not reference serviceaccounts"},
		{"pull secret", webPod + "  imagePullSecrets: [{name: \"\"}]\n", true, ErrAPIReference, "static pods may not reference secrets"},
		{"projected secret", webPod + "  volumes:\n  - name: v\n    projected: {sources: [{secret: {name: s}}]}\n", true, ErrAPIReference, "static pods may not reference secrets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, parsed, err := DecodePod([]byte(tc.data), fileOrigin("n"))
			if !errors.Is(err, tc.is) || !errors.Is(err, ErrInvalidManifest) {
				t.Fatalf("err %v, want %v", err, tc.is)
			}
			if parsed != tc.parsed {
				t.Errorf("parsed %v", parsed)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("message %q, want %q in it", err, tc.msg)
			}
		})
	}
}

func TestDecodePodKeepsHostPathOfManifestDir(t *testing.T) {
	// kubelet accepts it (no check of hostPath against staticPodPath).
	data := webPod + "  volumes:\n  - name: m\n    hostPath: {path: /etc/kubernetes/manifests}\n"
	if _, _, err := DecodePod([]byte(data), fileOrigin("n")); err != nil {
		t.Fatal(err)
	}
}

func TestAddTolerationAsKubelet(t *testing.T) {
	five := int64(5)
	exists := corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{
		{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &five},
		{Key: "k", Operator: corev1.TolerationOpExists},
	}}}
	addToleration(pod, exists)
	if len(pod.Spec.Tolerations) != 2 || pod.Spec.Tolerations[0] != exists {
		t.Errorf("replaced: %+v", pod.Spec.Tolerations)
	}
	addToleration(pod, exists)
	if len(pod.Spec.Tolerations) != 2 {
		t.Errorf("equal one kept: %+v", pod.Spec.Tolerations)
	}
}

func TestDecodePodList(t *testing.T) {
	list := `{"apiVersion":"v1","kind":"PodList","items":[
{"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"nginx"}]}},
{"metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}]}`
	pods, parsed, err := DecodePodList([]byte(list), Origin{Source: SourceHTTP, Location: "http://h/p", NodeName: "n"})
	if err != nil || !parsed || len(pods) != 2 || pods[1].Name != "b-n" {
		t.Fatalf("%v %v %d", err, parsed, len(pods))
	}
	bad := strings.Replace(list, `"image":"nginx"}]}}]`, `"image":""}]}}]`, 1)
	if _, parsed, err := DecodePodList([]byte(bad), Origin{Source: SourceHTTP, Location: "u", NodeName: "n"}); !parsed || !errors.Is(err, ErrInvalidManifest) {
		t.Errorf("one bad item: parsed %v, %v", parsed, err)
	}
}

// Kubelet's decoder applies the v1 defaults only: a static pod's
// spec.resources gets no pod-level requests from its containers' (the pod
// registry's defaulting), only its quantities rounded up to milli-units.
func TestDecodePodKeepsPodLevelResources(t *testing.T) {
	manifest := `apiVersion: v1
kind: Pod
metadata:
  name: pl
spec:
  resources:
    limits:
      cpu: "0.5001"
  containers:
  - name: c
    image: nginx:1.27
    resources:
      requests:
        cpu: 100m
        memory: 1Mi
`
	pod, _, err := DecodePod([]byte(manifest), fileOrigin("n"))
	if err != nil {
		t.Fatal(err)
	}
	res := pod.Spec.Resources
	if res == nil || res.Requests != nil {
		t.Fatalf("pod-level resources %+v: requests defaulted", res)
	}
	if got := res.Limits[corev1.ResourceCPU]; got.String() != "501m" {
		t.Errorf("pod-level cpu limit %s, want 501m (rounded up)", got.String())
	}
}

// ValidatePodCreate's own checks, which kubelet applies to static pods.
func TestDecodePodRefusesCreateOnlyFields(t *testing.T) {
	for name, extra := range map[string]string{
		"spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared": "  schedulingGates:\n  - name: example.com/g\n",
		"spec.ephemeralContainers: Forbidden: cannot be set on create":                        "  ephemeralContainers:\n  - name: e\n    image: busybox\n",
	} {
		_, parsed, err := DecodePod([]byte(webPod+extra), fileOrigin("n"))
		if !parsed || !errors.Is(err, ErrInvalidManifest) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: parsed %v, %v", name, parsed, err)
		}
	}
}
