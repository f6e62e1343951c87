package vk_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/defaults"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
	"github.com/podstart/podstart/vk"
)

// notes records what the provider notified, newest last.
type notes struct {
	mu   sync.Mutex
	pods []*corev1.Pod
	wake chan struct{}
}

func (n *notes) add(p *corev1.Pod) {
	n.mu.Lock()
	n.pods = append(n.pods, p)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// wait returns the first pod notified (since the n-th) that ok accepts.
func (n *notes) wait(t *testing.T, what string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	deadline := time.After(20 * time.Second)
	seen := 0
	for {
		n.mu.Lock()
		for ; seen < len(n.pods); seen++ {
			if ok(n.pods[seen]) {
				p := n.pods[seen]
				n.mu.Unlock()
				return p
			}
		}
		n.mu.Unlock()
		select {
		case <-n.wake:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no notification: %s", what)
		}
	}
}

type env struct {
	rt    *fake.Runtime
	p     *vk.Provider
	notes *notes
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	rt := fake.New(fake.WithImages("busybox:1.35", "busybox:1.36"))
	ims := images.NewManager(rt)
	t.Cleanup(func() { ims.Close() })
	syncer := podsync.NewSyncer(rt, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(root+"/logs"))
	p := vk.New(syncer)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	n := &notes{wake: make(chan struct{}, 1)}
	p.NotifyPods(ctx, n.add)
	return &env{rt: rt, p: p, notes: n}
}

func testPod(name, uid string) *corev1.Pod {
	grace := int64(1)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID(uid)},
		Spec: corev1.PodSpec{NodeName: "vk", TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.35"}}},
	}
	defaults.Pod(pod)
	return pod
}

func runningReady(uid types.UID) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		if p.UID != uid || p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != 1 ||
			p.Status.ContainerStatuses[0].State.Running == nil {
			return false
		}
		return condition(p.Status, corev1.PodReady) == corev1.ConditionTrue
	}
}

func condition(s corev1.PodStatus, c corev1.PodConditionType) corev1.ConditionStatus {
	for _, x := range s.Conditions {
		if x.Type == c {
			return x.Status
		}
	}
	return ""
}

func TestCreateGetUpdate(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pod := testPod("web", "uid-web")
	if err := e.p.CreatePod(ctx, pod.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "web Running and Ready", runningReady(pod.UID))

	got, err := e.p.GetPod(ctx, "shop", "web")
	if err != nil || got.UID != pod.UID || got.Status.Phase != corev1.PodRunning {
		t.Fatalf("GetPod: %v, %v", got, err)
	}
	st, err := e.p.GetPodStatus(ctx, "shop", "web")
	if err != nil || st.Phase != corev1.PodRunning || condition(*st, corev1.ContainersReady) != corev1.ConditionTrue {
		t.Fatalf("GetPodStatus: %+v, %v", st, err)
	}
	pods, err := e.p.GetPods(ctx)
	if err != nil || len(pods) != 1 || pods[0].Name != "web" {
		t.Fatalf("GetPods: %v, %v", pods, err)
	}
	// The copies handed out are the caller's.
	got.Status.Phase = corev1.PodFailed
	if again, _ := e.p.GetPod(ctx, "shop", "web"); again.Status.Phase != corev1.PodRunning {
		t.Fatal("GetPod handed out the provider's own pod")
	}

	// A new image: the container is replaced, as kubelet replaces it.
	first := got.Status.ContainerStatuses[0].ContainerID
	updated := pod.DeepCopy()
	updated.Spec.Containers[0].Image = "busybox:1.36"
	if err := e.p.UpdatePod(ctx, updated); err != nil {
		t.Fatal(err)
	}
	p := e.notes.wait(t, "web running busybox:1.36", func(p *corev1.Pod) bool {
		return runningReady(pod.UID)(p) && strings.HasSuffix(p.Status.ContainerStatuses[0].Image, "busybox:1.36")
	})
	if cs := p.Status.ContainerStatuses[0]; cs.ContainerID == first {
		t.Fatalf("same container after an image change: %+v", cs)
	}
	if got, _ := e.p.GetPod(ctx, "shop", "web"); got.Spec.Containers[0].Image != "busybox:1.36" {
		t.Fatalf("GetPod after UpdatePod: image %s", got.Spec.Containers[0].Image)
	}
}

func TestDeleteNotifiesTerminalAndRemoves(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pod := testPod("web", "uid-web")
	if err := e.p.CreatePod(ctx, pod.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "web Running", runningReady(pod.UID))

	del := pod.DeepCopy()
	now, grace := metav1.Now(), int64(1)
	del.DeletionTimestamp, del.DeletionGracePeriodSeconds = &now, &grace
	if err := e.p.DeletePod(ctx, del); err != nil {
		t.Fatal(err)
	}
	// Being deleted: VK no longer sees it.
	if _, err := e.p.GetPod(ctx, "shop", "web"); !errdefs.IsNotFound(err) {
		t.Fatalf("GetPod of a pod being deleted: %v", err)
	}
	if err := e.p.DeletePod(ctx, del); err != nil && !errdefs.IsNotFound(err) {
		t.Fatalf("DeletePod again: %v", err)
	}
	final := e.notes.wait(t, "web terminal", func(p *corev1.Pod) bool {
		return p.UID == pod.UID && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed)
	})
	t.Logf("final status: phase %s, %s", final.Status.Phase, final.Status.ContainerStatuses[0].State.Terminated)
	for _, cs := range final.Status.ContainerStatuses {
		if cs.State.Terminated == nil || cs.Ready {
			t.Fatalf("container %s in the final status: %+v", cs.Name, cs)
		}
	}
	if condition(final.Status, corev1.PodReady) == corev1.ConditionTrue {
		t.Fatal("final status Ready")
	}
	// Notified once nothing of it is left.
	left, err := podsync.ListPods(ctx, e.rt)
	if err != nil || len(left) != 0 {
		t.Fatalf("left on the runtime: %v, %v", left, err)
	}
	if err := e.p.DeletePod(ctx, del); !errdefs.IsNotFound(err) {
		t.Fatalf("DeletePod of a removed pod: %v", err)
	}
	if pods, _ := e.p.GetPods(ctx); len(pods) != 0 {
		t.Fatalf("GetPods after delete: %v", pods)
	}
}

func TestUnknownPodNotFound(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.p.GetPod(ctx, "shop", "nope"); !errdefs.IsNotFound(err) {
		t.Fatalf("GetPod: %v", err)
	}
	if _, err := e.p.GetPodStatus(ctx, "shop", "nope"); !errdefs.IsNotFound(err) {
		t.Fatalf("GetPodStatus: %v", err)
	}
	if err := e.p.DeletePod(ctx, testPod("nope", "uid-nope")); !errdefs.IsNotFound(err) {
		t.Fatalf("DeletePod: %v", err)
	}
	if pods, err := e.p.GetPods(ctx); err != nil || len(pods) != 0 {
		t.Fatalf("GetPods: %v, %v", pods, err)
	}
}

func TestInvalidPodRefused(t *testing.T) {
	e := newEnv(t)
	pod := testPod("web", "")
	if err := e.p.CreatePod(context.Background(), pod); !errdefs.IsInvalidInput(err) {
		t.Fatalf("CreatePod of a pod without UID: %v", err)
	}
	if _, err := e.p.GetPod(context.Background(), "shop", "web"); !errdefs.IsNotFound(err) {
		t.Fatalf("GetPod of a refused pod: %v", err)
	}
}

// Conditions other components own (here a readiness gate's) stay in the
// statuses VK writes whole.
func TestOthersConditionsKept(t *testing.T) {
	e := newEnv(t)
	pod := testPod("web", "uid-web")
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}}
	pod.Status.Conditions = []corev1.PodCondition{{Type: "example.com/lb", Status: corev1.ConditionTrue}}
	if err := e.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "web Ready through its gate", func(p *corev1.Pod) bool {
		return runningReady(pod.UID)(p) && condition(p.Status, "example.com/lb") == corev1.ConditionTrue
	})
}

// Statuses computed before NotifyPods was called are handed over then.
func TestNotifyPodsLate(t *testing.T) {
	root := t.TempDir()
	rt := fake.New(fake.WithImages("busybox:1.35"))
	ims := images.NewManager(rt)
	defer ims.Close()
	p := vk.New(podsync.NewSyncer(rt, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(root+"/logs")))
	defer p.Close()
	pod := testPod("web", "uid-web")
	if err := p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if st, err := p.GetPodStatus(context.Background(), "shop", "web"); err == nil && st.Phase == corev1.PodRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("web not Running")
		}
		time.Sleep(20 * time.Millisecond)
	}
	n := &notes{wake: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.NotifyPods(ctx, n.add)
	n.wait(t, "web Running, after NotifyPods", runningReady(pod.UID))
}
