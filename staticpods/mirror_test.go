package staticpods

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// fakeAPI is an API server's pods and node, in memory.
type fakeAPI struct {
	mu    sync.Mutex
	node  *corev1.Node
	pods  map[string]*corev1.Pod // by full name
	n     int
	calls []string
}

func newFakeAPI() *fakeAPI {
	return &fakeAPI{node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "node-uid"}}, pods: map[string]*corev1.Pod{}}
}

var podsResource = schema.GroupResource{Resource: "pods"}

func (f *fakeAPI) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.node == nil || f.node.Name != name {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, name)
	}
	return f.node.DeepCopy(), nil
}

func (f *fakeAPI) CreatePod(_ context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "create "+pod.Name)
	if _, ok := f.pods[FullName(pod)]; ok {
		return nil, apierrors.NewAlreadyExists(podsResource, pod.Name)
	}
	p := pod.DeepCopy()
	f.n++
	p.UID = types.UID(fmt.Sprintf("mirror-%d", f.n))
	f.pods[FullName(p)] = p
	return p.DeepCopy(), nil
}

func (f *fakeAPI) DeletePod(_ context.Context, namespace, name string, uid types.UID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("delete %s uid=%s", name, uid))
	full := name + "_" + namespace
	p, ok := f.pods[full]
	if !ok {
		return apierrors.NewNotFound(podsResource, name)
	}
	if uid != "" && p.UID != uid {
		return apierrors.NewConflict(podsResource, name, errors.New("uid precondition"))
	}
	delete(f.pods, full)
	return nil
}

func (f *fakeAPI) pod(full string) *corev1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.pods[full]; ok {
		return p.DeepCopy()
	}
	return nil
}

func staticPod(t *testing.T, name, image string) *corev1.Pod {
	t.Helper()
	p, _, err := DecodePod([]byte(manifest(name, image)), Origin{Source: SourceFile, Location: "/m/" + name, NodeName: "n"})
	if err != nil {
		t.Fatal(err)
	}
	p.Annotations[ConfigSourceAnnotation] = SourceFile
	return p
}

func TestMirrorsLifecycle(t *testing.T) {
	ctx := context.Background()
	api := newFakeAPI()
	m := NewMirrors(api, "n")
	st := staticPod(t, "a", "nginx")
	m.SetStatic(st)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	mp := api.pod("a-n_default")
	if mp == nil {
		t.Fatal("no mirror created")
	}
	if mp.Annotations[ConfigMirrorAnnotation] != string(st.UID) || mp.Annotations[ConfigHashAnnotation] != string(st.UID) {
		t.Errorf("annotations %v", mp.Annotations)
	}
	or := mp.OwnerReferences
	if len(or) != 1 || or[0].Kind != "Node" || or[0].Name != "n" || or[0].UID != "node-uid" || or[0].APIVersion != "v1" || or[0].Controller == nil || !*or[0].Controller {
		t.Errorf("owner references %+v", or)
	}
	if got := m.TranslatePodUID(mp.UID); got != st.UID {
		t.Errorf("TranslatePodUID(mirror) = %s, want the static pod's %s", got, st.UID)
	}
	if got := m.TranslatePodUID("other"); got != "other" {
		t.Errorf("TranslatePodUID(other) = %s", got)
	}
	if got, static := m.MirrorPodUID(st.UID); got != mp.UID || !static {
		t.Errorf("MirrorPodUID(static) = %s %v", got, static)
	}
	if _, static := m.MirrorPodUID(mp.UID); static {
		t.Errorf("MirrorPodUID(mirror): static")
	}
	// A second Sync changes nothing.
	api.calls = nil
	if err := m.Sync(ctx); err != nil || len(api.calls) != 0 {
		t.Fatalf("idle sync: %v %v", err, api.calls)
	}

	// The mirror deleted by a user: recreated; the static pod stays.
	if err := api.DeletePod(ctx, "default", "a-n", ""); err != nil {
		t.Fatal(err)
	}
	m.RemoveMirror(mp)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if api.pod("a-n_default") == nil || len(m.Statics()) != 1 {
		t.Fatal("mirror not recreated, or static pod dropped")
	}

	// Being deleted (graceful): deleted with its UID and recreated.
	cur := api.pod("a-n_default")
	now := metav1.Now()
	cur.DeletionTimestamp = &now
	m.SetMirror(cur)
	api.calls = nil
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []string{"delete a-n uid=" + string(cur.UID), "create a-n"}; fmt.Sprint(api.calls) != fmt.Sprint(want) {
		t.Errorf("calls %v, want %v", api.calls, want)
	}

	// A new manifest (new hash): the old mirror replaced.
	st2 := staticPod(t, "a", "nginx:2")
	m.RemoveStatic(st)
	m.SetStatic(st2)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := api.pod("a-n_default"); got == nil || got.Annotations[ConfigMirrorAnnotation] != string(st2.UID) || got.Spec.Containers[0].Image != "nginx:2" {
		t.Fatalf("mirror after the change: %+v", got)
	}

	// The static pod gone: its mirror is deleted once it stopped.
	terminating := true
	m = NewMirrors(api, "n", WithTerminating(func(string) bool { return terminating }))
	m.SetMirror(api.pod("a-n_default"))
	if err := m.Sync(ctx); err != nil || api.pod("a-n_default") == nil {
		t.Fatalf("orphan of a terminating pod deleted: %v", err)
	}
	terminating = false
	if err := m.Sync(ctx); err != nil || api.pod("a-n_default") != nil {
		t.Fatalf("orphan kept: %v", err)
	}
}

func TestMirrorsNoNode(t *testing.T) {
	api := newFakeAPI()
	api.node = nil
	m := NewMirrors(api, "n")
	m.SetStatic(staticPod(t, "a", "nginx"))
	if err := m.Sync(context.Background()); !errors.Is(err, ErrNoNode) {
		t.Fatalf("no node: %v", err)
	}
	api.node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u", DeletionTimestamp: &metav1.Time{}}}
	if err := m.Sync(context.Background()); !errors.Is(err, ErrNoNode) || len(api.pods) != 0 {
		t.Fatalf("node being deleted: %v", err)
	}
}

func TestMirrorPodIgnoresNonMirrors(t *testing.T) {
	m := NewMirrors(newFakeAPI(), "n")
	m.SetMirror(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default", UID: "u"}})
	if err := m.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(m.mirrors) != 0 {
		t.Error("an API pod without config.mirror taken as a mirror")
	}
}
