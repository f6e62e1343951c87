package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/test/criproxy"
	"github.com/podstart/podstart/test/e2elock"
)

// The start-latency breakdown of TestStartLatencyAgainstKubelet: where a
// pod's creation → Ready (as a watch sees it) goes, stage by stage, traced
// for the agent (Config.Trace, and its CRI calls through a gRPC
// interceptor), estimated for kubelet (its guarded proxy's record of CRI
// calls, its log's SyncLoop ADD and PLEG lines, the watch), next to the
// physical limit: the bare CRI sequence of the same pods against
// containerd plus one status patch. Figures are printed, never asserted.

// criCall is one CRI call of the agent's pod start, timed at the client.
type criCall struct {
	method     string // "RunPodSandbox", "CreateContainer", "StartContainer"
	start, end time.Time
	req, resp  proto.Message
}

// criRecorder records the agent's pod-start CRI calls (a gRPC unary
// interceptor on its runtime client).
type criRecorder struct {
	mu    sync.Mutex
	calls []criCall
}

func (r *criRecorder) dialOption() runtime.Option {
	return runtime.WithDialOptions(grpc.WithChainUnaryInterceptor(r.intercept))
}

func (r *criRecorder) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	end := time.Now()
	short := method[strings.LastIndex(method, "/")+1:]
	switch short {
	case "RunPodSandbox", "CreateContainer", "StartContainer", "PodSandboxStatus":
	default:
		return err
	}
	if err == nil {
		in, _ := req.(proto.Message)
		out, _ := reply.(proto.Message)
		r.mu.Lock()
		r.calls = append(r.calls, criCall{method: short, start: start, end: end, req: in, resp: out})
		r.mu.Unlock()
	}
	return err
}

func (r *criRecorder) snapshot() []criCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// proxyCalls turns a proxy's record into criCalls (no end: the proxy
// records when a call started).
func proxyCalls(p *criproxy.Proxy) []criCall {
	var out []criCall
	for _, c := range p.Calls() {
		short := c.Method[strings.LastIndex(c.Method, "/")+1:]
		switch short {
		case "RunPodSandbox", "CreateContainer", "StartContainer":
		default:
			continue
		}
		if c.Err != nil {
			continue
		}
		out = append(out, criCall{method: short, start: c.Start, req: c.Request(), resp: c.Response()})
	}
	return out
}

// podCRI is one pod's first sandbox, create and start calls, and the
// first sandbox status read after the sandbox.
type podCRI struct {
	sandbox, create, start, sandboxStatus *criCall
	creates                               []*criCall // in the first sandbox, the first of each container
}

// byPod groups the calls by pod name (the sandbox's metadata): the first
// sandbox of each pod and its first container's create and start.
func byPod(calls []criCall) map[string]*podCRI {
	pods := map[string]*podCRI{}
	sandboxPod, containerPod := map[string]string{}, map[string]string{}
	for i := range calls {
		c := &calls[i]
		switch c.method {
		case "RunPodSandbox":
			req, _ := c.req.(*runtimeapi.RunPodSandboxRequest)
			resp, _ := c.resp.(*runtimeapi.RunPodSandboxResponse)
			if req == nil || resp == nil || req.GetConfig().GetMetadata() == nil {
				continue
			}
			name := req.Config.Metadata.Name
			sandboxPod[resp.PodSandboxId] = name
			if pods[name] == nil {
				pods[name] = &podCRI{sandbox: c}
			}
		case "CreateContainer":
			req, _ := c.req.(*runtimeapi.CreateContainerRequest)
			resp, _ := c.resp.(*runtimeapi.CreateContainerResponse)
			if req == nil || resp == nil {
				continue
			}
			name := sandboxPod[req.PodSandboxId]
			containerPod[resp.ContainerId] = name
			if p := pods[name]; p != nil && p.create == nil {
				p.create = c
			}
			if p := pods[name]; p != nil && req.PodSandboxId == p.sandbox.resp.(*runtimeapi.RunPodSandboxResponse).PodSandboxId &&
				!slices.ContainsFunc(p.creates, func(o *criCall) bool {
					return o.req.(*runtimeapi.CreateContainerRequest).GetConfig().GetMetadata().GetName() == req.GetConfig().GetMetadata().GetName()
				}) {
				p.creates = append(p.creates, c)
			}
		case "PodSandboxStatus":
			req, _ := c.req.(*runtimeapi.PodSandboxStatusRequest)
			if req == nil {
				continue
			}
			if p := pods[sandboxPod[req.PodSandboxId]]; p != nil && p.sandboxStatus == nil && p.create == nil {
				p.sandboxStatus = c
			}
		case "StartContainer":
			req, _ := c.req.(*runtimeapi.StartContainerRequest)
			if req == nil {
				continue
			}
			if p := pods[containerPod[req.ContainerId]]; p != nil && p.start == nil {
				p.start = c
			}
		}
	}
	return pods
}

// traceSink collects the agent's TraceEvents.
type traceSink struct {
	mu     sync.Mutex
	events []TraceEvent
}

func (s *traceSink) add(e TraceEvent) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
}

func (s *traceSink) snapshot() []TraceEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// stageTable is a breakdown: per stage, one duration per pod.
type stageTable struct {
	names []string
	per   map[string][]time.Duration
}

func (s *stageTable) add(stage string, d time.Duration) {
	if s.per == nil {
		s.per = map[string][]time.Duration{}
	}
	if _, ok := s.per[stage]; !ok {
		s.names = append(s.names, stage)
	}
	s.per[stage] = append(s.per[stage], d)
}

func (s *stageTable) median(stage string) (time.Duration, bool) {
	d := slices.Clone(s.per[stage])
	if len(d) == 0 {
		return 0, false
	}
	slices.Sort(d)
	if len(d)%2 == 0 {
		return (d[len(d)/2-1] + d[len(d)/2]) / 2, true
	}
	return d[len(d)/2], true
}

func (s *stageTable) String() string {
	var b strings.Builder
	for _, name := range s.names {
		m, _ := s.median(name)
		fmt.Fprintf(&b, "  %-58s %8.1f ms  (n=%d)\n", name, float64(m.Microseconds())/1000, len(s.per[name]))
	}
	return b.String()
}

// agentBreakdown traces each named pod of the agent from its creation to
// the watch seeing it Ready, stage by stage.
func agentBreakdown(names []string, created, readyAt map[string]time.Time, events []TraceEvent, calls []criCall) (fine, coarse *stageTable) {
	fine, coarse = &stageTable{}, &stageTable{}
	cri := byPod(calls)
	for _, name := range names {
		first := func(stage string, ok func(TraceEvent) bool) (TraceEvent, bool) {
			for _, e := range events {
				if e.Name == "default/"+name && e.Stage == stage && (ok == nil || ok(e)) {
					return e, true
				}
			}
			return TraceEvent{}, false
		}
		ready := func(e TraceEvent) bool { return e.Ready }
		watch, ok1 := first("watch", nil)
		admitted, ok2 := first("admitted", nil)
		sync, ok3 := first("sync", nil)
		synced, ok4 := first("synced", ready)
		patch, ok5 := first("patch", ready)
		p := cri[name]
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || p == nil || p.create == nil || p.start == nil || readyAt[name].IsZero() {
			continue
		}
		// The read before the Ready patch: the last one that ended before it.
		var get TraceEvent
		for _, e := range events {
			if e.Name == "default/"+name && e.Stage == "get" && !e.At.After(patch.At) {
				get = e
			}
		}
		c := created[name]
		patchSent := patch.At.Add(-patch.Took)
		fine.add("creation → the agent's informer hands it the pod", watch.At.Sub(c))
		fine.add("→ admitted, its worker has it (Upsert)", admitted.At.Sub(watch.At))
		fine.add("→ its first sync begins (after its status read)", sync.At.Sub(admitted.At))
		fine.add("→ RunPodSandbox sent (secrets, cgroup, volumes, config)", p.sandbox.start.Sub(sync.At))
		fine.add("RunPodSandbox", p.sandbox.end.Sub(p.sandbox.start))
		if ss := p.sandboxStatus; ss != nil && !ss.end.After(p.create.start) {
			fine.add("→ PodSandboxStatus sent (the sandbox's IPs)", ss.start.Sub(p.sandbox.end))
			fine.add("PodSandboxStatus", ss.end.Sub(ss.start))
			fine.add("→ CreateContainer sent (image, volumes, env, config)", p.create.start.Sub(ss.end))
			for _, e := range events {
				if e.Name == "default/"+name && e.Stage == "volumes" && e.At.After(ss.end) && !e.At.After(p.create.start) {
					fine.add("   of which: volume setup (podsync's first container config)", e.Took)
					break
				}
			}
		}
		fine.add("RunPodSandbox answered → CreateContainer sent", p.create.start.Sub(p.sandbox.end))
		fine.add("CreateContainer", p.create.end.Sub(p.create.start))
		fine.add("→ StartContainer sent", p.start.start.Sub(p.create.end))
		fine.add("StartContainer", p.start.end.Sub(p.start.start))
		// Between the start and the Ready status: the end of the sync
		// that started the container (its status is the one read before
		// it), and the next sync, whose status read sees it running.
		var ended, next TraceEvent
		for _, e := range events {
			if e.Name != "default/"+name || e.At.Before(p.start.end) || e.At.After(synced.At) {
				continue
			}
			switch {
			case e.Stage == "synced" && ended.At.IsZero():
				ended = e
			case e.Stage == "sync" && !ended.At.IsZero() && next.At.IsZero():
				next = e
			}
		}
		if !next.At.IsZero() && ended.At.Before(synced.At) {
			fine.add("→ the sync that started it ends (OnSync, not Ready)", ended.At.Sub(p.start.end))
			fine.add("→ the next sync begins (its status read sees it running)", next.At.Sub(ended.At))
			fine.add("→ that sync ends, Ready (OnSync)", synced.At.Sub(next.At))
		}
		fine.add("StartContainer answered → the Ready status reaches the status manager", synced.At.Sub(p.start.end))
		if !get.At.IsZero() {
			getSent := get.At.Add(-get.Took)
			fine.add("→ the status manager reads the pod (waiting for its turn)", getSent.Sub(synced.At))
			fine.add("GET pod", get.Took)
			fine.add("→ PATCH sent", patchSent.Sub(get.At))
		}
		fine.add("PATCH status, acknowledged", patch.Took)
		fine.add("→ the test's watch sees it Ready", readyAt[name].Sub(patch.At))
		fine.add("total: creation → Ready as the watch sees it", readyAt[name].Sub(c))

		coarse.add("creation → RunPodSandbox sent", p.sandbox.start.Sub(c))
		coarse.add("RunPodSandbox sent → CreateContainer sent", p.create.start.Sub(p.sandbox.start))
		coarse.add("CreateContainer sent → StartContainer sent", p.start.start.Sub(p.create.start))
		coarse.add("StartContainer sent → Ready watched", readyAt[name].Sub(p.start.start))
		coarse.add("total", readyAt[name].Sub(c))
	}
	return fine, coarse
}

// stepBreakdown is the medians of podsync's steps, over every pod of the
// agent (its trace does not say which pod a step is of).
func stepBreakdown(events []TraceEvent) *stageTable {
	steps := &stageTable{}
	for _, e := range events {
		if name, ok := strings.CutPrefix(e.Stage, "step:"); ok {
			steps.add(name, e.Took)
		}
	}
	return steps
}

// kubeletBreakdown estimates kubelet's stages for each named pod from its
// proxy's CRI record, its log (SyncLoop ADD and PLEG ContainerStarted, at
// -v=2) and the watch.
func kubeletBreakdown(names []string, created, readyAt map[string]time.Time, calls []criCall, logFile string) (coarse, fromLog *stageTable) {
	coarse, fromLog = &stageTable{}, &stageTable{}
	cri := byPod(calls)
	kl := kubeletLog(logFile)
	adds, started := kl.adds, kl.started
	for _, name := range names {
		p := cri[name]
		if p == nil || p.create == nil || p.start == nil || readyAt[name].IsZero() {
			continue
		}
		c := created[name]
		coarse.add("creation → RunPodSandbox sent", p.sandbox.start.Sub(c))
		coarse.add("RunPodSandbox sent → CreateContainer sent", p.create.start.Sub(p.sandbox.start))
		coarse.add("CreateContainer sent → StartContainer sent", p.start.start.Sub(p.create.start))
		coarse.add("StartContainer sent → Ready watched", readyAt[name].Sub(p.start.start))
		coarse.add("total", readyAt[name].Sub(c))
		if add, ok := adds["default/"+name]; ok {
			fromLog.add("creation → SyncLoop ADD (watch, admission)", add.Sub(c))
			if enter, ok := kl.enters["default/"+name]; ok { // -v=4
				fromLog.add("SyncLoop ADD → SyncPod enter", enter.Sub(add))
				fromLog.add("SyncPod enter → RunPodSandbox sent", p.sandbox.start.Sub(enter))
			}
			fromLog.add("SyncLoop ADD → RunPodSandbox sent", p.sandbox.start.Sub(add))
		}
		// The container's ContainerStarted: the last one before Ready.
		var last time.Time
		for _, at := range started["default/"+name] {
			if at.Before(readyAt[name]) && at.After(p.start.start) {
				last = at
			}
		}
		if !last.IsZero() {
			fromLog.add("StartContainer sent → PLEG ContainerStarted", last.Sub(p.start.start))
			fromLog.add("PLEG ContainerStarted → Ready watched (sync, status manager, watch)", readyAt[name].Sub(last))
			// -v=3: the status patch that made it Ready, the last
			// before the watch saw it.
			var patch, updated time.Time
			for _, at := range kl.patches["default/"+name] {
				if at.After(last) && !at.After(readyAt[name]) {
					patch = at
				}
			}
			for _, at := range kl.updated["default/"+name] {
				if at.After(patch) && !at.After(readyAt[name].Add(time.Millisecond)) {
					updated = at
					break
				}
			}
			if !patch.IsZero() && !updated.IsZero() {
				fromLog.add("PLEG ContainerStarted → status patch sent", patch.Sub(last))
				fromLog.add("status patch sent → acknowledged", updated.Sub(patch))
				fromLog.add("acknowledged → Ready watched", readyAt[name].Sub(updated))
			}
		}
	}
	return coarse, fromLog
}

var (
	klogHeader    = regexp.MustCompile(`^[IWE](\d{4} \d\d:\d\d:\d\d\.\d{6})`)
	syncLoopAdd   = regexp.MustCompile(`"SyncLoop ADD" source="api" pods=\[([^\]]*)\]`)
	plegStarted   = regexp.MustCompile(`"SyncLoop \(PLEG\): event for pod" pod="([^"]+)" event=.*"Type":"ContainerStarted"`)
	syncPodEnter  = regexp.MustCompile(`"SyncPod enter" pod="([^"]+)"`)
	statusPatch   = regexp.MustCompile(`"Patch status for pod" pod="([^"]+)"`)
	statusUpdated = regexp.MustCompile(`"Status for pod updated successfully" pod="([^"]+)"`)
)

// kubeletLogTimes are the times kubelet's log gives per pod
// ("namespace/name").
type kubeletLogTimes struct {
	adds, enters              map[string]time.Time   // SyncLoop ADD; SyncPod enter (-v=4), the first
	started, patches, updated map[string][]time.Time // PLEG ContainerStarted; status patches sent and acknowledged (-v=3)
}

// kubeletLog reads kubelet's log: when each pod's SyncLoop ADD was
// logged, its PLEG ContainerStarted events and, at higher verbosity, its
// first SyncPod and its status patches.
func kubeletLog(path string) kubeletLogTimes {
	kl := kubeletLogTimes{adds: map[string]time.Time{}, enters: map[string]time.Time{},
		started: map[string][]time.Time{}, patches: map[string][]time.Time{}, updated: map[string][]time.Time{}}
	f, err := os.Open(path)
	if err != nil {
		return kl
	}
	defer f.Close()
	year := time.Now().Year()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		h := klogHeader.FindStringSubmatch(line)
		if h == nil {
			continue
		}
		at, err := time.ParseInLocation("0102 15:04:05.000000", h[1], time.Local)
		if err != nil {
			continue
		}
		at = at.AddDate(year, 0, 0)
		if m := syncLoopAdd.FindStringSubmatch(line); m != nil {
			for _, p := range strings.Split(m[1], ",") {
				p = strings.Trim(p, `" `)
				if _, seen := kl.adds[p]; !seen {
					kl.adds[p] = at
				}
			}
		}
		if m := plegStarted.FindStringSubmatch(line); m != nil {
			kl.started[m[1]] = append(kl.started[m[1]], at)
		}
		if m := syncPodEnter.FindStringSubmatch(line); m != nil {
			if _, seen := kl.enters[m[1]]; !seen {
				kl.enters[m[1]] = at
			}
		}
		if m := statusPatch.FindStringSubmatch(line); m != nil {
			kl.patches[m[1]] = append(kl.patches[m[1]], at)
		}
		if m := statusUpdated.FindStringSubmatch(line); m != nil {
			kl.updated[m[1]] = append(kl.updated[m[1]], at)
		}
	}
	return kl
}

// barePod is one pod's start as a node sent it to the runtime, to be
// replayed bare: its sandbox's and containers' requests, and when it was
// created (from the first creation).
type barePod struct {
	name    string
	at      time.Duration
	sandbox *runtimeapi.PodSandboxConfig
	handler string
	ctrs    []*runtimeapi.ContainerConfig // each container's first, in the order they were created
	status  []byte                        // the status patch: the pod's status as the API server holds it
}

// barePods are the named pods' starts as calls recorded them.
func barePods(t *testing.T, admin kubernetes.Interface, calls []criCall, names []string, created map[string]time.Time, t0 time.Time) []barePod {
	t.Helper()
	cri := byPod(calls)
	var out []barePod
	for _, name := range names {
		p := cri[name]
		if p == nil || p.create == nil {
			continue
		}
		sreq, _ := p.sandbox.req.(*runtimeapi.RunPodSandboxRequest)
		if sreq == nil {
			continue
		}
		var ctrs []*runtimeapi.ContainerConfig
		for _, c := range p.creates {
			ctrs = append(ctrs, c.req.(*runtimeapi.CreateContainerRequest).Config)
		}
		pod, err := admin.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		status, err := json.Marshal(map[string]any{"status": pod.Status})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, barePod{name: name, at: created[name].Sub(t0), sandbox: sreq.Config, handler: sreq.RuntimeHandler, ctrs: ctrs, status: status})
	}
	return out
}

// bareLimit is the physical limit of the pods' start: each pod's CRI
// calls as its node made them (RunPodSandbox, CreateContainer,
// StartContainer, with the requests it sent; as a new pod, in the agent's
// QoS cgroup, with a log directory of its own) straight to containerd,
// then one status patch to the API server (to a pod object of its own,
// with the pod's status as the API server holds it). Run three ways: both
// nodes' pods, each at its creation's offset (side by side, as the test
// creates them); the agent's alone at their offsets; and three of the
// agent's one at a time. Side by side, the nodes' other pods (load:
// every container of theirs created and started in turn, init containers
// not waited for) start at their offsets too, unmeasured. A pod's time is
// from its first call to the patch's acknowledgement. Everything it made
// is removed before it returns.
func bareLimit(t *testing.T, endpoint string, admin kubernetes.Interface, agentPods, kubeletPods, load []barePod, dir string) (sideAgent, sideKubelet, alone, oneByOne *stageTable) {
	t.Helper()
	// The replays run with containerd to themselves: they measure its
	// limit, and test/e2e, running beside this package, removes its private
	// image, whose content (and so ID) the replayed containers share (CRI's
	// RemoveImage drops every tag of an ID). The lock waits for other test
	// processes that use this containerd to end.
	lockDir := os.Getenv("PODSTART_E2E_DIR")
	if lockDir == "" {
		lockDir = "/tmp/podstart-e2e"
	}
	release, err := e2elock.Exclusive(lockDir)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rt, err := runtime.Dial(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var qos string // the agent's QoS cgroup, where every bare sandbox goes
	if len(agentPods) > 0 && agentPods[0].sandbox.GetLinux().GetCgroupParent() != "" {
		qos = filepath.Dir(agentPods[0].sandbox.Linux.CgroupParent)
	}
	var mu sync.Mutex
	var sandboxes []string
	defer func() {
		defer func(t0 time.Time) { t.Logf("bare sandboxes removed in %v", time.Since(t0).Round(time.Millisecond)) }(time.Now())
		var wg sync.WaitGroup
		for _, id := range sandboxes {
			wg.Go(func() {
				if err := rt.StopPodSandbox(ctx, id); err != nil {
					t.Errorf("bare sandbox: %v", err)
				}
				if err := rt.RemovePodSandbox(ctx, id); err != nil {
					t.Errorf("bare sandbox: %v", err)
				}
			})
		}
		wg.Wait()
	}()
	round := 0
	relabel := func(m map[string]string, name string, uid types.UID) {
		if _, ok := m["io.kubernetes.pod.uid"]; ok {
			m["io.kubernetes.pod.uid"] = string(uid)
		}
		if _, ok := m["io.kubernetes.pod.name"]; ok {
			m["io.kubernetes.pod.name"] = name
		}
	}
	// prepare makes a bare copy of p and its status pod; run starts it.
	type prepared struct {
		p    barePod
		sb   *runtimeapi.PodSandboxConfig
		ccs  []*runtimeapi.ContainerConfig
		name string
	}
	prepare := func(p barePod) (prepared, error) {
		mu.Lock()
		round++
		name := fmt.Sprintf("%s-bare%d", p.name, round)
		mu.Unlock()
		uid := types.UID(p.sandbox.GetMetadata().GetUid() + "-" + name)
		sb := proto.Clone(p.sandbox).(*runtimeapi.PodSandboxConfig)
		sb.Metadata.Name, sb.Metadata.Uid = name, string(uid)
		sb.LogDirectory = filepath.Join(dir, name)
		if sb.Linux != nil && qos != "" {
			sb.Linux.CgroupParent = qos // the pod cgroup is its node's pod's
		}
		relabel(sb.Labels, name, uid)
		relabel(sb.Annotations, name, uid)
		var ccs []*runtimeapi.ContainerConfig
		for _, c := range p.ctrs {
			cc := proto.Clone(c).(*runtimeapi.ContainerConfig)
			relabel(cc.Labels, name, uid)
			relabel(cc.Annotations, name, uid)
			if err := os.MkdirAll(filepath.Dir(filepath.Join(sb.LogDirectory, cc.LogPath)), 0o755); err != nil {
				return prepared{}, err
			}
			ccs = append(ccs, cc)
		}
		statusPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: "bare-node",
			Containers: []corev1.Container{{Name: "app", Image: "bare"}}}}
		if _, err := admin.CoreV1().Pods("default").Create(ctx, statusPod, metav1.CreateOptions{}); err != nil {
			return prepared{}, err
		}
		return prepared{p: p, sb: sb, ccs: ccs, name: name}, nil
	}
	cleanup := func(ps []prepared) {
		for _, p := range ps {
			if err := admin.CoreV1().Pods("default").Delete(context.Background(), p.name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
				t.Errorf("bare status pod: %v", err)
			}
		}
	}
	run := func(p prepared, into *stageTable) {
		t0 := time.Now()
		id, err := rt.RunPodSandbox(ctx, p.sb, p.p.handler)
		if err != nil {
			t.Errorf("bare start of %s: %v", p.name, err)
			return
		}
		mu.Lock()
		sandboxes = append(sandboxes, id)
		mu.Unlock()
		t1 := time.Now()
		var t2, t3 time.Time // the first container's
		for _, cc := range p.ccs {
			cid, err := rt.CreateContainer(ctx, id, cc, p.sb)
			if err != nil {
				t.Errorf("bare start of %s: %v", p.name, err)
				return
			}
			if t2.IsZero() {
				t2 = time.Now()
			}
			if err := rt.StartContainer(ctx, cid); err != nil {
				t.Errorf("bare start of %s: %v", p.name, err)
				return
			}
			if t3.IsZero() {
				t3 = time.Now()
			}
		}
		if into == nil { // a pod that only adds load
			return
		}
		if _, err := admin.CoreV1().Pods("default").Patch(ctx, p.name, types.StrategicMergePatchType, p.p.status, metav1.PatchOptions{}, "status"); err != nil {
			t.Errorf("bare status of %s: %v", p.name, err)
			return
		}
		t4 := time.Now()
		mu.Lock()
		defer mu.Unlock()
		into.add("RunPodSandbox", t1.Sub(t0))
		into.add("CreateContainer", t2.Sub(t1))
		into.add("StartContainer", t3.Sub(t2))
		into.add("PATCH status", t4.Sub(t3))
		into.add("total", t4.Sub(t0))
	}
	// present pulls the open image again before each replay: the bare pods
	// name it by ID, and test/e2e, running beside this package on the same
	// containerd, removes its private image, which has the same content and
	// so the same ID (CRI's RemoveImage drops every tag of an ID).
	present := func() {
		if img := os.Getenv("PODSTART_E2E_OPEN_IMAGE"); img != "" {
			if _, err := rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: img}, nil, nil); err != nil {
				t.Errorf("pull %s before a replay: %v", img, err)
			}
		}
	}
	// together starts each pod at its offset.
	together := func(groups map[*stageTable][]barePod) {
		present()
		prepStart := time.Now()
		var ps []prepared
		var into []*stageTable
		for table, pods := range groups {
			for _, p := range pods {
				pp, err := prepare(p)
				if err != nil {
					t.Errorf("bare pod %s: %v", p.name, err)
					continue
				}
				ps, into = append(ps, pp), append(into, table)
			}
		}
		t.Logf("%d bare pods prepared in %v", len(ps), time.Since(prepStart).Round(time.Millisecond))
		defer func() {
			t0 := time.Now()
			cleanup(ps)
			t.Logf("their status pods deleted in %v", time.Since(t0).Round(time.Millisecond))
		}()
		start := time.Now()
		var wg sync.WaitGroup
		for i, p := range ps {
			wg.Go(func() {
				time.Sleep(time.Until(start.Add(p.p.at)))
				run(p, into[i])
			})
		}
		wg.Wait()
	}
	sideAgent, sideKubelet, alone, oneByOne = &stageTable{}, &stageTable{}, &stageTable{}, &stageTable{}
	phase := time.Now()
	together(map[*stageTable][]barePod{sideAgent: agentPods, sideKubelet: kubeletPods, nil: load})
	t.Logf("side by side replayed in %v", time.Since(phase).Round(time.Millisecond))
	phase = time.Now()
	together(map[*stageTable][]barePod{alone: agentPods})
	t.Logf("alone replayed in %v", time.Since(phase).Round(time.Millisecond))
	defer func(t0 time.Time) { t.Logf("one at a time replayed in %v", time.Since(t0).Round(time.Millisecond)) }(time.Now())
	for _, p := range agentPods[:min(3, len(agentPods))] { // a floor: three are enough
		present()
		pp, err := prepare(p)
		if err != nil {
			t.Errorf("bare pod %s: %v", p.name, err)
			continue
		}
		run(pp, oneByOne)
		cleanup([]prepared{pp})
	}
	return sideAgent, sideKubelet, alone, oneByOne
}

// kubeletVerbosity is the side-by-side kubelet's -v: 2, or
// PODSTART_KUBELET_V (4 logs SyncPod and status patches, at a cost to
// its latency).
func kubeletVerbosity() string {
	if v := os.Getenv("PODSTART_KUBELET_V"); v != "" {
		return v
	}
	return "2"
}

// logBreakdown prints where the n pods of each node spent their start,
// and the physical limit.
func logBreakdown(t *testing.T, n int, agentNode, kubeletNode string, created, readyAt map[string]time.Time, mu *sync.Mutex,
	events []TraceEvent, agentCalls, kubeletCalls []criCall, kubeletLogFile, endpoint string, admin kubernetes.Interface, bareDir string) {
	t.Helper()
	names := func(node string) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s-%d", node, i))
		}
		return out
	}
	mu.Lock()
	fine, agentCoarse := agentBreakdown(names(agentNode), created, readyAt, events, agentCalls)
	kubeletCoarse, kubeletLog := kubeletBreakdown(names(kubeletNode), created, readyAt, kubeletCalls, kubeletLogFile)
	mu.Unlock()
	if testing.Verbose() {
		mu.Lock()
		logTimelines(t, names(agentNode), created, readyAt, agentCalls)
		logTimelines(t, names(kubeletNode), created, readyAt, kubeletCalls)
		mu.Unlock()
	}
	t.Logf("podsync's steps, median over every start of the agent (no pod attribution):\n%s", stepBreakdown(events))
	t.Logf("podstart agent's start, traced, median per stage over its %d pods (stages' medians do not add up to the total's):\n%s", n, fine)
	var b strings.Builder
	fmt.Fprintf(&b, "  %-44s %12s %12s\n", "stage (CRI calls as each node sends them)", "podstart", "kubelet")
	for _, stage := range agentCoarse.names {
		a, _ := agentCoarse.median(stage)
		k, _ := kubeletCoarse.median(stage)
		fmt.Fprintf(&b, "  %-44s %9.1f ms %9.1f ms\n", stage, float64(a.Microseconds())/1000, float64(k.Microseconds())/1000)
	}
	t.Logf("side by side, median per stage:\n%s", b.String())
	t.Logf("kubelet's stages from its -v=%s log (SyncLoop ADD, PLEG) and its proxy:\n%s", kubeletVerbosity(), kubeletLog)
	var t0 time.Time
	for _, c := range created {
		if t0.IsZero() || c.Before(t0) {
			t0 = c
		}
	}
	mu.Lock()
	createdCopy := maps.Clone(created)
	mu.Unlock()
	agentPods := barePods(t, admin, agentCalls, names(agentNode), createdCopy, t0)
	kubeletPods := barePods(t, admin, kubeletCalls, names(kubeletNode), createdCopy, t0)
	others := func(node string) []string { // the node's pods not measured
		var out []string
		for name := range createdCopy {
			if strings.HasPrefix(name, node+"-") && !slices.Contains(names(node), name) {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	load := append(barePods(t, admin, agentCalls, others(agentNode), createdCopy, t0), barePods(t, admin, kubeletCalls, others(kubeletNode), createdCopy, t0)...)
	replay := time.Now()
	sideAgent, sideKubelet, alone, oneByOne := bareLimit(t, endpoint, admin, agentPods, kubeletPods, load, bareDir)
	t.Logf("the physical limit's replays took %v", time.Since(replay).Round(time.Millisecond))
	t.Logf("physical limit side by side: both nodes' CRI calls for the same pods straight to containerd, each pod at its creation's offset, plus one status patch (with their %d other pods' sandboxes and containers started at their offsets too); the agent's pods:\n%s", len(load), sideAgent)
	t.Logf("physical limit side by side, kubelet's pods:\n%s", sideKubelet)
	t.Logf("physical limit, the agent's pods alone at their offsets:\n%s", alone)
	t.Logf("physical limit, three of the agent's pods one at a time:\n%s", oneByOne)
	if total, ok := fine.median("total: creation → Ready as the watch sees it"); ok {
		var b strings.Builder
		for _, l := range []struct {
			name  string
			table *stageTable
		}{{"side by side", sideAgent}, {"alone", alone}, {"one at a time", oneByOne}} {
			if limit, ok := l.table.median("total"); ok && limit > 0 {
				fmt.Fprintf(&b, " %s %.2f (limit %v);", l.name, float64(total)/float64(limit), limit.Round(time.Millisecond))
			}
		}
		t.Logf("podstart / physical limit:%s", strings.TrimSuffix(b.String(), ";"))
	}
	if total, ok := kubeletCoarse.median("total"); ok {
		if limit, ok := sideKubelet.median("total"); ok && limit > 0 {
			t.Logf("kubelet / physical limit: side by side %.2f (limit %v)", float64(total)/float64(limit), limit.Round(time.Millisecond))
		}
	}
}

// logTimelines prints each pod's start as offsets from the first
// creation: created, RunPodSandbox sent and answered, CreateContainer,
// StartContainer, Ready watched (kubelet's calls as its proxy saw them
// sent: no answers).
func logTimelines(t *testing.T, names []string, created, readyAt map[string]time.Time, calls []criCall) {
	t.Helper()
	var t0 time.Time
	for _, c := range created {
		if t0.IsZero() || c.Before(t0) {
			t0 = c
		}
	}
	ms := func(at time.Time) string {
		if at.IsZero() {
			return "-"
		}
		return strconv.FormatInt(at.Sub(t0).Milliseconds(), 10)
	}
	cri := byPod(calls)
	var b strings.Builder
	fmt.Fprintf(&b, "  %-22s %7s %15s %15s %15s %7s\n", "pod (ms from t0)", "created", "sandbox", "create", "start", "ready")
	for _, name := range names {
		p := cri[name]
		span := func(c *criCall) string {
			if c == nil {
				return "-"
			}
			return ms(c.start) + "-" + ms(c.end)
		}
		var s, cr, st string = "-", "-", "-"
		if p != nil {
			s, cr, st = span(p.sandbox), span(p.create), span(p.start)
		}
		fmt.Fprintf(&b, "  %-22s %7s %15s %15s %15s %7s\n", name, ms(created[name]), s, cr, st, ms(readyAt[name]))
	}
	t.Logf("timelines:\n%s", b.String())
}

// logCallCounts prints how many CRI calls of each method each node's
// proxy saw between the first creation and the last Ready of the named
// pods: what else each node asked of containerd meanwhile.
func logCallCounts(t *testing.T, names []string, created, readyAt map[string]time.Time, agent, kubelet *criproxy.Proxy) {
	t.Helper()
	var from, to time.Time
	for _, name := range names {
		if c := created[name]; from.IsZero() || c.Before(from) {
			from = c
		}
		if r := readyAt[name]; r.After(to) {
			to = r
		}
	}
	count := func(p *criproxy.Proxy) map[string]int {
		out := map[string]int{}
		for _, c := range p.Calls() {
			if !c.Start.Before(from) && !c.Start.After(to) {
				out[c.Method[strings.LastIndex(c.Method, "/")+1:]]++
			}
		}
		return out
	}
	a, k := count(agent), count(kubelet)
	var methods []string
	for m := range a {
		methods = append(methods, m)
	}
	for m := range k {
		if _, ok := a[m]; !ok {
			methods = append(methods, m)
		}
	}
	slices.Sort(methods)
	var b strings.Builder
	fmt.Fprintf(&b, "  %-28s %8s %8s\n", "method", "podstart", "kubelet")
	for _, m := range methods {
		fmt.Fprintf(&b, "  %-28s %8d %8d\n", m, a[m], k[m])
	}
	t.Logf("CRI calls from the first creation to the last Ready (%v):\n%s", to.Sub(from).Round(time.Millisecond), b.String())
}

// cpuSample is the CPU time used so far by the test's process (the
// agent, both CRI proxies, the API clients), by kubelet (this process's
// child), by containerd's daemon (not its shims), and by the whole
// machine, and how many CPUs it has.
type cpuSample struct {
	self, kubelet, containerd, machine time.Duration
	at                                 time.Time
}

// clockTick is USER_HZ, the unit of /proc's CPU times (100 on Linux).
const clockTick = 10 * time.Millisecond

func takeCPUSample() cpuSample {
	s := cpuSample{at: time.Now(), self: procCPU(os.Getpid())}
	if b, err := os.ReadFile(filepath.Join(cmpOr(os.Getenv("PODSTART_E2E_DIR"), "/tmp/podstart-e2e"), "containerd", "pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			s.containerd = procCPU(pid)
		}
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		if comm, ppid := procComm(pid); comm == "kubelet" && ppid == os.Getpid() {
			s.kubelet += procCPU(pid)
		}
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		for i := 1; i < len(f) && i <= 8; i++ {
			if i == 4 || i == 5 { // idle, iowait
				continue
			}
			n, _ := strconv.ParseInt(f[i], 10, 64)
			s.machine += time.Duration(n) * clockTick
		}
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// procStat is the fields of /proc/pid/stat after the command.
func procStat(pid int) (comm string, rest []string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", nil
	}
	open, end := strings.IndexByte(string(b), '('), strings.LastIndexByte(string(b), ')')
	if open < 0 || end < open {
		return "", nil
	}
	return string(b[open+1 : end]), strings.Fields(string(b[end+1:]))
}

func procCPU(pid int) time.Duration {
	_, f := procStat(pid)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64) // utime, field 14
	k, _ := strconv.ParseInt(f[12], 10, 64) // stime, field 15
	return time.Duration(u+k) * clockTick
}

func procComm(pid int) (string, int) {
	comm, f := procStat(pid)
	if len(f) < 2 {
		return comm, 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return comm, ppid
}

// logCPU prints the CPU each part used between two samples.
func logCPU(t *testing.T, from, to cpuSample) {
	t.Helper()
	wall := to.at.Sub(from.at)
	sec := func(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
	self, kubelet, containerd, machine := to.self-from.self, to.kubelet-from.kubelet, to.containerd-from.containerd, to.machine-from.machine
	t.Logf("CPU used from the first creation to every pod Ready (%v of wall time, %d CPUs, so at most %s): machine %s; the test process (agent, both CRI proxies, API clients) %s; kubelet %s; containerd's daemon %s; the rest (API server, etcd, shims, runc, CNI, other tests) %s",
		wall.Round(time.Millisecond), goruntime.NumCPU(), sec(wall*time.Duration(goruntime.NumCPU())), sec(machine), sec(self), sec(kubelet), sec(containerd),
		sec(machine-self-kubelet-containerd))
}

// logSyncCounts prints how many syncs of each of the agent's pods began
// before to, and how many podsync steps of each kind ran.
func logSyncCounts(t *testing.T, events []TraceEvent, to time.Time) {
	t.Helper()
	syncs, steps := map[string]int{}, map[string]int{}
	for _, e := range events {
		if e.At.After(to) {
			continue
		}
		switch {
		case e.Stage == "sync":
			syncs[e.Name]++
		case strings.HasPrefix(e.Stage, "step:"):
			steps[strings.TrimPrefix(e.Stage, "step:")]++
		}
	}
	t.Logf("until every pod was Ready, the agent's syncs per pod: %v; podsync's steps: %v", syncs, steps)
}
