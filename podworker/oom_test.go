package podworker_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/runtime/fake"
)

// A container its memory limit killed, whose runtime reports the exit as
// "Error" before it records the OOM kill (containerd handles the two
// events apart): the pod's API status shows Error at first, then
// OOMKilled once the runtime says so, without any new event, through the
// periodic relist. Seen side by side with kubelet, which showed OOMKilled
// where podstart kept Error for the pod's life. The Syncer's clock stands
// still, so the exit is still settling (podsync.ExitSettleTime) however
// slow the machine.
func TestLateOOMKilledReachesAPIStatus(t *testing.T) {
	f := fake.New(fake.WithStartFunc(exitInits))
	root := t.TempDir()
	ims := images.NewManager(f)
	defer ims.Close()
	syncer := podsync.NewSyncer(f, ims, podsync.WithClock(testingclock.NewFakeClock(time.Unix(1_000_000, 0))),
		podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs")))
	e := &env{t: t, fake: f, syncer: syncer, root: root, states: map[types.UID]podworker.PodState{}, changed: make(chan struct{}, 1)}
	// The loops run on real time (the relist must tick), apart from the
	// Syncer's clock, which they would otherwise share.
	e.workers = podworker.New(syncer, podworker.WithClock(clock.RealClock{}), podworker.WithRelistPeriod(20*time.Millisecond), podworker.WithContainerEvents(false),
		podworker.WithOnSync(func(uid types.UID, st podworker.PodState) {
			e.mu.Lock()
			e.states[uid] = st
			e.mu.Unlock()
			select {
			case e.changed <- struct{}{}:
			default:
			}
		}))
	defer e.workers.Close()
	var oomRecorded atomic.Bool
	e.fake.InterceptAnswer(func(_ context.Context, method string, _, resp proto.Message, err error) (proto.Message, error) {
		r, ok := resp.(*runtimeapi.ContainerStatusResponse)
		if method != "ContainerStatus" || !ok || oomRecorded.Load() || r.GetStatus().GetReason() != "OOMKilled" {
			return resp, err
		}
		r = proto.Clone(r).(*runtimeapi.ContainerStatusResponse)
		r.Status.Reason = "Error"
		return r, err
	})
	pod := testPod("hog")
	pod.Spec.InitContainers = nil
	pod.Spec.Containers = pod.Spec.Containers[:1]
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	if err := e.workers.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	e.waitFor("pod running", []types.UID{pod.UID}, running)
	cs, err := e.fake.ListContainers(context.Background(), &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	if err != nil || len(cs) != 1 {
		t.Fatalf("running containers %v, %v", cs, err)
	}
	if err := e.fake.ExitContainer(cs[0].Id, fake.Exit{Code: 137, Reason: "OOMKilled"}); err != nil {
		t.Fatal(err)
	}
	reason := func(want string) func(podworker.PodState) bool {
		return func(st podworker.PodState) bool {
			s := st.APIStatus.ContainerStatuses
			return len(s) == 1 && s[0].State.Terminated != nil && s[0].State.Terminated.Reason == want
		}
	}
	e.waitFor("terminated with Error", []types.UID{pod.UID}, reason("Error"))
	oomRecorded.Store(true)
	e.waitFor("terminated with OOMKilled", []types.UID{pod.UID}, reason("OOMKilled"))
	st, _ := e.workers.Status(pod.UID)
	if c := st.APIStatus.ContainerStatuses[0].State.Terminated; c.ExitCode != 137 || st.APIStatus.Phase != corev1.PodFailed {
		t.Fatalf("exit code %d, phase %s; want 137, Failed", c.ExitCode, st.APIStatus.Phase)
	}
}
