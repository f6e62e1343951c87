package staticpods

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAdmissionOrderAndCriticality(t *testing.T) {
	api := func(name string, at time.Time) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(at),
			Annotations: map[string]string{ConfigSourceAnnotation: SourceAPIServer}}}
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "static", Annotations: map[string]string{ConfigSourceAnnotation: SourceFile}}}
	pods := []*corev1.Pod{api("new", t0.Add(time.Hour)), st, api("old", t0)}
	SortForAdmission(pods)
	if got := pods[0].Name + " " + pods[1].Name + " " + pods[2].Name; got != "static old new" {
		t.Errorf("order %s", got)
	}
	prio := SystemCriticalPriority
	crit := api("crit", t0)
	crit.Spec.Priority = &prio
	mirror := api("mirror", t0)
	mirror.Annotations[ConfigMirrorAnnotation] = "h"
	for _, tc := range []struct {
		pod                    *corev1.Pod
		static, mirror, critic bool
	}{
		{st, true, false, true}, {pods[1], false, false, false}, {crit, false, false, true}, {mirror, false, true, true},
	} {
		if IsStaticPod(tc.pod) != tc.static || IsMirrorPod(tc.pod) != tc.mirror || IsCriticalPod(tc.pod) != tc.critic {
			t.Errorf("%s: static %v mirror %v critical %v", tc.pod.Name, IsStaticPod(tc.pod), IsMirrorPod(tc.pod), IsCriticalPod(tc.pod))
		}
	}
}
