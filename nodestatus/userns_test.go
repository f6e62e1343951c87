package nodestatus

import (
	"context"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestUIDMapInUserNamespace ports moby/sys/userns's TestUIDMapInUserNS
// (what kubelet v1.37.2 calls), plus a file that cannot be read.
func TestUIDMapInUserNamespace(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		content *string // nil: no file
		want    bool
		// fileWant, when set, is the answer for the file, which differs
		// from the line's: an empty file has no line to read (io.EOF),
		// which moby's reader, and so kubelet, takes as no.
		fileWant *bool
	}{
		{name: "the initial namespace", content: ptr("         0          0 4294967295\n"), want: false},
		{name: "one id mapped", content: ptr("         0          0          1\n"), want: true},
		{name: "a rootless mapping, two lines", content: ptr("         0       1001          1\n         1     231072      65536\n"), want: true},
		{name: "empty: a namespace being set up", content: ptr(""), want: true, fileWant: new(false)},
		{name: "not three numbers: taken for the initial namespace", content: ptr("garbage\n"), want: false},
		{name: "no file: a kernel without user namespaces", want: false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "uid_map"+string(rune('a'+i)))
			if tt.content != nil {
				if err := os.WriteFile(path, []byte(*tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
				if got := uidMapInUserNamespace(firstLine(*tt.content)); got != tt.want {
					t.Errorf("uidMapInUserNamespace = %v, want %v", got, tt.want)
				}
			}
			want := tt.want
			if tt.fileWant != nil {
				want = *tt.fileWant
			}
			if got := inUserNamespace(path); got != want {
				t.Errorf("inUserNamespace = %v, want %v", got, want)
			}
		})
	}
	// The host's own answer: a value on Linux (this process's uid_map),
	// none elsewhere; MachineFromHost carries it.
	got := RunningInUserNamespace()
	if (goruntime.GOOS == "linux") != (got != nil) {
		t.Fatalf("RunningInUserNamespace() = %v on %s", got, goruntime.GOOS)
	}
	if got != nil && *got != inUserNamespace("/proc/self/uid_map") {
		t.Fatalf("RunningInUserNamespace() = %v, the uid map says otherwise", *got)
	}
	if m := MachineFromHost(""); (m.RunningInUserNamespace == nil) != (got == nil) || (got != nil && *m.RunningInUserNamespace != *got) {
		t.Fatalf("MachineFromHost: %v, want %v", m.RunningInUserNamespace, got)
	}
}

func ptr(s string) *string { return &s }

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TestEventRef ports kubelet v1.37.2's TestNodeRefWithUID: name only
// until a Node with a UID is seen, then that UID, kept.
func TestEventRef(t *testing.T) {
	r := NewEventRef("node-1")
	want := corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: "node-1"}
	if got := *r.Ref(); got != want {
		t.Fatalf("before any node: %+v", got)
	}
	r.Observe(nodeNamed("node-1", ""))                            // the initial node: no UID yet
	_ = r.Setter()(context.Background(), nodeNamed("node-1", "")) // nor from a setter pass
	r.Observe(nodeNamed("other", "uid-other"))                    // another node's UID is not ours
	if got := *r.Ref(); got != want {
		t.Fatalf("without our node's UID: %+v", got)
	}
	if err := r.Setter()(context.Background(), nodeNamed("node-1", "uid-1")); err != nil {
		t.Fatal(err)
	}
	want.UID = "uid-1"
	first := r.Ref()
	if *first != want {
		t.Fatalf("after the node: %+v", *first)
	}
	r.Observe(nodeNamed("node-1", "uid-recreated")) // as kubelet: the first UID is kept
	if second := r.Ref(); second != first || second.UID != "uid-1" {
		t.Fatalf("after a recreated node: %+v", *second)
	}
}

func nodeNamed(name, uid string) *corev1.Node {
	n := &corev1.Node{}
	n.Name, n.UID = name, types.UID(uid)
	return n
}
