package containerlogs_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/podstart/podstart/containerlogs"
)

// BenchmarkRotationCheckScale is one rotation pass (every 10 s) over N
// running containers whose logs are under the maximum size, at 1,000 and
// 10,000 containers: ns/container must not grow with N.
func BenchmarkRotationCheckScale(b *testing.B) {
	for _, count := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("containers=%d", count), func(b *testing.B) {
			n := newNode(b)
			files := map[string]string{}
			for i := range count {
				name := fmt.Sprintf("c%05d", i)
				n.container(name, 0, true)
				files[podDir+"/"+name+"/0.log"] = "a line of output\n"
			}
			n.files(files)
			m, err := containerlogs.New(n.rt, containerlogs.WithPodLogsDir(n.dir), containerlogs.WithClock(n.clock))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				n.rt.ResetCalls() // the fake keeps every call
				if err := m.RotateOnce(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(count), "ns/container")
		})
	}
}
