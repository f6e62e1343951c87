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
	"github.com/podstart/podstart/podworker"
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
//
// Pods whose devices' health changed are resynced (reconcileClaims reads
// them), so that their status is generated again with the health
// (withDeviceHealth), as kubelet's status update on a health change; as
// kubelet's, a notification that finds the queue full is dropped.
func (a *agent) newDRA(ctx context.Context, logger logr.Logger) (*dra.Manager, error) {
	a.draHealth = make(chan []types.UID, 100)
	return dra.New(ctx, a.RootDir, dra.ClaimGetterFunc(func(ctx context.Context, namespace, name string) (*resourcev1.ResourceClaim, error) {
		return a.Client.ResourceV1().ResourceClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	}), dra.WithLogger(logger), dra.WithHealthChange(func(uids []types.UID) {
		select {
		case a.draHealth <- uids:
		default:
			logger.Error(nil, "DRA health update queue is full, discarding pod update notification", "pods", uids)
		}
	}))
}

// withDeviceHealth is the pod status with its containers' DRA devices'
// health (allocatedResourcesStatus), as kubelet adds it to every status
// it generates with ResourceHealthStatus on (its default).
func withDeviceHealth(m *dra.Manager, st podworker.PodState) podworker.PodState {
	if st.Pod == nil || len(st.Pod.Spec.ResourceClaims) == 0 {
		return st
	}
	st.APIStatus = *st.APIStatus.DeepCopy()
	m.UpdateAllocatedResourcesStatus(st.Pod, &st.APIStatus)
	return st
}

// draReconcilePeriod is kubelet's DRA reconcile loop's period.
const draReconcilePeriod = 60 * time.Second

// reconcileClaims is kubelet's DRA reconcile loop: once every pod bound to
// the node is known, every minute, the claims of pods no longer active
// (gone while the agent was down, or whose unprepare failed) are
// unprepared. It also resyncs the pods whose devices' health changed.
// Runs until ctx ends.
func (a *agent) reconcileClaims(ctx context.Context, m *dra.Manager, clk clock.WithTicker) {
	t := clk.NewTicker(draReconcilePeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case uids := <-a.draHealth:
			for _, uid := range uids {
				a.workers.Resync(uid)
			}
			continue
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
