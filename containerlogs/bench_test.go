package containerlogs_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/podstart/podstart/containerlogs"
)

// BenchmarkRotationCheck is one pass over 500 running containers whose
// logs are under the maximum size: what every tick of Run costs on a busy
// node (one ListContainers, 500 ContainerStatus, 500 Lstat).
func BenchmarkRotationCheck(b *testing.B) {
	for _, workers := range []int{1, 4} {
		b.Run(fmt.Sprintf("containers=500/workers=%d", workers), func(b *testing.B) {
			n := newNode(b)
			files := map[string]string{}
			for i := range 500 {
				name := fmt.Sprintf("c%03d", i)
				n.container(name, 0, true)
				files[podDir+"/"+name+"/0.log"] = "a line of output\n"
			}
			n.files(files)
			m, err := containerlogs.New(n.rt, containerlogs.WithPodLogsDir(n.dir), containerlogs.WithClock(n.clock),
				containerlogs.WithWorkers(workers))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := m.RotateOnce(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
