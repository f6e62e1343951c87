package podworker_test

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
)

// BenchmarkRelist100Pods: one relist period of a worker holding 100
// running pods (2 init, 2 app containers each), with nothing changed;
// reports the CRI calls it makes.
func BenchmarkRelist100Pods(b *testing.B) {
	e := newEnv(b, nil, podworker.WithRelistPeriod(0), podworker.WithResyncPeriod(0), podworker.WithGC(0, podsync.DefaultGCPolicy), podworker.WithContainerEvents(false))
	var uids []types.UID
	for i := 0; i < 100; i++ {
		p := testPod(fmt.Sprintf("b%03d", i))
		uids = append(uids, p.UID)
		if err := e.workers.Upsert(p); err != nil {
			b.Fatal(err)
		}
	}
	e.waitFor("100 pods running", uids, running)
	ctx := context.Background()
	if err := e.workers.Relist(ctx); err != nil {
		b.Fatal(err)
	}
	e.fake.ResetCalls()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := e.workers.Relist(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(len(e.fake.Calls()))/float64(b.N), "cri-calls/relist")
}
