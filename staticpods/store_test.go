package staticpods

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestMergeAsKubeletConfig(t *testing.T) {
	now := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	m := newMerger(SourceFile, func() time.Time { return now })
	pod := func(name, uid, label string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("u-" + uid),
			Labels: map[string]string{"l": label}}}
	}
	// First snapshot, empty: one ADD with no pods (the source is seen).
	ups, _ := m.merge(nil)
	if len(ups) != 1 || ups[0].Op != OpAdd || len(ups[0].Pods) != 0 {
		t.Fatalf("first empty snapshot: %+v", ups)
	}
	ups, _ = m.merge([]*corev1.Pod{pod("a", "1", "x")})
	if len(ups) != 1 || ups[0].Op != OpAdd {
		t.Fatalf("add: %+v", ups)
	}
	seen := ups[0].Pods[0].Annotations[ConfigSeenAnnotation]
	// Same UID, other labels: UPDATE, config.seen kept.
	now = now.Add(time.Minute)
	ups, _ = m.merge([]*corev1.Pod{pod("a", "1", "y")})
	if len(ups) != 1 || ups[0].Op != OpUpdate || ups[0].Pods[0].Labels["l"] != "y" || ups[0].Pods[0].Annotations[ConfigSeenAnnotation] != seen {
		t.Fatalf("update: %+v", ups)
	}
	// Unchanged: nothing.
	if ups, _ = m.merge([]*corev1.Pod{pod("a", "1", "y")}); len(ups) != 0 {
		t.Fatalf("unchanged: %+v", ups)
	}
	// Two of one name: the first kept, the second refused.
	ups, dups := m.merge([]*corev1.Pod{pod("a", "1", "y"), pod("a", "2", "y")})
	if len(ups) != 0 || len(dups) != 1 || dups[0].UID != "u-2" {
		t.Fatalf("duplicate: %+v %+v", ups, dups)
	}
	// Another UID: REMOVE before ADD.
	ups, _ = m.merge([]*corev1.Pod{pod("a", "3", "y")})
	if len(ups) != 2 || ups[0].Op != OpRemove || ups[1].Op != OpAdd || ups[1].Pods[0].UID != "u-3" {
		t.Fatalf("replace: %+v", ups)
	}
	if ups[1].Pods[0].Annotations[ConfigSourceAnnotation] != "file" {
		t.Errorf("config.source %v", ups[1].Pods[0].Annotations)
	}
}
