package firsthour

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/images"
	mountsfake "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podstep"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// Program 1, a unit test of pod start: a job that fails, a server that
// runs, an image that does not exist. One clock, one call per sync,
// kubelet's reasons in the status.
func TestUnitTestOfPodStart(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC))
	rt := fake.New(fake.WithClock(clk), fake.WithRegistryImages("busybox:1.35"))
	syncer := podsync.NewSyncer(rt, nil, podsync.WithClock(clk), podsync.WithRootDir(t.TempDir()),
		podsync.WithPodLogsDir(t.TempDir()), podsync.WithMounter(mountsfake.New()))
	p, err := podstep.New(syncer, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "server", Image: "busybox:1.35", Command: []string{"sleep", "infinity"}},
			{Name: "job", Image: "busybox:1.35", Command: []string{"sh", "-c", "exit 3"}},
			{Name: "typo", Image: "busyboxx:1.35"},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var status corev1.PodStatus
	for i := 0; i < 5 && !apistatus.Settled(p.Pod(), status); i++ {
		clk.Step(time.Second)
		status, err = p.Sync(ctx)
	}
	if !errors.Is(err, podsync.ErrCrashLoopBackOff) || !errors.Is(err, images.ErrImagePullBackOff) {
		t.Errorf("last sync: %v", err)
	}
	want := map[string]string{"server": "running", "job": "CrashLoopBackOff", "typo": "ImagePullBackOff"}
	for _, c := range status.ContainerStatuses {
		got := "running"
		if w := c.State.Waiting; w != nil {
			got = w.Reason
		}
		if got != want[c.Name] {
			t.Errorf("%s: %s, want %s", c.Name, got, want[c.Name])
		}
	}
	// Pending, as kubelet says while a container has never started.
	if status.Phase != corev1.PodPending || apistatus.Ready(status) {
		t.Errorf("phase %s, ready %v; want Pending, not ready", status.Phase, apistatus.Ready(status))
	}
}
