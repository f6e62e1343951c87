package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/mem"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/defaults"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/runtime/fake"
)

func TestReadPods(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	json := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"app","image":"busybox:1.35"}]}}`
	yaml := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: b\n  namespace: ns\nspec:\n  containers:\n  - name: app\n    image: busybox:1.35\n"
	for name, content := range map[string]string{"a.json": json, "b.yaml": yaml, ".hidden": "x"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pods, err := readPods(dir, "node1")
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 2 {
		t.Fatalf("%d pods", len(pods))
	}
	a, b := pods[0], pods[1]
	if a.Name != "a-node1" || a.Namespace != "default" || b.Name != "b-node1" || b.Namespace != "ns" || a.Spec.NodeName != "node1" {
		t.Errorf("names: %s/%s, %s/%s", a.Namespace, a.Name, b.Namespace, b.Name)
	}
	if a.UID == "" || a.UID == b.UID {
		t.Errorf("UIDs %q, %q", a.UID, b.UID)
	}
	// Defaulted as the API server would: the pull policy of a tagged image.
	if got := a.Spec.Containers[0].ImagePullPolicy; got != corev1.PullIfNotPresent {
		t.Errorf("pull policy %q", got)
	}
	again, _ := readPods(dir, "node1")
	if again[0].UID != a.UID {
		t.Error("UID not stable across reads")
	}
	if other, _ := readPods(dir, "node2"); other[0].UID == a.UID {
		t.Error("UID does not depend on the node name")
	}
	if err := os.WriteFile(filepath.Join(dir, "c.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readPods(dir, "node1"); err == nil {
		t.Error("a bad manifest: no error")
	}
}

func TestFreeAfterBursts(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	rt := fake.New(fake.WithImages("busybox:1.35"))
	ims := images.NewManager(rt)
	defer ims.Close()
	w := podworker.New(podsync.NewSyncer(rt, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs"))))
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	freed, done := make(chan struct{}, 1), make(chan struct{})
	// Watching before the upsert: a sync that ended before the watch began
	// was not seen (this test hung so beside two CPU hogs, the loop's
	// goroutine not yet started when the pod synced).
	loop := freeAfterBursts(w, time.Millisecond, func() {
		select {
		case freed <- struct{}{}:
		default: // a later burst (the pod's next sync)
		}
	})
	go func() {
		defer close(done)
		loop(ctx)
	}()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default", UID: "1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1.35"}}}}
	defaults.Pod(pod)
	if err := w.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	<-freed
	// Freed once the burst was over: the pod synced, its container runs.
	st, ok := w.Status(pod.UID)
	if !ok || st.Synced.IsZero() || st.Status.FindContainerStatusByName("app") == nil {
		t.Errorf("freed before the pod's sync ended: %+v", st)
	}
	cancel()
	<-done
}

func TestSmallBuffers(t *testing.T) {
	t.Parallel()
	p := smallBuffers{mem.DefaultBufferPool()}
	for _, n := range []int{1, 4096, maxPooledBuffer, maxPooledBuffer + 1, 1 << 20} {
		b := p.Get(n)
		if len(*b) != n {
			t.Errorf("Get(%d): len %d", n, len(*b))
		}
		p.Put(b)
	}
}
