package podworker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/runtime/fake"
)

// Pods whose syncs end within the relist gap share one relist: ten pods
// started at once cost two relists (the first asked, at once; then one
// at the gap's end for all the others), not one per pod.
func TestRelistGapCoalesces(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	f := fake.New(fake.WithClock(clk))
	root := t.TempDir()
	ims := images.NewManager(f, images.WithClock(clk))
	defer ims.Close()
	syncer := podsync.NewSyncer(f, ims, podsync.WithClock(clk), podsync.WithRootDir(root), podsync.WithPodLogsDir(root+"/logs"))
	var relists atomic.Int64
	w := podworker.New(syncer, podworker.WithClock(clk), podworker.WithRelistPeriod(0), podworker.WithResyncPeriod(0),
		podworker.WithContainerEvents(false), podworker.WithGC(0, podsync.DefaultGCPolicy), podworker.WithRelistGap(time.Second),
		podworker.WithOnRelist(func(podworker.Relisted) { relists.Add(1) }))
	defer w.Close()
	var pods []types.UID
	for i := range 10 {
		pod := testPod("burst-" + string(rune('a'+i)))
		pod.Spec.InitContainers = nil
		if err := w.Upsert(pod); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, pod.UID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	// Every first sync has ended and asked; the clock has not moved
	// since the first relist ended, so the others wait for it.
	if n := relists.Load(); n != 1 {
		t.Fatalf("%d relists before the gap's end, want 1", n)
	}
	clk.Step(time.Second)
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	for _, uid := range pods {
		st, ok := w.Status(uid)
		if !ok || !running(st) {
			t.Fatalf("pod %s not running: %+v", uid, st.APIStatus.Phase)
		}
	}
	if n := relists.Load(); n != 2 {
		t.Fatalf("%d relists for 10 pods' start, want 2", n)
	}
}
