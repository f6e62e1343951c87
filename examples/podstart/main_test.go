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
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/validation"
)

func TestDemoPodStarts(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out, "", "", "", t.TempDir(), false, time.Minute); err != nil {
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
		err := run(&out, file, "", "", dir, false, time.Minute)
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.hint) {
			t.Errorf("%v, want %v with %q", err, tt.want, tt.hint)
		}
	}
}
