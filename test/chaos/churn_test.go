//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/test/cluster"
)

// Pod kinds of the churn.
const (
	kindSleep   = "sleep"   // one long-running container
	kindProbe   = "probe"   // long-running, with an exec readiness probe
	kindVolumes = "volumes" // long-running, a Secret volume and emptyDirs (one in memory)
	kindCrash   = "crash"   // exits 1 every second: CrashLoopBackOff
	kindResize  = "resize"  // long-running, Burstable, resized in place during the churn
)

var kinds = []string{kindSleep, kindProbe, kindVolumes, kindCrash, kindResize}

type podInfo struct {
	name, kind string
	uid        types.UID
	deleted    bool
	// res is what the resize kind's container must have: the spec's
	// resources after the last resize.
	res resources
}

// resources are a resize pod's container's requests and limits.
type resources struct {
	cpuReq, cpuLim, memReq, memLim string
}

func (r resources) requirements() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(r.cpuReq), corev1.ResourceMemory: resource.MustParse(r.memReq)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(r.cpuLim), corev1.ResourceMemory: resource.MustParse(r.memLim)},
	}
}

var initialResources = resources{cpuReq: "50m", cpuLim: "100m", memReq: "32Mi", memLim: "64Mi"}

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
	kind    string // create, label, resize, delete
	pod     int    // create: the pod's index
	podKind string // create: the pod's kind ("": drawn from the seed)
	// running: delete only a pod of a kind that keeps its container
	// running (so that the agent has a container to kill).
	running bool
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

	// cgroupRoot is the agent's -cgroup-root.
	cgroupRoot string
	// The disk-full fault: the file filling the root's file system ("" when
	// not full), until when, and where the agent's log stood at the fill.
	fill      string
	fullUntil time.Time
	fullStart int64

	leftovers, unexpectedRestarts int
	hooked, hookMissed            int // hooked kills that struck at their point, and that did not
	imagesRemoved, enospc         int
	resizes, resizesChecked       int
	podCgroupsSeen, stateFiles    int
	corrupt, strayTemp            int
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
	case kindResize:
		c.Resources = initialResources.requirements()
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
		if i > 0 && r.rng.Float64() < 0.3 {
			ops = append(ops, op{kind: "resize"})
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
	hooked := map[int]string{} // at most one hooked fault per operation
	for f, tries := 0, 0; f < faults && tries < 100*faults; tries++ {
		i := r.rng.Intn(len(ops))
		k := r.faultFor(ops[i])
		if k == "" || (hookStage[k] != "" && hooked[i] != "") {
			continue
		}
		if hookStage[k] != "" {
			hooked[i] = k
		} else {
			at[i] = append(at[i], k)
		}
		f++
	}
	for i, o := range ops {
		armed := hooked[i] != "" && r.arm(hooked[i], &o)
		r.do(o)
		if armed {
			r.awaitHook(hooked[i])
		}
		for _, f := range at[i] {
			r.inject(f)
		}
		time.Sleep(time.Duration(r.rng.Intn(500)) * time.Millisecond) // pacing of the churn
		r.freeRoot(false)
		r.supervise()
	}
	r.freeRoot(true)
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
		if o.podKind != "" {
			kind = o.podKind
		}
		p, err := pods.Create(ctx, r.pod(o.pod, kind), metav1.CreateOptions{})
		if err != nil {
			r.t.Fatal(err)
		}
		info := &podInfo{name: p.Name, kind: kind, uid: p.UID, res: initialResources}
		r.order = append(r.order, info)
		r.created[p.UID] = info
	case "label":
		l := r.live()
		p := l[r.rng.Intn(len(l))]
		patch := fmt.Sprintf(`{"metadata":{"labels":{"churn":%q}}}`, strconv.Itoa(r.rng.Intn(1000)))
		if _, err := pods.Patch(ctx, p.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			r.t.Fatal(err)
		}
	case "resize":
		var l []*podInfo
		for _, p := range r.live() {
			if p.kind == kindResize {
				l = append(l, p)
			}
		}
		if len(l) == 0 {
			return
		}
		p := l[r.rng.Intn(len(l))]
		want := resources{
			cpuReq: []string{"50m", "100m"}[r.rng.Intn(2)],
			cpuLim: []string{"100m", "150m", "200m", "250m"}[r.rng.Intn(4)],
			memReq: "32Mi",
			memLim: []string{"64Mi", "96Mi", "128Mi"}[r.rng.Intn(3)],
		}
		patch := fmt.Sprintf(`{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":%q,"memory":%q},"limits":{"cpu":%q,"memory":%q}}}]}}`,
			want.cpuReq, want.memReq, want.cpuLim, want.memLim)
		if _, err := pods.Patch(ctx, p.name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize"); err != nil {
			r.t.Fatalf("resize %s to %+v: %v", p.name, want, err)
		}
		r.t.Logf("resized %s: %+v", p.name, want)
		p.res = want
		r.resizes++
	case "delete":
		l := r.live()
		if o.running {
			// A pod whose container runs now, per the API server: a pod
			// with nothing to kill never reaches the kill point.
			all, err := r.apiPods()
			if err != nil {
				r.t.Fatal(err)
			}
			var keep []*podInfo
			for _, p := range l {
				cur := all[p.uid]
				if p.kind != kindCrash && cur != nil && len(cur.Status.ContainerStatuses) == 1 && cur.Status.ContainerStatuses[0].State.Running != nil {
					keep = append(keep, p)
				}
			}
			if len(keep) > 0 {
				l = keep
			}
		}
		p := l[r.rng.Intn(len(l))]
		grace := int64(2)
		if err := pods.Delete(ctx, p.name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			r.t.Fatal(err)
		}
		p.deleted = true
	}
}
