//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/test/cluster"
	"github.com/podstart/podstart/test/e2elock"
)

// Pod kinds of the churn.
const (
	kindSleep   = "sleep"   // one long-running container
	kindProbe   = "probe"   // long-running, with an exec readiness probe
	kindVolumes = "volumes" // long-running, a Secret volume and emptyDirs (one in memory)
	kindCrash   = "crash"   // exits 1 every second: CrashLoopBackOff
)

var kinds = []string{kindSleep, kindProbe, kindVolumes, kindCrash}

type podInfo struct {
	name, kind string
	uid        types.UID
	deleted    bool
}

type containerKey struct {
	uid  types.UID
	name string
}

// seenContainer is a container the runtime ran when a fault struck.
type seenContainer struct {
	id           string
	restartCount int
	fault        string
}

type op struct {
	kind string // create, label, delete
	pod  int    // create: the pod's index
}

type run struct {
	t       *testing.T
	rng     *rand.Rand
	admin   kubernetes.Interface
	rt      *runtime.Client
	agent   *agent
	env     env
	cluster *cluster.Cluster
	root    string

	order   []*podInfo
	created map[types.UID]*podInfo
	seen    map[containerKey]seenContainer
	faults  []string
	frozen  int // kube-apiserver's pid while stopped

	leftovers, unexpectedRestarts int
}

func (r *run) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

func (r *run) waitNodeReady() {
	eventually(r.t, 60*time.Second, "node Ready", func() (bool, string) {
		ctx, cancel := r.ctx()
		defer cancel()
		n, err := r.admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("conditions %v; agent log:\n%s", n.Status.Conditions, r.agent.tail(20))
	})
}

func (r *run) pod(i int, kind string) *corev1.Pod {
	grace := int64(2)
	c := corev1.Container{Name: "app", Image: r.env.image, ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d-%s", i, kind), Namespace: ns, Labels: map[string]string{"kind": kind}},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &grace}}
	switch kind {
	case kindProbe:
		c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 2}
	case kindVolumes:
		c.Command = []string{"sh", "-c", "test -f /data/greeting || exit 3; trap 'exit 0' TERM; sleep 3600 & wait"}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "scratch", MountPath: "/scratch"}, {Name: "mem", MountPath: "/mem"}}
		p.Spec.Volumes = []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "data"}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		}
	case kindCrash:
		c.Command = []string{"sh", "-c", "sleep 1; exit 1"}
	}
	p.Spec.Containers = []corev1.Container{c}
	return p
}

// plan is the churn's operations, drawn from the seed: every pod created,
// labels updated and about a third of the pods deleted along the way.
func (r *run) plan(pods int) []op {
	var ops []op
	deletes := 0
	for i := 0; i < pods; i++ {
		ops = append(ops, op{kind: "create", pod: i})
		if i > 0 && r.rng.Float64() < 0.4 {
			ops = append(ops, op{kind: "label"})
		}
		if i > 1 && deletes < pods/3 && r.rng.Float64() < 0.35 {
			ops = append(ops, op{kind: "delete"})
			deletes++
		}
	}
	return ops
}

// churn runs the plan with faults at points the seed chooses.
func (r *run) churn(pods, faults int) {
	ops := r.plan(pods)
	at := map[int][]string{}
	for f := 0; f < faults; f++ {
		i := r.rng.Intn(len(ops))
		at[i] = append(at[i], r.faultFor(ops[i]))
	}
	for i, o := range ops {
		r.do(o)
		for _, f := range at[i] {
			r.inject(f)
		}
		time.Sleep(time.Duration(r.rng.Intn(500)) * time.Millisecond) // pacing of the churn
		r.supervise()
	}
}

func (r *run) faultFor(o op) string {
	x := r.rng.Float64()
	switch {
	case x < 0.15:
		return "containerd-restart"
	case x < 0.3:
		return "apiserver-stop"
	case o.kind == "create" && x < 0.65:
		return "agent-kill-after-create"
	case o.kind == "create":
		return "agent-kill-while-starting"
	case o.kind == "delete":
		return "agent-kill-during-delete"
	default:
		return "agent-kill"
	}
}

func (r *run) live() []*podInfo {
	var l []*podInfo
	for _, p := range r.order {
		if !p.deleted {
			l = append(l, p)
		}
	}
	return l
}

func (r *run) do(o op) {
	ctx, cancel := r.ctx()
	defer cancel()
	pods := r.admin.CoreV1().Pods(ns)
	switch o.kind {
	case "create":
		kind := kinds[r.rng.Intn(len(kinds))]
		p, err := pods.Create(ctx, r.pod(o.pod, kind), metav1.CreateOptions{})
		if err != nil {
			r.t.Fatal(err)
		}
		info := &podInfo{name: p.Name, kind: kind, uid: p.UID}
		r.order = append(r.order, info)
		r.created[p.UID] = info
	case "label":
		l := r.live()
		p := l[r.rng.Intn(len(l))]
		patch := fmt.Sprintf(`{"metadata":{"labels":{"churn":%q}}}`, strconv.Itoa(r.rng.Intn(1000)))
		if _, err := pods.Patch(ctx, p.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			r.t.Fatal(err)
		}
	case "delete":
		l := r.live()
		p := l[r.rng.Intn(len(l))]
		grace := int64(2)
		if err := pods.Delete(ctx, p.name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			r.t.Fatal(err)
		}
		p.deleted = true
	}
}

// inject records which containers run, then strikes.
func (r *run) inject(f string) {
	r.faults = append(r.faults, f)
	r.t.Logf("fault %d: %s", len(r.faults), f)
	switch f {
	case "agent-kill-while-starting":
		time.Sleep(time.Duration(200+r.rng.Intn(2800)) * time.Millisecond) // a random point while the new pod starts
		fallthrough
	case "agent-kill", "agent-kill-after-create", "agent-kill-during-delete":
		r.recordRunning(f)
		r.agent.kill(syscall.SIGKILL)
		time.Sleep(time.Duration(r.rng.Intn(1000)) * time.Millisecond) // the agent's down time
		r.agent.start()
	case "containerd-restart":
		// Another test process (go test runs packages in parallel) may be
		// using this containerd: then the fault is not injected, rather
		// than waiting for it, perhaps for minutes.
		release, ok, err := e2elock.TryExclusive(r.env.dir)
		if err != nil {
			r.t.Fatal(err)
		}
		if !ok {
			r.faults[len(r.faults)-1] += " (skipped: containerd in use by another test process)"
			r.t.Logf("fault %d skipped: another test process uses containerd", len(r.faults))
			return
		}
		defer release()
		r.recordRunning(f)
		if err := envSh(r.env.dir, "kill-containerd"); err != nil {
			r.t.Fatal(err)
		}
		time.Sleep(time.Duration(r.rng.Intn(2000)) * time.Millisecond) // containerd's down time
		if err := envSh(r.env.dir, "start-containerd"); err != nil {
			r.t.Fatal(err)
		}
		// env.sh waits for containerd's API; its CRI plugin answers later.
		eventually(r.t, 60*time.Second, "containerd's CRI answers after its restart", func() (bool, string) {
			ctx, cancel := r.ctx()
			defer cancel()
			_, err := r.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{})
			return err == nil, fmt.Sprint(err)
		})
	case "apiserver-stop":
		r.recordRunning(f)
		pid, ok := r.cluster.PIDs()["kube-apiserver"]
		if !ok {
			r.t.Fatal("kube-apiserver is not running")
		}
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			r.t.Fatal(err)
		}
		r.frozen = pid
		time.Sleep(*freezeFlag)
		r.thaw()
	}
}

// supervise restarts the agent, as systemd restarts kubelet, when it ended
// by itself because the runtime did not answer at its start (kubelet too
// exits then: its runtime manager needs the runtime's version); any other
// exit fails the test.
func (r *run) supervise() {
	if !r.agent.exited() {
		return
	}
	last := r.agent.tail(1)
	if !strings.Contains(last, "nodeagent: runtime version:") && !strings.Contains(last, "nodeagent: runtime status:") {
		r.t.Fatalf("the agent exited by itself; its log:\n%s", r.agent.tail(40))
	}
	r.t.Logf("the agent exited at its start without the runtime (%s); restarted", last)
	r.agent.kill(syscall.SIGKILL) // reaps it
	r.agent.start()
}

// thaw continues a stopped kube-apiserver.
func (r *run) thaw() {
	if r.frozen != 0 {
		syscall.Kill(r.frozen, syscall.SIGCONT)
		r.frozen = 0
	}
}

// recordRunning remembers, for pods that should never restart, every
// container the runtime runs now, with its restart count: none of them
// may be replaced later.
func (r *run) recordRunning(fault string) {
	ctx, cancel := r.ctx()
	defer cancel()
	cs, err := r.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	if err != nil {
		r.t.Fatalf("list containers before %s: %v", fault, err)
	}
	for _, c := range cs {
		uid := types.UID(c.Labels["io.kubernetes.pod.uid"])
		p := r.created[uid]
		if p == nil || p.kind == kindCrash {
			continue
		}
		key := containerKey{uid, c.Labels["io.kubernetes.container.name"]}
		if _, ok := r.seen[key]; ok {
			continue
		}
		n, _ := strconv.Atoi(c.Annotations["io.kubernetes.container.restartCount"])
		r.seen[key] = seenContainer{id: c.Id, restartCount: n, fault: fmt.Sprintf("fault %d (%s)", len(r.faults), fault)}
	}
}
