package apiobjects

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	fakemount "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/validation"
)

// TestVolumesRefuseInvalidPods: the Secret, ConfigMap, downward API and
// projected provider writes files, so it refuses a pod the API server
// would refuse before writing any: names that would take its directories
// outside the root, and modes outside 0-0777 (a setuid file whose content
// comes from a Secret). Nothing appears beside or under the root.
func TestVolumesRefuseInvalidPods(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *corev1.Pod)
	}{
		{"uid escapes", func(p *corev1.Pod) { p.UID = "../../x" }},
		{"volume dotdot", func(p *corev1.Pod) { p.Spec.Volumes[0].Name = ".." }},
		{"volume with slashes", func(p *corev1.Pod) { p.Spec.Volumes[0].Name = "../../../x" }},
		{"setuid item mode", func(p *corev1.Pod) { p.Spec.Volumes[0].Secret.Items[0].Mode = ptr.To[int32](0o4755) }},
		{"negative item mode", func(p *corev1.Pod) { p.Spec.Volumes[0].Secret.Items[0].Mode = ptr.To[int32](-1) }},
		{"bit 23 default mode", func(p *corev1.Pod) { p.Spec.Volumes[0].Secret.DefaultMode = ptr.To[int32](1<<23 | 0o644) }},
		{"item path escapes", func(p *corev1.Pod) { p.Spec.Volumes[0].Secret.Items[0].Path = "../../x" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			root := filepath.Join(parent, "root")
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
			src := newTestSource(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"pass": []byte("p")}})
			pod := volumePod(secretVolume("creds", "creds", false, corev1.KeyToPath{Key: "pass", Path: "password"}))
			pod.Spec.Containers[0].Image = "img"
			tt.mutate(pod)
			v := NewVolumes(src, root, WithMounter(fakemount.New()))
			if _, err := v.Volumes(context.Background(), pod); !errors.Is(err, validation.ErrInvalidPod) {
				t.Fatalf("Volumes: %v, want ErrInvalidPod", err)
			}
			if _, err := v.Volume(context.Background(), pod, pod.Spec.Volumes[0]); !errors.Is(err, validation.ErrInvalidPod) {
				t.Fatalf("Volume: %v, want ErrInvalidPod", err)
			}
			for dir, n := range map[string]int{parent: 1, root: 0} {
				if entries, _ := os.ReadDir(dir); len(entries) != n {
					t.Fatalf("%s holds %v", dir, entries)
				}
			}
		})
	}
}
