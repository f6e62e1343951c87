package csi

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fault arms bindcsi's fault injection for a node method: "fail" (the
// next call fails with Unavailable) or "hang" (calls wait until
// clearFault).
func (tr *tier) fault(method, what string) {
	tr.t.Helper()
	dir := filepath.Join(tr.data, "faults")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, method), []byte(what), 0o644); err != nil {
		tr.t.Fatal(err)
	}
	tr.t.Cleanup(func() { tr.clearFault(method) })
}

func (tr *tier) clearFault(method string) {
	os.Remove(filepath.Join(tr.data, "faults", method))
	os.Remove(filepath.Join(tr.data, "faults", method+".hanging"))
}

// claimPod makes claim (the tier's StorageClass) and a pod that writes to
// it, and returns the pod's name.
func (tr *tier) claimPod(ns, name, claim string) {
	tr.t.Helper()
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr(tr.class),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("8Mi")}}}}
	if _, err := tr.cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx(tr.t), c, metav1.CreateOptions{}); err != nil {
		tr.t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr(int64(5)),
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		Containers: []corev1.Container{tr.container("echo "+name+" > /data/hello", "/data/hello", corev1.VolumeMount{Name: "data", MountPath: "/data"})}}}
	if _, err := tr.cs.CoreV1().Pods(ns).Create(ctx(tr.t), pod, metav1.CreateOptions{}); err != nil {
		tr.t.Fatal(err)
	}
}

// checkMountedOnce fails unless the node's root holds exactly the
// volume's staging and publish mounts, each once (among the CSI mounts:
// the pod's token volume is a tmpfs of its own).
func (tr *tier) checkMountedOnce(target string) {
	tr.t.Helper()
	all, err := mountsUnder(tr.root)
	if err != nil {
		tr.t.Fatal(err)
	}
	var ms []string
	for _, m := range all {
		if strings.HasPrefix(m, filepath.Join(tr.root, "plugins")+"/") || strings.Contains(m, "/volumes/kubernetes.io~csi/") {
			ms = append(ms, m)
		}
	}
	sort.Strings(ms)
	staged := 0
	for _, m := range ms {
		if strings.HasPrefix(m, filepath.Join(tr.root, "plugins")+"/") {
			staged++
		}
	}
	if len(ms) != 2 || staged != 1 || !slices.Contains(ms, target) {
		tr.t.Errorf("mounts under the node's root %q, want the staging path and %s once each", ms, target)
	}
}

// nodeEvents are the pod's events from the node (not the scheduler's or
// the controllers'), as "<type> <reason>[: <message>]" with the messages
// of warnings normalised, sorted and without repeats: what kubelet and
// podstart must both say.
func (tr *tier) nodeEvents(ns, name string) []string {
	tr.t.Helper()
	evs, err := tr.cs.CoreV1().Events(ns).List(ctx(tr.t), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		tr.t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range evs.Items {
		if e.Source.Host != tr.node && e.ReportingInstance != tr.node {
			continue
		}
		s := e.Type + " " + e.Reason
		if e.Type == corev1.EventTypeWarning {
			s += ": " + tr.names.normalise(e.Message)
		}
		seen[s] = true
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// podStatusShape is the pod's status as compared between nodes: its
// phase, its conditions' types and statuses, and its containers' ready,
// started, restart count and state kinds (times, IDs and IPs aside).
func (tr *tier) podStatusShape(ns, name string) []string {
	tr.t.Helper()
	p, err := tr.cs.CoreV1().Pods(ns).Get(ctx(tr.t), name, metav1.GetOptions{})
	if err != nil {
		tr.t.Fatal(err)
	}
	out := []string{"phase " + string(p.Status.Phase), "qosClass " + string(p.Status.QOSClass)}
	for _, c := range p.Status.Conditions {
		out = append(out, "condition "+string(c.Type)+"="+string(c.Status)+" "+c.Reason)
	}
	for _, c := range p.Status.ContainerStatuses {
		state := "waiting"
		switch {
		case c.State.Running != nil:
			state = "running"
		case c.State.Terminated != nil:
			state = "terminated"
		}
		out = append(out, fmt.Sprintf("container %s ready=%v started=%v restarts=%d %s", c.Name, c.Ready, c.Started != nil && *c.Started, c.RestartCount, state))
	}
	sort.Strings(out)
	return out
}

// TestFaultStageFailsThenSucceeds: the driver's first NodeStageVolume
// fails: kubelet's FailedMount event, the stage retried after the
// back-off, then the pod runs with the volume mounted once; the calls and
// the node's events are compared with kubelet's.
func TestFaultStageFailsThenSucceeds(t *testing.T) {
	tr := setup(t)
	ns := tr.namespace("csi-fault-stage")
	off := tr.callsOffset()
	tr.fault("NodeStageVolume", "fail")
	tr.claimPod(ns, "db", "data")
	p := tr.waitPodReady(ns, "db")
	pv, _ := tr.pvOf(ns, "data")
	tr.checkMountedOnce(tr.csiMountOf(p, pv))
	events := tr.nodeEvents(ns, "db")
	podStatus := tr.podStatusShape(ns, "db")
	want := "Warning FailedMount: MountVolume.MountDevice failed for volume " + strconv.Quote(tr.names.normalise(pv)) + " : rpc error: code = Unavailable desc = injected fault"
	if !slices.Contains(events, want) {
		t.Errorf("the node's events %q lack %q", events, want)
	}
	if err := tr.cs.CoreV1().Pods(ns).Delete(ctx(t), "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tr.waitPodGone(ns, "db")
	tr.waitNothingMounted()
	r := tr.nodeReport(off)
	for vol, calls := range r.ByVolume {
		var methods []string
		for _, c := range calls {
			m := c.Method
			if c.Error != "" {
				m += " (failed)"
			}
			methods = append(methods, m)
		}
		if got := strings.Join(methods, ", "); got != "NodeStageVolume (failed), NodeStageVolume, NodePublishVolume, NodeUnpublishVolume, NodeUnstageVolume" {
			t.Errorf("volume %s: calls %s", vol, got)
		}
	}
	t.Logf("the node's events: %q", events)
	t.Logf("the pod's status: %q", podStatus)
	r.Objects = map[string]any{"events": events, "podStatus": podStatus}
	tr.writeReport("fault-stage", r, false)
}

// nodeProcess is the node's process as run.sh started it.
type nodeProcess struct {
	dir  string
	pid  int
	args []string
	env  []string
}

func (tr *tier) nodeProcess() nodeProcess {
	tr.t.Helper()
	dir := os.Getenv("PODSTART_CSI_DIR")
	if dir == "" {
		tr.t.Fatal("PODSTART_CSI_DIR is unset (run.sh writes it)")
	}
	b, err := os.ReadFile(filepath.Join(dir, "node.pid"))
	if err != nil {
		tr.t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		tr.t.Fatal(err)
	}
	split := func(f string) []string {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), f))
		if err != nil {
			tr.t.Fatal(err)
		}
		return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	}
	return nodeProcess{dir: dir, pid: pid, args: split("cmdline"), env: split("environ")}
}

// kill kills the node's process group with SIGKILL and waits until the
// process is gone.
func (tr *tier) kill(n nodeProcess) {
	tr.t.Helper()
	if err := syscall.Kill(-n.pid, syscall.SIGKILL); err != nil {
		tr.t.Fatal(err)
	}
	tr.eventually(time.Minute, "the node's process gone", func() (bool, string) {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(n.pid), "stat"))
		return err != nil || strings.Contains(string(b), ") Z "), "still running"
	})
}

// restart starts the node's process again as run.sh did (its own
// session, its log appended, its pid file rewritten, so run.sh stops it).
func (tr *tier) restart(n nodeProcess) {
	tr.t.Helper()
	log, err := os.OpenFile(filepath.Join(n.dir, "node.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		tr.t.Fatal(err)
	}
	defer log.Close()
	fmt.Fprintf(log, "\n--- restarted by %s\n", tr.t.Name())
	cmd := exec.Command(n.args[0], n.args[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = n.env, log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		tr.t.Fatal(err)
	}
	go cmd.Wait() //nolint:errcheck // reaped when it ends; run.sh stops it
	if err := os.WriteFile(filepath.Join(n.dir, "node.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		tr.t.Fatal(err)
	}
}

// TestFaultNodeKilledBetweenStageAndPublish: the node is killed while the
// driver holds its NodePublishVolume (the volume staged, maybe
// published) and started again: it takes back what is on disk, publishes
// once more at the same target, and the pod runs with the staging and
// the publish mounted once each; after the pod, nothing is left mounted.
func TestFaultNodeKilledBetweenStageAndPublish(t *testing.T) {
	tr := setup(t)
	ns := tr.namespace("csi-fault-kill")
	off := tr.callsOffset()
	tr.fault("NodePublishVolume", "hang")
	tr.claimPod(ns, "db", "data")
	tr.eventually(3*time.Minute, "the node's NodePublishVolume held by the driver", func() (bool, string) {
		_, err := os.Stat(filepath.Join(tr.data, "faults", "NodePublishVolume.hanging"))
		return err == nil, fmt.Sprint(err)
	})
	n := tr.nodeProcess()
	tr.kill(n)
	tr.clearFault("NodePublishVolume") // the held call ends, its caller gone
	start := time.Now()
	tr.restart(n)
	p := tr.waitPodReady(ns, "db")
	t.Logf("the pod Ready %v after the node's restart", time.Since(start).Round(time.Second))
	pv, _ := tr.pvOf(ns, "data")
	tr.checkMountedOnce(tr.csiMountOf(p, pv))
	events, podStatus := tr.nodeEvents(ns, "db"), tr.podStatusShape(ns, "db")
	t.Logf("the node's events: %q; the pod's status: %q", events, podStatus)
	if err := tr.cs.CoreV1().Pods(ns).Delete(ctx(t), "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tr.waitPodGone(ns, "db")
	tr.waitNothingMounted()
	tr.waitNoAttachments()
	r := tr.nodeReport(off)
	t.Logf("the node's calls, normalised:\n%s", sequence(r.Calls))
	r.Objects = map[string]any{"events": events, "podStatus": podStatus}
	tr.writeReport("fault-kill", r, false)
}

// TestFaultDriverSocketGoneMidPublish: the driver's node socket vanishes
// while it holds the node's NodePublishVolume (every connection closed,
// the socket file removed), and comes back: the node retries, the pod
// runs with the staging and the publish mounted once each, and after the
// pod nothing is left mounted or attached; the calls, events and status
// are compared with kubelet's.
func TestFaultDriverSocketGoneMidPublish(t *testing.T) {
	tr := setup(t)
	ns := tr.namespace("csi-fault-socket")
	off := tr.callsOffset()
	sock := filepath.Join(tr.root, "plugins", tr.driver, "csi.sock")
	tr.fault("NodePublishVolume", "vanish")
	tr.claimPod(ns, "db", "data")
	tr.eventually(3*time.Minute, "the driver's node socket gone under NodePublishVolume", func() (bool, string) {
		_, vanished := os.Stat(filepath.Join(tr.data, "faults", "NodePublishVolume.vanished"))
		_, sockErr := os.Stat(sock)
		return vanished == nil && os.IsNotExist(sockErr), fmt.Sprintf("vanished: %v, socket: %v", vanished, sockErr)
	})
	start := time.Now()
	tr.clearFault("NodePublishVolume")
	os.Remove(filepath.Join(tr.data, "faults", "NodePublishVolume.vanished"))
	p := tr.waitPodReady(ns, "db")
	t.Logf("the pod Ready %v after the socket came back", time.Since(start).Round(time.Second))
	pv, _ := tr.pvOf(ns, "data")
	tr.checkMountedOnce(tr.csiMountOf(p, pv))
	events, podStatus := tr.nodeEvents(ns, "db"), tr.podStatusShape(ns, "db")
	t.Logf("the node's events: %q; the pod's status: %q", events, podStatus)
	if err := tr.cs.CoreV1().Pods(ns).Delete(ctx(t), "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tr.waitPodGone(ns, "db")
	tr.waitNothingMounted()
	tr.waitNoAttachments()
	r := tr.nodeReport(off)
	for vol, calls := range r.ByVolume {
		checkLifecycle(t, vol, calls, true)
	}
	t.Logf("the node's calls, normalised:\n%s", sequence(r.Calls))
	// The failures' causes depend on when each retry met the driver
	// (the call cut, the socket missing): compared without them.
	var shapes []string
	for _, e := range events {
		shape, _, _ := strings.Cut(e, " : ")
		if !slices.Contains(shapes, shape) {
			shapes = append(shapes, shape)
		}
	}
	r.Objects = map[string]any{"events": shapes, "podStatus": podStatus}
	tr.writeReport("fault-socket", r, false)
}
