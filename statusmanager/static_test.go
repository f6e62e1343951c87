package statusmanager

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/statusmanager/fake"
)

// mirrorPods maps one static pod to its mirror, as staticpods.Mirrors.
type mirrorPods struct {
	static, mirror types.UID
}

func (m *mirrorPods) TranslatePodUID(uid types.UID) types.UID {
	if uid == m.mirror && m.mirror != "" {
		return m.static
	}
	return uid
}

func (m *mirrorPods) MirrorPodUID(uid types.UID) (types.UID, bool) {
	if uid != m.static {
		return "", false
	}
	return m.mirror, true
}

// A static pod's status goes to its mirror pod (kubelet's UID
// translations): keyed by the static pod's UID, skipped while it has no
// mirror, written to the pod of the same name whose UID translates to it
// (the mirror's UID as the patch's precondition), written again to a
// recreated mirror.
func TestStaticPodStatusWrittenToMirror(t *testing.T) {
	ann := map[string]string{"kubernetes.io/config.source": "file", "kubernetes.io/config.hash": "static-uid"}
	static := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "etcd-n", UID: "static-uid", Annotations: ann}}
	mirror := static.DeepCopy()
	mirror.UID = "mirror-uid"
	mirror.Annotations[corev1.MirrorPodAnnotationKey] = "static-uid"
	ctx := context.Background()
	running := corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.88.63.5"}
	phase := func(c *fake.Client) corev1.PodPhase {
		p, _ := c.Pod("kube-system", "etcd-n")
		return p.Status.Phase
	}

	// Without the mirror pods (main's behaviour) nothing reaches the mirror.
	client := fake.NewClient(mirror)
	m := New(client)
	m.OnSync(static.UID, podworker.PodState{Pod: static, Status: &podsync.PodStatus{}, APIStatus: running})
	if err := m.Sync(ctx, false); err != nil {
		t.Fatal(err)
	}
	if phase(client) != "" {
		t.Fatalf("written without mirror pods: %v", phase(client))
	}

	// No mirror yet: skipped, not read.
	mp := &mirrorPods{static: "static-uid"}
	client = fake.NewClient(mirror)
	m = New(client, WithMirrorPods(mp))
	m.OnSync(static.UID, podworker.PodState{Pod: static, Status: &podsync.PodStatus{}, APIStatus: running})
	if err := m.Sync(ctx, true); err != nil || len(client.Calls()) != 0 {
		t.Fatalf("static pod without a mirror: %v %v", err, client.Verbs())
	}
	mp.mirror = "mirror-uid"
	if err := m.Sync(ctx, false); err != nil {
		t.Fatal(err)
	}
	if p, _ := client.Pod("kube-system", "etcd-n"); p.Status.Phase != corev1.PodRunning || p.Status.PodIP != "10.88.63.5" {
		t.Fatalf("mirror status %+v", p.Status)
	}
	if w, ok := m.Written(static.UID); !ok || w.Phase != corev1.PodRunning {
		t.Errorf("Written(static UID) = %v %v", w.Phase, ok)
	}

	// The mirror deleted and recreated (a new UID): written again.
	mirror2 := mirror.DeepCopy()
	mirror2.UID = "mirror-uid-2"
	client.Put(mirror2)
	mp.mirror = "mirror-uid-2"
	if err := m.Sync(ctx, false); err != nil {
		t.Fatal(err)
	}
	if phase(client) != corev1.PodRunning {
		t.Fatalf("recreated mirror not written: %v", phase(client))
	}

	// The static pod removed while its mirror is being deleted: the phase
	// is not forced terminal (kubelet leaves static pods') and the mirror is
	// not deleted by the status manager (staticpods.Mirrors does that).
	p, _ := client.Pod("kube-system", "etcd-n")
	p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	p.Status.Phase = corev1.PodSucceeded
	client.Put(p)
	client.ClearCalls()
	m.OnSync(static.UID, podworker.PodState{Pod: static, APIStatus: running, Terminating: true, Removed: true})
	if err := m.Sync(ctx, false); err != nil {
		t.Fatal(err)
	}
	for _, c := range client.Calls() {
		if c.Verb == fake.Delete {
			t.Errorf("mirror pod deleted by the status manager: %+v", c)
		}
	}
	if st, _ := m.Status(static.UID); st.Phase == corev1.PodFailed {
		t.Errorf("static pod's phase forced to Failed")
	}

	// Another pod under the name (an outdated mirror): not written.
	other := mirror.DeepCopy()
	other.UID = "old-mirror-uid"
	client = fake.NewClient(other)
	m = New(client, WithMirrorPods(&mirrorPods{static: "static-uid", mirror: "mirror-uid"}))
	m.OnSync(static.UID, podworker.PodState{Pod: static, Status: &podsync.PodStatus{}, APIStatus: running})
	if err := m.Sync(ctx, false); err != nil {
		t.Fatal(err)
	}
	if phase(client) != "" {
		t.Errorf("written to an outdated mirror: %v", phase(client))
	}
}
