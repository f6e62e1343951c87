package dra_test

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkPrepareResources500Pods prepares and unprepares 500 pods, each
// with a claim of its own and one of 8 claims shared by many, through a
// fake driver over a unix socket; one op is the 500 pods.
func BenchmarkPrepareResources500Pods(b *testing.B) {
	e := newEnv(b)
	e.startDriver("gpu.example.com")
	const pods, shared = 500, 8
	ps := make([]*podT, pods)
	for i := range ps {
		p := pod("ns", fmt.Sprintf("p%d", i), fmt.Sprintf("uid-p%d", i), fmt.Sprintf("own%d", i), fmt.Sprintf("shared%d", i%shared))
		ps[i] = p
		e.claims.put(claim("ns", fmt.Sprintf("own%d", i), fmt.Sprintf("uid-own%d", i), "gpu.example.com", p))
	}
	for s := range shared {
		var users []*podT
		for i := s; i < pods; i += shared {
			users = append(users, ps[i])
		}
		e.claims.put(claim("ns", fmt.Sprintf("shared%d", s), fmt.Sprintf("uid-shared%d", s), "gpu.example.com", users...))
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		for _, p := range ps {
			if err := e.mgr.PrepareResources(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		for _, p := range ps {
			if err := e.mgr.UnprepareResources(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
}
