//go:build chaos

package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/test/e2elock"
)

// Fault kinds.
const (
	faultKill            = "agent-kill"
	faultKillAfterCreate = "agent-kill-after-create"
	faultKillStarting    = "agent-kill-while-starting"
	faultKillDelete      = "agent-kill-during-delete"
	faultContainerd      = "containerd-restart"
	faultFreeze          = "apiserver-stop"
	faultAPIDown         = "apiserver-down"
	faultDiskFull        = "disk-full"
	// Kills hooked inside the agent (examples/nodeagent's
	// PODSTART_CHAOS_KILL_AT): the agent is restarted armed before the
	// operation and kills itself at the point.
	faultAtSandbox = "agent-kill-at-sandbox" // a sandbox made, its container not yet
	faultAtCreate  = "agent-kill-at-create"  // a container created, not yet started
	faultAtTmpfs   = "agent-kill-at-volume"  // a volume's tmpfs mounted, its payload not yet written
	faultAtPull    = "agent-kill-at-pull"    // a CRI pull in flight (the image removed first)
	faultAtKill    = "agent-kill-at-kill"    // a pod's containers and sandbox stopped, its cleanup not yet
)

// hookStage is the kill hook's stage of a hooked fault ("" for others).
var hookStage = map[string]string{
	faultAtSandbox: "step:sandbox",
	faultAtCreate:  "step:create",
	faultAtTmpfs:   "tmpfs",
	faultAtPull:    "pull",
	faultAtKill:    "step:kill-pod",
}

// faultCandidates is what may strike after (or, hooked, around) op o,
// each with its weight.
func faultCandidates(o op) map[string]int {
	c := map[string]int{faultContainerd: 10, faultFreeze: 8, faultAPIDown: 7, faultDiskFull: 8}
	switch o.kind {
	case "create":
		c[faultKillAfterCreate] = 15
		c[faultKillStarting] = 10
		c[faultAtSandbox] = 8
		c[faultAtCreate] = 6
		c[faultAtTmpfs] = 8
		c[faultAtPull] = 8
	case "delete":
		c[faultKillDelete] = 20
		c[faultAtKill] = 15
	default:
		c[faultKill] = 15
	}
	return c
}

// faultFor draws a fault for op o, among the kinds -chaos.only allows
// ("" if none fits o).
func (r *run) faultFor(o op) string {
	c := faultCandidates(o)
	total := 0
	var names []string
	for _, k := range sortedKeys(c) {
		if allowed(k) {
			names = append(names, k)
			total += c[k]
		}
	}
	if total == 0 {
		return ""
	}
	x := r.rng.Intn(total)
	for _, k := range names {
		if x < c[k] {
			return k
		}
		x -= c[k]
	}
	return ""
}

func allowed(kind string) bool {
	if *onlyFlag == "" {
		return true
	}
	for _, k := range strings.Split(*onlyFlag, ",") {
		if strings.TrimSpace(k) == kind {
			return true
		}
	}
	return false
}

// arm prepares a hooked fault before its operation: the agent restarts
// with the hook set; for a pull the image is removed first, so that the
// next container start pulls it; for a volume the pod made is of the
// volumes kind. It reports whether it armed the agent: the image is not
// removed while another test process uses the runtime (env.sh's lock, as
// for a containerd restart), and the fault is then skipped.
func (r *run) arm(f string, o *op) bool {
	r.faults = append(r.faults, f)
	r.t.Logf("fault %d: %s (armed: %s=%s:1)", len(r.faults), f, "PODSTART_CHAOS_KILL_AT", hookStage[f])
	r.recordRunning(f)
	switch f {
	case faultAtPull:
		release, ok, err := e2elock.TryExclusive(r.env.dir)
		if err != nil {
			r.t.Fatal(err)
		}
		if !ok {
			r.faults[len(r.faults)-1] += " (skipped: the runtime is in use by another test process)"
			r.t.Logf("fault %d skipped: another test process uses the runtime", len(r.faults))
			return false
		}
		defer release()
		ctx, cancel := r.ctx()
		err = r.rt.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: r.env.image})
		cancel()
		if err != nil {
			r.t.Fatalf("remove %s before %s: %v", r.env.image, f, err)
		}
		r.imagesRemoved++
	case faultAtTmpfs:
		o.podKind = kindVolumes
	case faultAtKill:
		o.running = true
	}
	r.agent.kill(syscall.SIGKILL)
	r.agent.nextEnv = []string{"PODSTART_CHAOS_KILL_AT=" + hookStage[f] + ":1"}
	r.agent.start()
	return true
}

// awaitHook waits (a minute at most) until the armed agent killed itself
// at its point, then starts it again without the hook.
func (r *run) awaitHook(f string) {
	deadline := time.Now().Add(time.Minute)
	for !r.agent.exited() && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if r.agent.exited() && strings.Contains(r.agent.tail(3), "reached: SIGKILL") {
		r.hooked++
	} else {
		r.hookMissed++
		r.faults[len(r.faults)-1] += " (point not reached in a minute)"
		r.t.Logf("%s: the agent did not reach its point in a minute; restarted without the hook", f)
	}
	r.agent.kill(syscall.SIGKILL) // reaps it, or kills it unarmed
	r.agent.start()
}

// inject records which containers run, then strikes.
func (r *run) inject(f string) {
	r.faults = append(r.faults, f)
	r.t.Logf("fault %d: %s", len(r.faults), f)
	switch f {
	case faultKillStarting:
		time.Sleep(time.Duration(200+r.rng.Intn(2800)) * time.Millisecond) // a random point while the new pod starts
		fallthrough
	case faultKill, faultKillAfterCreate, faultKillDelete:
		r.recordRunning(f)
		r.agent.kill(syscall.SIGKILL)
		time.Sleep(time.Duration(r.rng.Intn(1000)) * time.Millisecond) // the agent's down time
		r.agent.start()
	case faultContainerd:
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
	case faultFreeze:
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
	case faultAPIDown:
		// Stopped, not frozen: the agent's requests are refused for the
		// whole time, its watches end, its lease and statuses wait.
		r.recordRunning(f)
		if err := r.cluster.StopAPIServer(); err != nil {
			r.t.Fatal(err)
		}
		time.Sleep(*downFlag)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := r.cluster.StartAPIServer(ctx); err != nil {
			r.t.Fatal(err)
		}
	case faultDiskFull:
		r.recordRunning(f)
		r.fillRoot()
	}
}

// fillRoot fills the root directory's file system (a tmpfs of
// -chaos.root-size) with one file until it is full; freeRoot removes it
// at the first operation after -chaos.disk-full has passed, and before
// the convergence at the end.
func (r *run) fillRoot() {
	if r.fill != "" {
		r.faults[len(r.faults)-1] += " (already full)"
		return
	}
	name := filepath.Join(r.root, "chaos-fill")
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		r.t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	var n int64
	for {
		w, err := f.Write(buf)
		n += int64(w)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			f.Close()
			r.t.Fatal(err)
		}
	}
	f.Close()
	// And its inodes (the tmpfs has -chaos.root-inodes): a directory or an
	// empty file cannot be made either.
	dir := name + ".d"
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, syscall.ENOSPC) {
		r.t.Fatal(err)
	}
	files := 0
	for ; ; files++ {
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(files)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			r.t.Fatal(err)
		}
		f.Close()
	}
	r.fill, r.fullUntil = name, time.Now().Add(*diskFullFlag)
	r.fullStart = r.agentLogSize()
	r.t.Logf("root directory full: %d MiB written to %s, and its last %d inodes taken", n>>20, name, files)
}

// freeRoot frees the root directory's file system when its time is up
// (or at once with now), and counts the agent's "no space left" errors
// meanwhile.
func (r *run) freeRoot(now bool) {
	if r.fill == "" || (!now && time.Now().Before(r.fullUntil)) {
		return
	}
	if err := os.Remove(r.fill); err != nil {
		r.t.Fatal(err)
	}
	if err := os.RemoveAll(r.fill + ".d"); err != nil {
		r.t.Fatal(err)
	}
	r.fill = ""
	b, _ := os.ReadFile(r.agent.log)
	if int64(len(b)) > r.fullStart {
		n := strings.Count(string(b[r.fullStart:]), "no space left on device")
		r.enospc += n
		r.t.Logf("root directory freed; the agent reported %d 'no space left on device' errors while it was full", n)
	}
}

// enospcEvents counts the events whose message says "no space left on
// device": what the agent told the API server while the disk was full.
func (r *run) enospcEvents() int {
	ctx, cancel := r.ctx()
	defer cancel()
	l, err := r.admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		r.t.Errorf("list events: %v", err)
		return 0
	}
	n := 0
	for _, e := range l.Items {
		if strings.Contains(e.Message, "no space left on device") {
			n += max(int(e.Count), 1)
		}
	}
	return n
}

func (r *run) agentLogSize() int64 {
	fi, err := os.Stat(r.agent.log)
	if err != nil {
		return 0
	}
	return fi.Size()
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
