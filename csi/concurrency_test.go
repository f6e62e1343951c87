package csi_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/csi"
)

// Publishes for many pods, registrations and reads of the registry at
// once (run with -race); TestMain checks nothing is left running.
func TestConcurrentOperations(t *testing.T) {
	e := newEnv(t, []csipb.NodeServiceCapability_RPC_Type{stageCap, groupCap})
	ctx := context.Background()
	if _, err := e.p.Stage(ctx, csi.StageRequest{Volume: pvVolume()}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Go(func() {
			req := publishReq()
			req.Pod = testPod()
			req.Pod.ObjectMeta = metav1.ObjectMeta{Name: "p", Namespace: "n", UID: types.UID(fmt.Sprint("uid-", i))}
			if _, err := e.p.Publish(ctx, req); err != nil {
				errs <- err
				return
			}
			if err := e.p.Unpublish(ctx, csi.UnpublishRequest{Driver: driverName, VolumeHandle: "vol-1", PodUID: string(req.Pod.UID), SpecName: "pv-1"}); err != nil {
				errs <- err
			}
		})
		wg.Go(func() {
			_ = e.p.ValidatePlugin(driverName, e.socket, []string{"1.0.0"})
			_, _ = e.p.DriverInfo(driverName)
			_ = e.p.Drivers()
		})
	}
	wg.Go(func() {
		if err := e.p.RegisterPlugin(ctx, driverName, e.socket, []string{"1.1.0"}, 0); err != nil {
			errs <- err
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := e.p.Unstage(ctx, csi.UnstageRequest{Driver: driverName, VolumeHandle: "vol-1"}); err != nil {
		t.Fatal(err)
	}
	e.d.Stop()
}
