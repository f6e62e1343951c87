package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	fakemount "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/runtime/fake"
	"github.com/podstart/podstart/staticpods"
)

const staticManifest = `apiVersion: v1
kind: Pod
metadata:
  name: static-web
  labels: {tier: node}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox:1.35
`

// Static pods against a real kube-apiserver (test/cluster), with the
// node's own credentials (NodeRestriction lets a node create only mirror
// pods of itself): the manifest's pod runs, its mirror pod appears with
// kubelet's fields and the pod's status, a manifest change replaces pod and
// mirror, deleting the mirror recreates it without touching the pod, and
// removing the manifest kills the pod and deletes the mirror.
func TestStaticPodsAgainstAPIServer(t *testing.T) {
	t.Parallel()
	const node = "podstart-static"
	c, admin := startCluster(t, node)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "manifests")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "web.yaml")
	if err := os.WriteFile(manifest, []byte(staticManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	rt := fake.New()
	root := t.TempDir()
	runAgent(t, Config{Client: clientFor(t, c.NodeKubeconfig), Runtime: rt, NodeName: node, RootDir: root,
		PodLogsDir: filepath.Join(root, "logs"), Clock: clock.RealClock{}, Mounter: fakemount.New(),
		StaticPods: &StaticPods{ManifestPath: dir}})

	name := "static-web-" + node
	n, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mirror := func() *corev1.Pod {
		p, err := admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return p
	}
	running := func(image string) func() bool {
		return func() bool {
			p := mirror()
			return p != nil && p.DeletionTimestamp == nil && p.Spec.Containers[0].Image == image && p.Status.Phase == corev1.PodRunning && ready(p.Status)
		}
	}
	sandboxes := func(uid string) (ready int) {
		sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid}})
		if err != nil {
			t.Fatal(err)
		}
		for _, sb := range sbs {
			if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
				ready++
			}
		}
		return ready
	}

	t.Cleanup(func() {
		if t.Failed() {
			p := mirror()
			if p != nil {
				t.Logf("mirror pod: %+v %+v", p.ObjectMeta, p.Status)
			}
		}
	})
	eventually(t, "the mirror pod Running and Ready", running("busybox:1.35"))
	m := mirror()
	hash := m.Annotations[staticpods.ConfigHashAnnotation]
	if len(hash) != 32 || m.Annotations[staticpods.ConfigMirrorAnnotation] != hash || m.Annotations[staticpods.ConfigSourceAnnotation] != "file" || m.Annotations[staticpods.ConfigSeenAnnotation] == "" {
		t.Errorf("mirror annotations %v", m.Annotations)
	}
	if m.UID == types.UID(hash) {
		t.Errorf("mirror UID %s is the static pod's: the API server gives its own", m.UID)
	}
	or := m.OwnerReferences
	if len(or) != 1 || or[0].Kind != "Node" || or[0].Name != node || or[0].UID != n.UID || or[0].Controller == nil || !*or[0].Controller {
		t.Errorf("owner references %+v", or)
	}
	if m.Spec.NodeName != node || m.Labels["tier"] != "node" || !hasNoExecuteExists(m.Spec.Tolerations) {
		t.Errorf("mirror spec: node %q labels %v tolerations %+v", m.Spec.NodeName, m.Labels, m.Spec.Tolerations)
	}
	if sandboxes(hash) != 1 {
		t.Fatalf("static pod %s has no ready sandbox", hash)
	}

	// Deleting the mirror: recreated (a new UID), the pod untouched.
	if err := admin.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the mirror pod recreated", func() bool {
		p := mirror()
		return p != nil && p.UID != m.UID && p.DeletionTimestamp == nil && p.Annotations[staticpods.ConfigMirrorAnnotation] == hash
	})
	eventually(t, "the recreated mirror's status written", running("busybox:1.35"))
	if sandboxes(hash) != 1 {
		t.Errorf("static pod restarted or killed by the mirror's deletion")
	}

	// A changed manifest: a new static pod (new UID) and a new mirror.
	if err := os.WriteFile(manifest, []byte(strings.Replace(staticManifest, "busybox:1.35", "busybox:1.36", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new mirror pod Running", running("busybox:1.36"))
	hash2 := mirror().Annotations[staticpods.ConfigMirrorAnnotation]
	if hash2 == hash {
		t.Fatal("same hash after a manifest change")
	}
	eventually(t, "the old static pod killed", func() bool { return sandboxes(hash) == 0 && sandboxes(hash2) == 1 })

	// The manifest removed: the pod killed, the mirror deleted.
	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the mirror pod deleted", func() bool {
		_, err := admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	eventually(t, "the static pod killed", func() bool { return sandboxes(hash2) == 0 })
}

func hasNoExecuteExists(ts []corev1.Toleration) bool {
	for _, t := range ts {
		if t.Key == "" && t.Operator == corev1.TolerationOpExists && t.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}
