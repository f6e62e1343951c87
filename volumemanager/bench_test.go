package volumemanager

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// benchEnv: 500 pods with 3 claims each, every claim bound to its own
// CSI volume of a driver that stages.
func benchEnv(b *testing.B) (*env, []*corev1.Pod) {
	e := newEnv(b)
	e.objs.Set(csiDriver(driver, false))
	var pods []*corev1.Pod
	for i := range 500 {
		var vols []corev1.Volume
		for j := range 3 {
			claim := fmt.Sprintf("c-%d-%d", i, j)
			c, pv := boundClaim(claim, "pv-"+claim, "vol-"+claim)
			e.objs.Set(c, pv)
			vols = append(vols, claimVolume(fmt.Sprintf("v%d", j), claim))
		}
		pods = append(pods, newPod(fmt.Sprintf("p-%d", i), types.UID(fmt.Sprintf("uid-%d", i)), vols...))
	}
	return e, pods
}

// BenchmarkReconcileMountAll: one reconciler pass that stages and
// publishes 1,500 volumes for 500 pods (vol_data.json files included).
func BenchmarkReconcileMountAll(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		e, pods := benchEnv(b)
		for _, p := range pods {
			if err := e.m.AddPod(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if err := e.m.Reconcile(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReconcileSteady: one pass over 500 pods with 3 volumes each,
// all published: what Run costs every 100 ms on a busy node.
func BenchmarkReconcileSteady(b *testing.B) {
	ctx := context.Background()
	e, pods := benchEnv(b)
	for _, p := range pods {
		if err := e.m.AddPod(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.m.Reconcile(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := e.m.Reconcile(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAddPod: resolving one pod's 3 claims (kubelet's populator).
func BenchmarkAddPod(b *testing.B) {
	ctx := context.Background()
	e, pods := benchEnv(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := e.m.AddPod(ctx, pods[i%len(pods)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
