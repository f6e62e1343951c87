package podworker_test

import (
	"context"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/internal/wiretest"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

// With no periodic relist at all, the runtime's container events alone
// tell the worker that a container exited; in process and over the wire
// (CRI GetContainerEvents).
func TestWorkerWakesOnContainerEvents(t *testing.T) {
	for _, wire := range []bool{false, true} {
		f := fake.New()
		var rt runtime.Runtime = f
		if wire {
			rt, _ = wiretest.Serve(t, f)
		}
		root := t.TempDir()
		ims := images.NewManager(rt)
		syncer := podsync.NewSyncer(rt, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs")))
		states := make(chan podworker.PodState, 1000)
		w := podworker.New(syncer, podworker.WithRelistPeriod(0), podworker.WithResyncPeriod(0), podworker.WithGC(0, podsync.DefaultGCPolicy),
			podworker.WithOnSync(func(_ types.UID, st podworker.PodState) { states <- st }))
		pod := testPod("ev")
		pod.Spec.InitContainers = nil
		pod.Spec.Containers = pod.Spec.Containers[:1]
		if err := w.Upsert(pod); err != nil {
			t.Fatal(err)
		}
		until := func(what string, cond func(podworker.PodState) bool) {
			t.Helper()
			deadline := time.After(20 * time.Second)
			for {
				select {
				case st := <-states:
					if cond(st) {
						return
					}
				case <-deadline:
					t.Fatalf("wire %v: timed out waiting for %s", wire, what)
				}
			}
		}
		until("running", running)
		for f.EventWatchers() == 0 {
			goruntime.Gosched()
		}
		list, _ := f.ListContainers(context.Background(), nil)
		if err := f.ExitContainer(list[0].Id, fake.Exit{Code: 1}); err != nil {
			t.Fatal(err)
		}
		until("a restart", func(st podworker.PodState) bool {
			cs := st.APIStatus.ContainerStatuses
			return len(cs) == 1 && cs[0].RestartCount == 1 && cs[0].State.Running != nil
		})
		w.Close()
		ims.Close()
	}
}
