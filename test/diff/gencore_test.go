package diff

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/podstart/podstart/test/diff/internal/gencore"
)

// TestGeneratedCoreTypes fails when staticpods/internal/core's generated
// types no longer have the shapes of kubelet's internal core types
// (k8s.io/kubernetes/pkg/apis/core, reachable from core.Pod), which
// kubelet's static pod UID dumps: regenerate them with go generate in
// staticpods/internal/core.
func TestGeneratedCoreTypes(t *testing.T) {
	want, err := gencore.Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", "staticpods", "internal", "core", "zz_generated.types.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("staticpods/internal/core/zz_generated.types.go differs from kubelet's types: run go generate in staticpods/internal/core")
	}
}
