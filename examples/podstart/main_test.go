package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/validation"
)

func TestDemoPodStarts(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out, "", "", "", t.TempDir(), false, time.Minute, fake.New()); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"sync 1: create sandbox attempt 0", "start init [proxy]", "pod running after 4 syncs", "proxy        sidecar  running", "init-db      init     exited(0)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestDemoExplainsFailures(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		spec string
		want error
		hint string
	}{
		{"metadata: {name: p}\nspec:\n  containers: [{name: app, image: 'Busybox:Latest'}]\n", images.ErrInvalidImageName, "not valid"},
		{"metadata: {name: p}\nspec:\n  containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /d}]}]\n", validation.ErrInvalidPod, `spec.containers[0].volumeMounts[0].name: Not found: "data"`},
		{"metadata: {name: p}\nspec:\n  securityContext: {runAsNonRoot: true}\n  containers: [{name: app, image: busybox}]\n", podsync.ErrCreateContainerConfig, "could not be built"},
	} {
		file := filepath.Join(dir, "pod.yaml")
		os.WriteFile(file, []byte(tt.spec), 0o644)
		var out bytes.Buffer
		err := run(&out, file, "", "", dir, false, time.Minute, fake.New())
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.hint) {
			t.Errorf("%v, want %v with %q", err, tt.want, tt.hint)
		}
	}
}

// TestDemoLeavesNothingBehind: after the demo, the pod's memory-backed
// emptyDir is unmounted and its pod and log directories are gone, as a
// node agent's RemovePod leaves them (the demo once removed only the
// sandboxes, and a medium Memory emptyDir stayed mounted).
func TestDemoLeavesNothingBehind(t *testing.T) {
	tests := []struct {
		name, spec string
		tmpfs      int // memory-backed volumes mounted
	}{
		{name: "the demo pod", spec: ""},
		{name: "a memory emptyDir", tmpfs: 1, spec: `metadata: {name: mem, uid: mem-uid}
spec:
  volumes: [{name: scratch, emptyDir: {medium: Memory}}, {name: disk, emptyDir: {}}]
  containers:
  - {name: app, image: busybox, volumeMounts: [{name: scratch, mountPath: /s}, {name: disk, mountPath: /d}]}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			file := ""
			if tt.spec != "" {
				file = filepath.Join(t.TempDir(), "pod.yaml")
				if err := os.WriteFile(file, []byte(tt.spec), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			m := fake.New()
			var out bytes.Buffer
			if err := run(&out, file, "", "", root, false, time.Minute, m); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if !strings.Contains(out.String(), "removed the pod: 1 sandbox(es)") {
				t.Errorf("output lacks the cleanup:\n%s", out.String())
			}
			mounted, unmounted := m.Counts()
			if left, _ := m.List(); len(left) != 0 || mounted != tt.tmpfs || unmounted != tt.tmpfs {
				t.Errorf("mounts left %v; %d mounted, %d unmounted, want %d each", left, mounted, unmounted, tt.tmpfs)
			}
			for _, dir := range []string{filepath.Join(root, "pods"), filepath.Join(root, "logs")} {
				entries, err := os.ReadDir(dir)
				if err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				if len(entries) != 0 {
					t.Errorf("%s still holds %v", dir, entries)
				}
			}
		})
	}
}
