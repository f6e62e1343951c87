package apiobjects

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// FieldPathValue parses a downward API fieldPath: it never panics, a
// subscript of labels or annotations reads that key when it is a
// qualified name and fails otherwise, and any other path is one of
// kubelet's five or an error.
func FuzzFieldPathValue(f *testing.F) {
	for _, s := range []string{"metadata.name", "metadata.labels", "metadata.labels['app']", "metadata.annotations['A/b']",
		"metadata.labels['']", "metadata.name['x']", "['x']", "metadata.labels[']", "metadata.labels['a']']", "spec.nodeName"} {
		f.Add(s)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "ns", UID: "u",
		Labels: map[string]string{"app": "web", "x.io/t": "1"}, Annotations: map[string]string{"A/b": "note"}}}
	f.Fuzz(func(t *testing.T, path string) {
		v, err := FieldPathValue(pod, path)
		if p, sub, ok := strings.Cut(path, "['"); ok && p != "" && strings.HasSuffix(path, "']") {
			sub = strings.TrimSuffix(sub, "']")
			switch p {
			case "metadata.labels":
				if valid := len(validation.IsQualifiedName(sub)) == 0; valid != (err == nil) || valid && v != pod.Labels[sub] {
					t.Fatalf("%q: %q, %v", path, v, err)
				}
			case "metadata.annotations":
				if valid := len(validation.IsQualifiedName(strings.ToLower(sub))) == 0; valid != (err == nil) || valid && v != pod.Annotations[sub] {
					t.Fatalf("%q: %q, %v", path, v, err)
				}
			default:
				if err == nil {
					t.Fatalf("%q: subscript of %q accepted", path, p)
				}
			}
			return
		}
		switch path {
		case "metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels", "metadata.annotations":
			if err != nil {
				t.Fatalf("%q: %v", path, err)
			}
		default:
			if err == nil {
				t.Fatalf("%q accepted: %q", path, v)
			}
		}
	})
}
