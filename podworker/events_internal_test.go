package podworker

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// onEvent: a runtime event asks for a relist at once only when it
// concerns a held pod that is not syncing (or no pod it can name); about
// a syncing pod it is left to that pod's loop, and about a pod the
// Workers do not hold it asks for nothing.
func TestOnEvent(t *testing.T) {
	rt := fake.New()
	ims := images.NewManager(rt)
	defer ims.Close()
	root := t.TempDir()
	s := podsync.NewSyncer(rt, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(root+"/logs"))
	// Workers without their loops: nothing takes the relist asked for.
	w := &Workers{syncer: s, pods: map[types.UID]*worker{}, relistNow: make(chan struct{}, 1), o: options{clock: clock.RealClock{}}}
	idle := &worker{uid: "idle"}
	busy := &worker{uid: "busy", syncing: true}
	w.pods[idle.uid], w.pods[busy.uid] = idle, busy
	ev := func(uid string) *runtimeapi.ContainerEventResponse {
		e := &runtimeapi.ContainerEventResponse{ContainerId: "c-" + uid, ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT}
		if uid != "" {
			e.PodSandboxStatus = &runtimeapi.PodSandboxStatus{Metadata: &runtimeapi.PodSandboxMetadata{Uid: uid}}
		}
		return e
	}
	asked := func() bool {
		select {
		case <-w.relistNow:
			w.relistQueued = false
			return true
		default:
			return false
		}
	}
	w.onEvent(ev("foreign"))
	if asked() || w.relistQueued {
		t.Error("an event about a pod not held asked for a relist")
	}
	w.onEvent(ev("busy"))
	if asked() || !busy.eventSeen {
		t.Errorf("an event about a syncing pod: relist asked for, or not noted (eventSeen %v)", busy.eventSeen)
	}
	w.onEvent(ev("idle"))
	if !asked() {
		t.Error("an event about an idle held pod asked for no relist")
	}
	w.onEvent(ev(""))
	if !asked() {
		t.Error("an event naming no pod asked for no relist")
	}
}
