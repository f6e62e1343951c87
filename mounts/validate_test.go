package mounts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

func namedPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "0c4b2c5e-uid"},
		Spec: corev1.PodSpec{
			Volumes:        []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			InitContainers: []corev1.Container{{Name: "init", Image: "registry.example/init:1"}},
			Containers:     []corev1.Container{{Name: "app", Image: "registry.example/app:1", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
		},
	}
}

// TestValidatePodNames: every name that becomes a host path is checked as
// the API server would; a bad one is ErrInvalidName, naming the field.
func TestValidatePodNames(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *corev1.Pod)
		field  string // "" when valid
	}{
		{name: "valid", mutate: func(*corev1.Pod) {}},
		{name: "empty namespace allowed", mutate: func(p *corev1.Pod) { p.Namespace = "" }},
		{name: "uid empty", mutate: func(p *corev1.Pod) { p.UID = "" }, field: "metadata.uid"},
		{name: "uid dotdot", mutate: func(p *corev1.Pod) { p.UID = ".." }, field: "metadata.uid"},
		{name: "uid dot", mutate: func(p *corev1.Pod) { p.UID = "." }, field: "metadata.uid"},
		{name: "uid slash", mutate: func(p *corev1.Pod) { p.UID = "../../x" }, field: "metadata.uid"},
		{name: "uid NUL", mutate: func(p *corev1.Pod) { p.UID = "a\x00b" }, field: "metadata.uid"},
		{name: "namespace dotdot", mutate: func(p *corev1.Pod) { p.Namespace = ".." }, field: "metadata.namespace"},
		{name: "namespace slash", mutate: func(p *corev1.Pod) { p.Namespace = "a/../../b" }, field: "metadata.namespace"},
		{name: "name empty", mutate: func(p *corev1.Pod) { p.Name = "" }, field: "metadata.name"},
		{name: "name slash", mutate: func(p *corev1.Pod) { p.Name = "../x" }, field: "metadata.name"},
		{name: "name upper", mutate: func(p *corev1.Pod) { p.Name = "Web" }, field: "metadata.name"},
		{name: "container dotdot", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Name = ".." }, field: "spec.containers[0].name"},
		{name: "init container slash", mutate: func(p *corev1.Pod) { p.Spec.InitContainers[0].Name = "a/b" }, field: "spec.initContainers[0].name"},
		{name: "ephemeral container", mutate: func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "../dbg"}}}
		}, field: "spec.ephemeralContainers[0].name"},
		{name: "volume dotdot", mutate: func(p *corev1.Pod) { p.Spec.Volumes[0].Name = ".." }, field: "spec.volumes[0].name"},
		{name: "volume mount name", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].Name = "../x" }, field: "volumeMounts[0].name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := namedPod()
			tt.mutate(p)
			err := ValidatePodNames(p)
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidName) || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("got %v, want ErrInvalidName on %s", err, tt.field)
			}
		})
	}
	if err := ValidatePodNames(nil); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("nil pod: %v", err)
	}
}

// TestMakeRefusesEscapingNames: Make writes nothing outside PodDir for a
// container named ".." or a pod with a bad UID, and names the field.
func TestMakeRefusesEscapingNames(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mutate func(p *corev1.Pod)
		field  string
	}{
		{name: "valid", mutate: func(*corev1.Pod) {}},
		{name: "container dotdot", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Name = "../../escape" }, field: "spec.containers[0].name"},
		{name: "uid dotdot", mutate: func(p *corev1.Pod) { p.UID = ".." }, field: "metadata.uid"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			podDir := filepath.Join(root, "pods", "uid")
			p := namedPod()
			tt.mutate(p)
			c := &p.Spec.Containers[0]
			c.TerminationMessagePath = "/dev/termination-log"
			_, err := Make(context.Background(), Request{Pod: p, Container: c, PodDir: podDir,
				Volumes: VolumeMap{"data": {HostPath: root}}})
			if tt.field == "" {
				// The pod the others change is valid: their names alone
				// are refused.
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidName) || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("err = %v, want ErrInvalidName on %s", err, tt.field)
			}
			entries, _ := os.ReadDir(root)
			if len(entries) != 0 {
				t.Fatalf("Make wrote %v under the root", entries)
			}
		})
	}
}

// The fast path agrees with apimachinery's validation on every string it
// accepts, and accepts every string that validation does.
func FuzzNameChecks(f *testing.F) {
	for _, s := range []string{"", "a", "a-b", "-a", "a-", "a.b", "a..b", ".a", "a.", "A", "a_b", "0", strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a.", 126) + "a", "ab.-c", "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isLabel(s), len(validation.IsDNS1123Label(s)) == 0; got != want {
			t.Fatalf("isLabel(%q) = %v, validation says %v", s, got, want)
		}
		if got, want := isSubdomain(s), len(validation.IsDNS1123Subdomain(s)) == 0; got != want {
			t.Fatalf("isSubdomain(%q) = %v, validation says %v", s, got, want)
		}
	})
}
