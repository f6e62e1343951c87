package podworker_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
)

// WithOnRelist hears every relist with the runtime's pods, and a failed
// one with its error.
func TestOnRelist(t *testing.T) {
	var mu sync.Mutex
	var heard []podworker.Relisted
	e := newEnv(t, nil, podworker.WithRelistPeriod(0), podworker.WithGC(0, podsync.DefaultGCPolicy), podworker.WithResyncPeriod(0),
		podworker.WithContainerEvents(false), podworker.WithOnRelist(func(r podworker.Relisted) {
			mu.Lock()
			heard = append(heard, r)
			mu.Unlock()
		}))
	p := testPod("relisted")
	if err := e.workers.Upsert(p); err != nil {
		t.Fatal(err)
	}
	e.waitFor("pod running", []types.UID{p.UID}, running)
	ctx := context.Background()
	// The pod's start relisted too (its loop waits for a relist after a
	// sync that did something): only the two below are counted.
	if err := e.workers.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	heard = nil
	mu.Unlock()
	if err := e.workers.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	e.fake.FailNext("ListPodSandbox", 1, errors.New("down"))
	if err := e.workers.Relist(ctx); err == nil {
		t.Fatal("relist did not fail")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 2 {
		t.Fatalf("heard %d relists, want 2", len(heard))
	}
	st := heard[0].Pods[p.UID]
	if heard[0].Err != nil || st == nil || len(st.SandboxStatuses) != 1 || len(st.ContainerStatuses) == 0 || heard[0].Start.IsZero() {
		t.Errorf("first relist: %+v", heard[0])
	}
	if heard[1].Err == nil || heard[1].Pods != nil {
		t.Errorf("failed relist: %+v", heard[1])
	}
}
