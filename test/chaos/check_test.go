//go:build chaos

package chaos

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// apiPods is every pod the API server holds, by UID.
func (r *run) apiPods() (map[types.UID]*corev1.Pod, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	l, err := r.admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	m := map[types.UID]*corev1.Pod{}
	for i := range l.Items {
		m[l.Items[i].UID] = &l.Items[i]
	}
	return m, nil
}

// converged is whether p has reached what its kind promises.
func converged(info *podInfo, p *corev1.Pod) (bool, string) {
	kind := info.kind
	if p.DeletionTimestamp != nil {
		return false, "still terminating"
	}
	if len(p.Status.ContainerStatuses) != 1 {
		return false, fmt.Sprintf("phase %s, %d container statuses", p.Status.Phase, len(p.Status.ContainerStatuses))
	}
	cs := p.Status.ContainerStatuses[0]
	if kind == kindCrash {
		if p.Status.Phase == corev1.PodRunning && cs.RestartCount >= 1 {
			return true, ""
		}
		return false, fmt.Sprintf("phase %s, restart count %d", p.Status.Phase, cs.RestartCount)
	}
	if p.Status.Phase != corev1.PodRunning || cs.State.Running == nil || !cs.Ready {
		return false, fmt.Sprintf("phase %s, state %+v, ready %v", p.Status.Phase, cs.State, cs.Ready)
	}
	if kind == kindResize {
		return resized(info, p)
	}
	return true, ""
}

// converge waits until the deleted pods are gone and every other one has
// reached what its kind promises.
func (r *run) converge() {
	eventually(r.t, 150*time.Second, "every pod converges", func() (bool, string) {
		pods, err := r.apiPods()
		if err != nil {
			return false, err.Error()
		}
		var waiting []string
		for _, info := range r.order {
			p := pods[info.uid]
			switch {
			case info.deleted && p != nil:
				waiting = append(waiting, info.name+": deleted, still held by the API server")
			case !info.deleted && p == nil:
				waiting = append(waiting, info.name+": gone from the API server")
			case p != nil:
				if ok, why := converged(info, p); !ok {
					waiting = append(waiting, info.name+": "+why)
				}
			}
		}
		return len(waiting) == 0, strings.Join(waiting, "; ")
	})
}

// checkRestarts compares every container that ran when a fault struck
// with what the API server shows now: same container, same restart count.
func (r *run) checkRestarts() {
	pods, err := r.apiPods()
	if err != nil {
		r.t.Fatal(err)
	}
	keys := make([]containerKey, 0, len(r.seen))
	for k := range r.seen {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].uid < keys[j].uid })
	for _, k := range keys {
		s := r.seen[k]
		p := pods[k.uid]
		if p == nil {
			continue // deleted since
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name != k.name {
				continue
			}
			if cs.ContainerID != "containerd://"+s.id || int(cs.RestartCount) != s.restartCount || cs.State.Running == nil {
				r.unexpectedRestarts++
				r.t.Errorf("pod %s container %s ran as %s (restart count %d) at %s; now %s, restart count %d, state %+v",
					p.Name, k.name, s.id, s.restartCount, s.fault, cs.ContainerID, cs.RestartCount, cs.State)
			}
		}
	}
}

// checkLeftovers waits (a minute at most: the agent's housekeeping is
// periodic) until nothing of a pod the API server no longer holds is left
// on the runtime or on disk, and counts what stays.
func (r *run) checkLeftovers(when string) {
	var left []string
	deadline := time.Now().Add(60 * time.Second)
	for {
		var err error
		left, err = r.leftoverList()
		if err == nil && len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			if err != nil {
				r.t.Fatalf("leftovers %s: %v", when, err)
			}
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	r.leftovers += len(left)
	r.t.Errorf("leftovers %s, a minute later:\n  %s", when, strings.Join(left, "\n  "))
}

func (r *run) leftoverList() ([]string, error) {
	pods, err := r.apiPods()
	if err != nil {
		return nil, err
	}
	gone := map[types.UID]*podInfo{}
	for uid, info := range r.created {
		if pods[uid] == nil {
			gone[uid] = info
		}
	}
	var left []string
	ctx, cancel := r.ctx()
	defer cancel()
	sandboxes, err := r.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, err
	}
	for _, s := range sandboxes {
		if info := gone[types.UID(s.Labels["io.kubernetes.pod.uid"])]; info != nil {
			left = append(left, fmt.Sprintf("sandbox %s of %s (%s)", s.Id, info.name, s.State))
		}
	}
	containers, err := r.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{})
	if err != nil {
		return nil, err
	}
	for _, c := range containers {
		if info := gone[types.UID(c.Labels["io.kubernetes.pod.uid"])]; info != nil {
			left = append(left, fmt.Sprintf("container %s of %s (%s)", c.Id, info.name, c.State))
		}
	}
	for uid, info := range gone {
		for _, d := range []string{
			filepath.Join(r.root, "pods", string(uid)),
			filepath.Join(r.root, "logs", fmt.Sprintf("%s_%s_%s", ns, info.name, uid)),
		} {
			if _, err := os.Lstat(d); err == nil {
				left = append(left, "directory "+d)
			}
		}
	}
	cgs, err := podCgroups(r.cgroupRoot)
	if err != nil {
		return nil, err
	}
	live := 0
	for uid, dirs := range cgs {
		if gone[uid] != nil {
			for _, d := range dirs {
				left = append(left, fmt.Sprintf("pod cgroup %s of %s", d, gone[uid].name))
			}
		} else if pods[uid] != nil {
			live++
		}
	}
	r.podCgroupsSeen = max(r.podCgroupsSeen, live)
	ms, err := mountsBeneath(r.root)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		rel, _ := filepath.Rel(filepath.Join(r.root, "pods"), m)
		uid := types.UID(strings.Split(rel, string(filepath.Separator))[0])
		if pods[uid] == nil {
			left = append(left, "mount "+m)
		}
	}
	sort.Strings(left)
	return left, nil
}

// mountsBeneath lists the mount points under dir in /proc/self/mountinfo,
// in the order mounted.
func mountsBeneath(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ms []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		m := unescapeMount(fields[4])
		if strings.HasPrefix(m, dir+"/") {
			ms = append(ms, m)
		}
	}
	return ms, s.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// statusView is the part of a pod's status a fresh agent must report
// alike: no timestamps.
type statusView struct {
	Phase      corev1.PodPhase
	PodIP      string
	Conditions map[corev1.PodConditionType]corev1.ConditionStatus
	Containers []string
}

// viewOf is p's status as compared; image gives the image ID a
// container's imageID names.
func viewOf(p *corev1.Pod, image func(string) string) statusView {
	v := statusView{Phase: p.Status.Phase, PodIP: p.Status.PodIP, Conditions: map[corev1.PodConditionType]corev1.ConditionStatus{}}
	for _, c := range p.Status.Conditions {
		v.Conditions[c.Type] = c.Status
	}
	for _, cs := range p.Status.ContainerStatuses {
		state := "waiting"
		if cs.State.Running != nil {
			state = "running since " + cs.State.Running.StartedAt.UTC().String()
		} else if cs.State.Terminated != nil {
			state = "terminated"
		}
		started := cs.Started != nil && *cs.Started
		res := ""
		if cs.Resources != nil {
			res = fmt.Sprintf(" requests=%s limits=%s", fmtList(cs.Resources.Requests), fmtList(cs.Resources.Limits))
		}
		v.Containers = append(v.Containers, fmt.Sprintf("%s %s ready=%v started=%v restarts=%d %s image=%s%s",
			cs.Name, cs.ContainerID, cs.Ready, started, cs.RestartCount, state, image(cs.ImageID), res))
	}
	return v
}

// imageID is the ID of the image ref names, as the runtime resolves it
// now, or ref itself when it resolves nothing. A container's imageID is
// the runtime's ImageRef, which names the image by its repo digest while
// the image is present and by its bare ID while it is not (the pull
// faults remove it): a status read on either side of a re-pull differs in
// the name alone, as kubelet's would (it re-reads a running container's
// status only when the runtime shows it changed).
func (r *run) imageID(ref string) string {
	if ref == "" {
		return ""
	}
	ctx, cancel := r.ctx()
	defer cancel()
	st, err := r.rt.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: ref}, false)
	if err != nil || st.GetImage().GetId() == "" {
		return ref
	}
	return st.GetImage().GetId()
}

// compareWithFreshAgent kills the agent once more, starts it, and checks
// that the API server keeps showing, for every pod that should not
// restart, the status it showed before, for 15 seconds after the node is
// Ready again: a fresh agent reports what the old one did. Kubelet keeps a
// ready container ready across its restart only when the container was
// running 10 seconds before kubelet started (kubeletRestartGracePeriod);
// the restart waits until every container is that old.
func (r *run) compareWithFreshAgent() {
	pods, err := r.apiPods()
	if err != nil {
		r.t.Fatal(err)
	}
	want := map[types.UID]statusView{}
	var newest time.Time
	for uid, p := range pods {
		if info := r.created[uid]; info != nil && info.kind != kindCrash {
			want[uid] = viewOf(p, r.imageID)
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Running != nil && cs.State.Running.StartedAt.After(newest) {
					newest = cs.State.Running.StartedAt.Time
				}
			}
		}
	}
	// StartedAt has second precision: one more second.
	time.Sleep(time.Until(newest.Add(12 * time.Second)))
	r.recordRunning("fresh agent")
	r.agent.kill(syscall.SIGKILL)
	r.agent.start()
	r.waitNodeReady()
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		pods, err := r.apiPods()
		if err != nil {
			r.t.Fatal(err)
		}
		var diff []string
		for uid, w := range want {
			p := pods[uid]
			if p == nil {
				diff = append(diff, r.created[uid].name+": gone")
				continue
			}
			if got := viewOf(p, r.imageID); !reflect.DeepEqual(got, w) {
				diff = append(diff, fmt.Sprintf("%s:\n    got  %+v\n    want %+v", p.Name, got, w))
			}
		}
		if len(diff) > 0 {
			r.t.Errorf("a fresh agent's statuses differ from the ones before:\n  %s", strings.Join(diff, "\n  "))
			return
		}
	}
}

// deleteAll deletes every pod and waits until the API server holds none.
func (r *run) deleteAll() { r.deleteAllWithin(90 * time.Second) }

// deleteAllWithin is deleteAll waiting at most timeout.
func (r *run) deleteAllWithin(timeout time.Duration) {
	grace := int64(2)
	for _, info := range r.live() {
		ctx, cancel := r.ctx()
		err := r.admin.CoreV1().Pods(ns).Delete(ctx, info.name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		cancel()
		if err != nil {
			r.t.Fatal(err)
		}
		info.deleted = true
	}
	eventually(r.t, timeout, "every pod deleted", func() (bool, string) {
		pods, err := r.apiPods()
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, p := range pods {
			names = append(names, p.Name)
		}
		return len(pods) == 0, strings.Join(names, ", ")
	})
}

// stopOneContainer stops, behind the agent's back, one container recorded
// as running at a fault, of a pod that still exists: the agent starts it
// again, which the restart check must count.
func (r *run) stopOneContainer() {
	r.recordRunning("sabotage")
	pods, err := r.apiPods()
	if err != nil {
		r.t.Fatal(err)
	}
	for k, s := range r.seen {
		if p := pods[k.uid]; p != nil {
			ctx, cancel := r.ctx()
			defer cancel()
			if err := r.rt.StopContainer(ctx, s.id, 0); err != nil {
				r.t.Fatal(err)
			}
			r.t.Logf("sabotage: stopped container %s of %s", s.id, p.Name)
			return
		}
	}
	r.t.Log("sabotage: no recorded container of a live pod")
}

// removeSandboxes stops and removes, through the CRI, every sandbox of a
// pod this run created (none is left after a run that passed).
func (r *run) removeSandboxes() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sandboxes, err := r.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		r.t.Errorf("cleanup: %v", err)
		return
	}
	for _, s := range sandboxes {
		if r.created[types.UID(s.Labels["io.kubernetes.pod.uid"])] == nil {
			continue
		}
		if err := r.rt.StopPodSandbox(ctx, s.Id); err != nil {
			r.t.Errorf("cleanup: stop sandbox %s: %v", s.Id, err)
		}
		if err := r.rt.RemovePodSandbox(ctx, s.Id); err != nil {
			r.t.Errorf("cleanup: remove sandbox %s: %v", s.Id, err)
		}
	}
}
