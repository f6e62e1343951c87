package runtime_test

import (
	"context"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/internal/wiretest"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

// BenchmarkImageStatus measures one ImageStatus round trip in-process and
// over a unix socket through the gRPC client.
func BenchmarkImageStatus(b *testing.B) {
	f := fake.New(fake.WithImages("busybox:1.35"))
	wire, _ := wiretest.Serve(b, f)
	spec := &runtimeapi.ImageSpec{Image: "busybox:1.35"}
	for _, bc := range []struct {
		name string
		rt   runtime.ImageService
	}{{"in-process", f}, {"unix-socket", wire}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				f.ResetCalls()
				st, err := bc.rt.ImageStatus(ctx, spec, false)
				if err != nil || st.Image == nil {
					b.Fatal(st, err)
				}
			}
		})
	}
}
