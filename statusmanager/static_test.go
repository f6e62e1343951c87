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

// A static pod's status goes to its mirror pod (kubelet's TranslatePodUID):
// keyed by the static pod's UID, written to the pod of the same name whose
// UID translates to it, with the mirror's UID as the patch's precondition.
func TestStaticPodStatusWrittenToMirror(t *testing.T) {
	ann := map[string]string{"kubernetes.io/config.source": "file", "kubernetes.io/config.hash": "static-uid"}
	static := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "etcd-n", UID: "static-uid", Annotations: ann}}
	mirror := static.DeepCopy()
	mirror.UID = "mirror-uid"
	mirror.Annotations[corev1.MirrorPodAnnotationKey] = "static-uid"
	translate := func(uid types.UID) types.UID {
		if uid == "mirror-uid" {
			return "static-uid"
		}
		return uid
	}
	ctx := context.Background()
	running := corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.88.63.5"}

	// Without the translation (main's behaviour) nothing reaches the mirror.
	client := fake.NewClient(mirror)
	m := New(client)
	m.OnSync(static.UID, podworker.PodState{Pod: static, Status: &podsync.PodStatus{}, APIStatus: running})
	if err := m.Sync(ctx, false); err != nil {
		t.Fatal(err)
	}
	if p, _ := client.Pod("kube-system", "etcd-n"); p.Status.Phase != "" {
		t.Fatalf("written without translation: %v", p.Status.Phase)
	}

	client = fake.NewClient(mirror)
	m = New(client, WithTranslatePodUID(translate))
	m.OnSync(static.UID, podworker.PodState{Pod: static, Status: &podsync.PodStatus{}, APIStatus: running})
	if err := m.Sync(ctx, false); err != nil {
		t.Fatal(err)
	}
	p, _ := client.Pod("kube-system", "etcd-n")
	if p.Status.Phase != corev1.PodRunning || p.Status.PodIP != "10.88.63.5" {
		t.Fatalf("mirror status %+v", p.Status)
	}
	if w, ok := m.Written(static.UID); !ok || w.Phase != corev1.PodRunning {
		t.Errorf("Written(static UID) = %v %v", w.Phase, ok)
	}

	// The static pod removed while its mirror is being deleted: the phase
	// is not forced terminal (kubelet leaves static pods') and the mirror is
	// not deleted by the status manager (staticpods.Mirrors does that).
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

	// Another pod under the name (an outdated mirror): not written, dropped.
	other := mirror.DeepCopy()
	other.UID = "old-mirror-uid"
	client = fake.NewClient(other)
	m = New(client, WithTranslatePodUID(translate))
	m.OnSync(static.UID, podworker.PodState{Pod: static, Status: &podsync.PodStatus{}, APIStatus: running})
	if err := m.Sync(ctx, false); err != nil {
		t.Fatal(err)
	}
	if p, _ := client.Pod("kube-system", "etcd-n"); p.Status.Phase != "" {
		t.Errorf("written to an outdated mirror: %+v", p.Status)
	}
}
