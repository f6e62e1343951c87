package csi_test

import (
	"testing"

	"github.com/podstart/podstart/csi"
)

func BenchmarkPaths(b *testing.B) {
	l := csi.Layout{Root: "/var/lib/kubelet"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.StagingPath("pd.csi.storage.gke.io", "projects/p/zones/z/disks/pvc-0a1b2c3d"); err != nil {
			b.Fatal(err)
		}
		if _, err := l.PublishPath("0f1e2d3c-aaaa-bbbb-cccc-123456789abc", "pvc-0a1b2c3d-4e5f-6789-abcd-ef0123456789"); err != nil {
			b.Fatal(err)
		}
	}
}
