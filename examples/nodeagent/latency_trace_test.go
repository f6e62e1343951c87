package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
	case "RunPodSandbox", "CreateContainer", "StartContainer":
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

// podCRI is one pod's first sandbox, create and start calls.
type podCRI struct {
	sandbox, create, start *criCall
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
		fine.add("→ CreateContainer sent (image, env, config)", p.create.start.Sub(p.sandbox.end))
		fine.add("CreateContainer", p.create.end.Sub(p.create.start))
		fine.add("→ StartContainer sent", p.start.start.Sub(p.create.end))
		fine.add("StartContainer", p.start.end.Sub(p.start.start))
		fine.add("→ the Ready status reaches the status manager (OnSync)", synced.At.Sub(p.start.end))
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

// kubeletBreakdown estimates kubelet's stages for each named pod from its
// proxy's CRI record, its log (SyncLoop ADD and PLEG ContainerStarted, at
// -v=2) and the watch.
func kubeletBreakdown(names []string, created, readyAt map[string]time.Time, calls []criCall, logFile string) (coarse, fromLog *stageTable) {
	coarse, fromLog = &stageTable{}, &stageTable{}
	cri := byPod(calls)
	adds, started := kubeletLog(logFile)
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
		}
	}
	return coarse, fromLog
}

var (
	klogHeader  = regexp.MustCompile(`^[IWE](\d{4} \d\d:\d\d:\d\d\.\d{6})`)
	syncLoopAdd = regexp.MustCompile(`"SyncLoop ADD" source="api" pods=\[([^\]]*)\]`)
	plegStarted = regexp.MustCompile(`"SyncLoop \(PLEG\): event for pod" pod="([^"]+)" event=.*"Type":"ContainerStarted"`)
)

// kubeletLog reads kubelet's log: when each pod's SyncLoop ADD was logged,
// and its PLEG ContainerStarted events.
func kubeletLog(path string) (adds map[string]time.Time, started map[string][]time.Time) {
	adds, started = map[string]time.Time{}, map[string][]time.Time{}
	f, err := os.Open(path)
	if err != nil {
		return adds, started
	}
	defer f.Close()
	year := time.Now().Year()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
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
				if _, seen := adds[p]; !seen {
					adds[p] = at
				}
			}
		}
		if m := plegStarted.FindStringSubmatch(line); m != nil {
			started[m[1]] = append(started[m[1]], at)
		}
	}
	return adds, started
}

// bareLimit is the physical limit of the agent's pods' start: for each
// pod, the CRI calls the agent made (RunPodSandbox, CreateContainer,
// StartContainer, with the requests it sent, as a new pod in the same
// QoS cgroup and with its own log directory) straight to containerd, then
// one status patch to the API server (a pod object of its own, given the
// agent pod's status as the API server holds it). Run for every pod at
// once (as the test creates them) and one pod at a time; each pod's time
// is from its first call to the patch's acknowledgement. Everything it
// made is removed before it returns.
func bareLimit(t *testing.T, endpoint string, admin kubernetes.Interface, calls []criCall, names []string, dir string) (burst, alone *stageTable) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rt, err := runtime.Dial(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	cri := byPod(calls)
	type plan struct {
		name    string
		sandbox *runtimeapi.PodSandboxConfig
		handler string
		ctr     *runtimeapi.ContainerConfig
		status  []byte // the patch
	}
	var plans []plan
	for _, name := range names {
		p := cri[name]
		if p == nil || p.create == nil {
			continue
		}
		sreq := p.sandbox.req.(*runtimeapi.RunPodSandboxRequest)
		creq := p.create.req.(*runtimeapi.CreateContainerRequest)
		pod, err := admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		status, err := json.Marshal(map[string]any{"status": pod.Status})
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, plan{name: name, sandbox: sreq.Config, handler: sreq.RuntimeHandler, ctr: creq.Config, status: status})
	}
	var sandboxes []string
	var mu sync.Mutex
	defer func() {
		for _, id := range sandboxes {
			if err := rt.StopPodSandbox(ctx, id); err != nil {
				t.Errorf("bare sandbox: %v", err)
			}
			if err := rt.RemovePodSandbox(ctx, id); err != nil {
				t.Errorf("bare sandbox: %v", err)
			}
		}
	}()
	round := 0
	run := func(p plan) (sandbox, create, start, patch time.Duration, err error) {
		mu.Lock()
		round++
		suffix := fmt.Sprintf("bare%d", round)
		mu.Unlock()
		uid := types.UID(string(p.sandbox.Metadata.Uid) + "-" + suffix)
		name := p.name + "-" + suffix
		sb := proto.Clone(p.sandbox).(*runtimeapi.PodSandboxConfig)
		sb.Metadata.Name, sb.Metadata.Uid = name, string(uid)
		sb.LogDirectory = filepath.Join(dir, name)
		if sb.Linux != nil && sb.Linux.CgroupParent != "" {
			sb.Linux.CgroupParent = filepath.Dir(sb.Linux.CgroupParent) // the QoS cgroup: the pod's is the agent's
		}
		for _, m := range []map[string]string{sb.Labels, sb.Annotations} {
			if _, ok := m["io.kubernetes.pod.uid"]; ok {
				m["io.kubernetes.pod.uid"] = string(uid)
			}
			if _, ok := m["io.kubernetes.pod.name"]; ok {
				m["io.kubernetes.pod.name"] = name
			}
		}
		cc := proto.Clone(p.ctr).(*runtimeapi.ContainerConfig)
		for _, m := range []map[string]string{cc.Labels, cc.Annotations} {
			if _, ok := m["io.kubernetes.pod.uid"]; ok {
				m["io.kubernetes.pod.uid"] = string(uid)
			}
			if _, ok := m["io.kubernetes.pod.name"]; ok {
				m["io.kubernetes.pod.name"] = name
			}
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(sb.LogDirectory, cc.LogPath)), 0o755); err != nil {
			return 0, 0, 0, 0, err
		}
		statusPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: "bare-node",
			Containers: []corev1.Container{{Name: "app", Image: "bare"}}}}
		if _, err := admin.CoreV1().Pods("default").Create(ctx, statusPod, metav1.CreateOptions{}); err != nil {
			return 0, 0, 0, 0, err
		}
		defer admin.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})

		t0 := time.Now()
		id, err := rt.RunPodSandbox(ctx, sb, p.handler)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		mu.Lock()
		sandboxes = append(sandboxes, id)
		mu.Unlock()
		t1 := time.Now()
		cid, err := rt.CreateContainer(ctx, id, cc, sb)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		t2 := time.Now()
		if err := rt.StartContainer(ctx, cid); err != nil {
			return 0, 0, 0, 0, err
		}
		t3 := time.Now()
		if _, err := admin.CoreV1().Pods("default").Patch(ctx, name, types.StrategicMergePatchType, p.status, metav1.PatchOptions{}, "status"); err != nil {
			return 0, 0, 0, 0, err
		}
		t4 := time.Now()
		return t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), t4.Sub(t3), nil
	}
	add := func(s *stageTable, sandbox, create, start, patch time.Duration) {
		s.add("RunPodSandbox", sandbox)
		s.add("CreateContainer", create)
		s.add("StartContainer", start)
		s.add("PATCH status", patch)
		s.add("total", sandbox+create+start+patch)
	}
	burst, alone = &stageTable{}, &stageTable{}
	var wg sync.WaitGroup
	for _, p := range plans {
		wg.Go(func() {
			s, c, st, pa, err := run(p)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("bare start of %s: %v", p.name, err)
				return
			}
			add(burst, s, c, st, pa)
		})
	}
	wg.Wait()
	for _, p := range plans {
		s, c, st, pa, err := run(p)
		if err != nil {
			t.Errorf("bare start of %s: %v", p.name, err)
			continue
		}
		add(alone, s, c, st, pa)
	}
	return burst, alone
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
	burst, alone := bareLimit(t, endpoint, admin, agentCalls, names(agentNode), bareDir)
	t.Logf("physical limit: the agent's CRI calls for the same pods straight to containerd plus one status patch, all %d at once:\n%s", n, burst)
	t.Logf("physical limit, one pod at a time:\n%s", alone)
	if total, ok := fine.median("total: creation → Ready as the watch sees it"); ok {
		if limit, ok := burst.median("total"); ok && limit > 0 {
			t.Logf("podstart / physical limit (all at once): %.2f", float64(total)/float64(limit))
		}
		if limit, ok := alone.median("total"); ok && limit > 0 {
			t.Logf("podstart / physical limit (one at a time): %.2f", float64(total)/float64(limit))
		}
	}
}
