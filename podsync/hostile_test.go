package podsync_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// TestNilOptionsFallBack: nil options keep the defaults.
func TestNilOptionsFallBack(t *testing.T) {
	f := fake.New(fake.WithRegistryImages("busybox:1.35", "envoy:1", "nginx:1"))
	ims := images.NewManager(f)
	defer ims.Close()
	root := t.TempDir()
	s := podsync.NewSyncer(f, ims, podsync.WithClock(nil), podsync.WithRecorder(nil), podsync.WithRuntimeHandler(nil),
		podsync.WithHTTPClient(nil), podsync.WithDNS(nil), podsync.WithTrace(nil), podsync.WithBackOff(nil),
		podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs")))
	pod := demoPod()
	st, err := s.Status(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	s.SyncPod(context.Background(), pod, st, nil)
}
