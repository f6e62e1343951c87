package podsync

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/internal/statefile"
)

// A record of applied resources that is not a regular file podstart
// wrote, or is over its cap, is a damaged record: never waited on, never
// followed, read as empty; seeding reports why once and writes a record
// in its place.
func TestActuatedHostileRecord(t *testing.T) {
	valid := `{"app":{"cpuLimit":1500}}`
	tests := []struct {
		name string
		make func(t *testing.T, path string)
		want error
	}{
		{"FIFO", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, statefile.ErrNotRegular},
		{"symlink to a valid record", func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "record")
			if err := os.WriteFile(target, []byte(valid), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}, statefile.ErrNotRegular},
		{"64 MiB", func(t *testing.T, path string) {
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(64 << 20); err != nil {
				t.Fatal(err)
			}
		}, statefile.ErrTooLarge},
	}
	r := rr("100m", "500m", "", "")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: r}}}}
	status := &PodStatus{ContainerStatuses: []*ContainerStatus{{Name: "app", State: ContainerStateRunning}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "pods", "u")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, actuatedFile)
			tt.make(t, file)
			st := newActuatedStore(root)
			var got map[string]ResourceValues
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan struct{})
			go func() { defer close(done); got = st.get("u") }()
			select {
			case <-done:
			case <-ctx.Done():
				t.Fatal("get did not return before the deadline: a read waited")
			}
			if len(got) != 0 {
				t.Fatalf("get = %v, want nothing from a record refused unread", got)
			}
			seeded, err := st.seed(pod, status)
			if !seeded || !errors.Is(err, tt.want) {
				t.Fatalf("seed = %v, %v; want seeded and %v", seeded, err, tt.want)
			}
			if _, err := st.seed(pod, status); err != nil {
				t.Errorf("the damaged record was reported twice: %v", err)
			}
			fi, err := os.Lstat(file)
			if err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("record not written in its place: %v %v", fi, err)
			}
			st2 := newActuatedStore(root)
			if got, want := st2.get("u"), map[string]ResourceValues{"app": ResourceValuesOf(nil, &r)}; !reflect.DeepEqual(got, want) {
				t.Errorf("record after seeding = %v, want %v", got, want)
			}
		})
	}
}
