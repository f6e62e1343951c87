package podsync

import (
	"encoding/json"
	"hash/fnv"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestHashContainerMatchesKubelet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, image string
		want        uint64
	}{
		{"test_container", "foo/image:v1", 0x8e45cbd0}, // kubelet's TestHashContainer
		{"foo1", "busybox", 0x3e36954e},
	}
	for _, tt := range tests {
		if got := HashContainer(&corev1.Container{Name: tt.name, Image: tt.image}); got != tt.want {
			t.Errorf("HashContainer(%s, %s) = %#x, want %#x", tt.name, tt.image, got, tt.want)
		}
	}
	a := HashContainer(&corev1.Container{Name: "c", Image: "busybox", Command: []string{"a"}})
	b := HashContainer(&corev1.Container{Name: "c", Image: "busybox", Command: []string{"b"}, Env: []corev1.EnvVar{{Name: "X"}}})
	if a != b {
		t.Error("command or env changed the hash; kubelet hashes name and image only")
	}
	if a == HashContainer(&corev1.Container{Name: "c", Image: "busybox:2"}) {
		t.Error("image change did not change the hash")
	}
}

// TestHashContainerJSON checks the streamed encoding against the
// straightforward one (encoding/json, then the spew text, then FNV-32a).
func TestHashContainerJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "busybox", `a"b\c`, "<>&", "\x00\x01\x1f\n\r\t", "ü→😀", "bad\xffutf8", "\u2028\u2029", "registry:5000/x@sha256:ab"} {
		c := &corev1.Container{Name: s, Image: s + "img"}
		if got, want := HashContainer(c), slowHash(c); got != want {
			t.Errorf("%q: %#x, want %#x", s, got, want)
		}
	}
}

func slowHash(c *corev1.Container) uint64 {
	data, _ := json.Marshal(map[string]string{"name": c.Name, "image": c.Image})
	text := "([]uint8)["
	for i, b := range data {
		if i > 0 {
			text += " "
		}
		text += strconv.Itoa(int(b))
	}
	h := fnv.New32a()
	h.Write([]byte(text + "]"))
	return uint64(h.Sum32())
}

func FuzzHashContainer(f *testing.F) {
	f.Add("name", "image")
	f.Fuzz(func(t *testing.T, name, image string) {
		c := &corev1.Container{Name: name, Image: image}
		if got, want := HashContainer(c), slowHash(c); got != want {
			t.Fatalf("%q %q: %#x, want %#x", name, image, got, want)
		}
	})
}
