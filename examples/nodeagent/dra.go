package main

import (
	"context"
	"log"
	"time"

	"github.com/go-logr/logr"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/dra"
)

// Dynamic Resource Allocation, as kubelet's DRA manager: drivers register
// through <root-dir>/plugins_registry (the plugin watcher's "DRAPlugin"
// type); a pod's claims are prepared right before its sandbox is made
// (podsync.WithResourcePreparer), its containers get their CDI devices
// (podsync.WithDevices, before the device plugins' as kubelet's
// GetResources orders them), and its claims are unprepared once its
// containers are gone (podworker.WithResourceClaims). The claim-info
// checkpoint lives in the root dir, as kubelet's.

// newDRA makes the DRA manager; claims are read live from the API server
// at each prepare, as kubelet reads them.
func (a *agent) newDRA(ctx context.Context, logger logr.Logger) (*dra.Manager, error) {
	return dra.New(ctx, a.RootDir, dra.ClaimGetterFunc(func(ctx context.Context, namespace, name string) (*resourcev1.ResourceClaim, error) {
		return a.Client.ResourceV1().ResourceClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	}), dra.WithLogger(logger))
}

// draReconcilePeriod is kubelet's DRA reconcile loop's period.
const draReconcilePeriod = 60 * time.Second

// reconcileClaims is kubelet's DRA reconcile loop: once every pod bound to
// the node is known, every minute, the claims of pods no longer active
// (gone while the agent was down, or whose unprepare failed) are
// unprepared. Runs until ctx ends.
func (a *agent) reconcileClaims(ctx context.Context, m *dra.Manager, clk clock.WithTicker) {
	t := clk.NewTicker(draReconcilePeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if !a.sourcesReady.Load() {
			continue
		}
		active := map[types.UID]bool{}
		for _, p := range (evictions{a}).ActivePods() {
			active[p.UID] = true
		}
		if err := m.Reconcile(ctx, func(uid types.UID) bool { return active[uid] }); err != nil && ctx.Err() == nil {
			log.Println("nodeagent: DRA reconcile:", err)
		}
	}
}
