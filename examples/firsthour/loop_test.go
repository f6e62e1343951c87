package firsthour

import (
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/defaults"
	mountsfake "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/runtime/fake"
)

// Program 3, a podworker loop: a job pod runs to completion and a server
// pod to Running; listeners added after construction see both. The
// runtime and the clock are given once.
func TestPodworkerLoop(t *testing.T) {
	rt := fake.New(fake.WithImages("busybox:1.35"))
	syncer := podsync.NewSyncer(rt, nil, podsync.WithRootDir(t.TempDir()), podsync.WithPodLogsDir(t.TempDir()),
		podsync.WithMounter(mountsfake.New()))
	workers := podworker.New(syncer, podworker.WithRelistPeriod(50*time.Millisecond))
	defer workers.Close()

	var mu sync.Mutex
	settled := map[types.UID]bool{}
	changed := make(chan struct{}, 1)
	stop := workers.OnSync(func(uid types.UID, st podworker.PodState) {
		if apistatus.Terminal(st.APIStatus) || apistatus.Running(st.Pod, st.APIStatus) && apistatus.Ready(st.APIStatus) {
			mu.Lock()
			settled[uid] = true
			mu.Unlock()
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	})
	defer stop()
	job := pod("job", corev1.RestartPolicyNever, "sh", "-c", "exit 0")
	server := pod("server", corev1.RestartPolicyAlways, "sleep", "infinity")
	for _, p := range []*corev1.Pod{job, server} {
		defaults.Pod(p) // what an API server would have set
		if err := workers.Upsert(p); err != nil {
			t.Fatal(err)
		}
	}
	timeout := time.After(30 * time.Second)
	for {
		mu.Lock()
		n := len(settled)
		mu.Unlock()
		if n == 2 {
			break
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("only %d of 2 pods settled", n)
		}
	}
	if st, _ := workers.Status(job.UID); st.APIStatus.Phase != corev1.PodSucceeded {
		t.Errorf("job: %s, want Succeeded", st.APIStatus.Phase)
	}
	if st, _ := workers.Status(server.UID); !apistatus.Running(st.Pod, st.APIStatus) {
		t.Errorf("server: %s, want running", st.APIStatus.Phase)
	}
}

func pod(name string, restart corev1.RestartPolicy, command ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{RestartPolicy: restart, TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: "main", Image: "busybox:1.35", Command: command}}},
	}
}
