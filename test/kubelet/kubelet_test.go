// Package kubelet is the tier that proves podstart against the real
// kubelet: the same static pods are run by kubelet v1.37.2 and by podstart
// on the test/e2e containerd, each through a recording CRI proxy, and their
// RunPodSandbox and CreateContainer requests are compared field by field.
//
// kubelet runs with its default pod cgroups (cgroupsPerQOS, node
// allocatable enforced on kubepods) under a cgroup root of its own;
// podstart's side makes the same hierarchy with cgroups.Manager under
// another root (the QoS tiers once, each pod's cgroup before its first
// sync, removed after). The pod cgroups' files (CPU shares, CFS quota and
// period, memory and PIDs limits, huge pages) of every pod both run, and
// those of kubepods and its tiers, are compared; after the pods are
// deleted, neither side has a pod cgroup left, and the tier removes both
// roots.
//
// It needs the e2e environment (PODSTART_CRI_ENDPOINT, from
// test/e2e/env.sh) and a kubelet binary ($PODSTART_KUBELET, else
// $PODSTART_E2E_DIR/bin/kubelet, built by test/kubelet/build.sh); without
// them it skips, unless PODSTART_E2E_REQUIRED=1, when it fails.
package kubelet

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/cgroups"
	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/test/criproxy"
	"github.com/podstart/podstart/test/e2elock"
	"github.com/podstart/podstart/test/kubeletrun"
)

const (
	nodeName      = "node1"
	clusterDNS    = "10.96.0.10"
	clusterDomain = "cluster.local"
)

// tier holds the paths and clients of one run.
type tier struct {
	t        *testing.T
	endpoint string
	kubelet  string // binary
	dir      string
	rt       *runtime.Client
	nodeIP   string
	hostDir  string
	sides    map[string]*side
	tree     cgroups.Tree // the host's cgroups
}

// side is one of the two agents: its root and log dirs and its proxy.
type side struct {
	name       string
	root, logs string
	proxy      *criproxy.Proxy
	cgroupRoot string           // its cgroup root (cgroupfs path)
	cgroups    *cgroups.Manager // of that root
}

func required() bool { return os.Getenv("PODSTART_E2E_REQUIRED") == "1" }

func missing(t *testing.T, why string) {
	t.Helper()
	if required() {
		t.Fatalf("PODSTART_E2E_REQUIRED=1 but %s", why)
	}
	t.Skipf("%s: this tier needs 'bash test/e2e/env.sh up' and 'bash test/kubelet/build.sh' (see README)", why)
}

func setup(t *testing.T) *tier {
	t.Helper()
	if os.Getuid() != 0 {
		missing(t, "not running as root")
	}
	endpoint := os.Getenv("PODSTART_CRI_ENDPOINT")
	if endpoint == "" {
		missing(t, "PODSTART_CRI_ENDPOINT is unset")
	}
	image = os.Getenv("PODSTART_E2E_OPEN_IMAGE")
	if image == "" {
		missing(t, "PODSTART_E2E_OPEN_IMAGE is unset")
	}
	e2eDir := os.Getenv("PODSTART_E2E_DIR")
	if e2eDir == "" {
		e2eDir = "/tmp/podstart-e2e"
	}
	if err := e2elock.Shared(e2eDir); err != nil {
		t.Fatal(err)
	}
	bin := os.Getenv("PODSTART_KUBELET")
	if bin == "" {
		bin = filepath.Join(e2eDir, "bin", "kubelet")
	}
	if _, err := os.Stat(bin); err != nil {
		missing(t, fmt.Sprintf("no kubelet binary at %s", bin))
	}
	tr := &tier{t: t, endpoint: endpoint, kubelet: bin, dir: filepath.Join(e2eDir, "kubelet-tier"), sides: map[string]*side{}}
	unmountUnder(tr.dir)
	if err := os.RemoveAll(tr.dir); err != nil {
		t.Fatal(err)
	}
	tr.hostDir = filepath.Join(tr.dir, "host")
	for _, d := range []string{filepath.Join(tr.dir, "manifests"), filepath.Join(tr.hostDir, "data")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"kubelet", "podstart"} {
		s := &side{name: name, root: filepath.Join(tr.dir, name, "root"), logs: filepath.Join(tr.dir, name, "logs")}
		// A Localhost seccomp profile under each side's seccomp root.
		prof := filepath.Join(s.root, "seccomp", "profiles", "allow.json")
		if err := os.MkdirAll(filepath.Dir(prof), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(prof, []byte(`{"defaultAction":"SCMP_ACT_ALLOW"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(s.logs, 0o755)
		tr.sides[name] = s
	}
	tr.tree = tr.makeCgroupRoots()
	// Registered before the sandboxes' removal, so it runs after it.
	t.Cleanup(tr.removeCgroupRoots)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := runtime.Dial(ctx, endpoint, runtime.WithConnectTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	tr.rt = rt
	tr.nodeIP = hostIP(t)
	// Registered first, so it runs last: nothing of this run is left.
	t.Cleanup(func() {
		tr.removeSandboxes()
		unmountUnder(tr.dir)
		removeLogLinks(tr.dir)
		rt.Close()
	})
	tr.removeSandboxes()
	return tr
}

func hostIP(t *testing.T) string {
	ip, err := kubeletrun.HostIP()
	if err != nil {
		t.Fatal(err)
	}
	return ip
}

// removeSandboxes stops and removes every sandbox of the tier's namespace.
func (tr *tier) removeSandboxes() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sbs, err := tr.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{podsync.LabelPodNamespace: namespace}})
	if err != nil {
		tr.t.Errorf("cleanup: %v", err)
		return
	}
	for _, sb := range sbs {
		tr.rt.StopPodSandbox(ctx, sb.Id)
		if err := tr.rt.RemovePodSandbox(ctx, sb.Id); err != nil {
			tr.t.Errorf("cleanup: remove sandbox %s: %v", sb.Id, err)
		}
	}
}

// unmountUnder unmounts what kubelet left mounted under dir.
func unmountUnder(dir string) { kubeletrun.UnmountUnder(dir) }

// removeLogLinks removes kubelet's /var/log/containers links into dir.
func removeLogLinks(dir string) {
	ents, _ := os.ReadDir("/var/log/containers")
	for _, e := range ents {
		p := filepath.Join("/var/log/containers", e.Name())
		if target, err := os.Readlink(p); err == nil && strings.HasPrefix(target, dir+"/") {
			os.Remove(p)
		}
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// kubeletConfig is the recipe's kubelet.yaml.tmpl with this run's paths,
// cluster DNS and the unsafe sysctls the table uses.
func (tr *tier) kubeletConfig(port int, endpoint string) string {
	return kubeletrun.Config{
		Endpoint: endpoint, Port: port, PodLogsDir: tr.sides["kubelet"].logs,
		PodCgroups: true, CgroupRoot: tr.sides["kubelet"].cgroupRoot,
		StaticPodPath: filepath.Join(tr.dir, "manifests"), SyncFrequency: "5s",
		ClusterDNS: clusterDNS, ClusterDomain: clusterDomain,
		AllowedUnsafeSysctls: []string{"net.ipv4.conf.*"},
	}.YAML()
}

// runKubelet runs the real kubelet on the table's static pods through a
// guarded proxy until every pod has settled, and returns the pods as
// kubelet holds them (defaulted, named, with their UIDs) and its cgroups
// as they were then; it deletes the pods (and waits for their cgroups to
// go) before it stops kubelet.
func (tr *tier) runKubelet(cases []podCase, deadline time.Duration) (map[string]*corev1.Pod, string, *cgroupSnapshot) {
	t := tr.t
	s := tr.sides["kubelet"]
	for _, c := range cases {
		b, err := json.Marshal(c.pod)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tr.dir, "manifests", c.name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := criproxy.Start(filepath.Join(tr.dir, "kubelet.sock"), tr.endpoint, criproxy.Guard())
	if err != nil {
		t.Fatal(err)
	}
	s.proxy = p
	t.Cleanup(func() { p.Close() })
	port := freePort(t)
	cfg := filepath.Join(tr.dir, "kubelet.yaml")
	if err := os.WriteFile(cfg, []byte(tr.kubeletConfig(port, p.Endpoint())), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(tr.dir, "kubelet.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(tr.kubelet, "--config="+cfg, "--root-dir="+s.root, "--hostname-override="+nodeName, "--node-ip="+tr.nodeIP, "--v=3")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	t.Cleanup(stop)

	end := time.Now().Add(deadline)
	for {
		rec := collect(p.Calls())
		refusals := kubeletRefusals(logPath)
		pending := unsettled(cases, rec, refusals, runsOnKubelet)
		if len(pending) == 0 {
			break
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("kubelet exited: %v; log tail:\n%s", err, tail(logPath, 40))
		default:
		}
		if time.Now().After(end) {
			t.Errorf("kubelet did not settle in %v: %v", deadline, pending)
			break
		}
		time.Sleep(300 * time.Millisecond) // poll the recording; kubelet runs on its own time
	}
	pods := fetchPods(t, port)
	snap := tr.snapshot("kubelet", cases, collect(p.Calls()))
	tr.deleteKubeletPods(cases, exited, 2*time.Minute)
	stop()
	return pods, logPath, snap
}

func runsOnKubelet(c podCase) outcome { return c.kubelet }

// fetchPods reads kubelet's /pods: the pods exactly as kubelet holds them.
func fetchPods(t *testing.T, port int) map[string]*corev1.Pod {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/pods", port))
	if err != nil {
		t.Fatalf("kubelet /pods: %v", err)
	}
	defer resp.Body.Close()
	var list corev1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatalf("kubelet /pods: %v", err)
	}
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Namespace == namespace {
			out[strings.TrimSuffix(p.Name, "-"+nodeName)] = p
		}
	}
	return out
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// kubeletRefusals finds, in kubelet's log, the containers it refused with
// CreateContainerConfigError: pod name -> container -> message.
var (
	refusalLine = regexp.MustCompile(`failed to \\"StartContainer\\" for \\"([^\\"]+)\\" with CreateContainerConfigError: \\"(.*?)\\"" pod="([^"]+)"`)
)

func kubeletRefusals(path string) map[string]map[string]string {
	out := map[string]map[string]string{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "CreateContainerConfigError") {
			continue
		}
		m := refusalLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name := m[3][strings.Index(m[3], "/")+1:]
		if out[name] == nil {
			out[name] = map[string]string{}
		}
		out[name][m[1]] = strings.ReplaceAll(m[2], `\\\"`, `"`)
	}
	return out
}

// kubeletPodErrors finds, in kubelet's log, why a pod got no sandbox:
// admission rejections and sandbox configs kubelet could not make. Pod
// name -> text.
var (
	admissionLine     = regexp.MustCompile(`"Pod admission denied" podUID="[^"]*" pod="[^/"]*/([^"]+)" reason="([^"]*)" message="([^"]*)"`)
	sandboxConfigLine = regexp.MustCompile(`"Failed to generate sandbox config for pod" err="(.*)" pod="[^/"]*/([^"]+)"`)
)

func kubeletPodErrors(path string) map[string]string {
	out := map[string]string{}
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		if m := admissionLine.FindStringSubmatch(line); m != nil {
			out[m[1]] = "admission: " + m[2] + ": " + m[3]
		} else if m := sandboxConfigLine.FindStringSubmatch(line); m != nil {
			out[m[2]] = "CreatePodSandboxError: " + m[1]
		}
	}
	return out
}

// podRecord is what one side asked of the runtime for one pod.
type podRecord struct {
	sandbox    *runtimeapi.RunPodSandboxRequest // the first
	sandboxErr error
	containers map[string]*runtimeapi.CreateContainerRequest // the first of each container
	created    map[string]bool
}

// collect groups the recorded RunPodSandbox and CreateContainer calls by
// pod name.
func collect(calls []criproxy.Call) map[string]*podRecord {
	out := map[string]*podRecord{}
	get := func(name string) *podRecord {
		if out[name] == nil {
			out[name] = &podRecord{containers: map[string]*runtimeapi.CreateContainerRequest{}, created: map[string]bool{}}
		}
		return out[name]
	}
	for _, c := range calls {
		switch req := c.Request().(type) {
		case *runtimeapi.RunPodSandboxRequest:
			r := get(req.GetConfig().GetMetadata().GetName())
			if r.sandbox == nil {
				r.sandbox, r.sandboxErr = req, c.Err
			}
		case *runtimeapi.CreateContainerRequest:
			r := get(req.GetSandboxConfig().GetMetadata().GetName())
			name := req.GetConfig().GetMetadata().GetName()
			if _, ok := r.containers[name]; !ok {
				r.containers[name] = req
			}
			if c.Err == nil && len(c.Responses) > 0 {
				r.created[name] = true
			}
		}
	}
	return out
}

func allContainers(p *corev1.Pod) []string {
	var names []string
	for _, c := range p.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

// unsettled lists the pods one side has not finished with: a pod that
// runs needs its sandbox and each container created or refused; a pod
// whose sandbox fails needs one failed RunPodSandbox.
func unsettled(cases []podCase, rec map[string]*podRecord, refusals map[string]map[string]string, expect func(podCase) outcome) []string {
	var out []string
	for _, c := range cases {
		full := c.name + "-" + nodeName
		r := rec[full]
		switch expect(c) {
		case rejected, noSandboxConfig:
			continue
		case sandboxFails:
			if r == nil || r.sandbox == nil {
				out = append(out, c.name+": no RunPodSandbox")
			}
			continue
		}
		if r == nil || r.sandbox == nil {
			out = append(out, c.name+": no RunPodSandbox")
			continue
		}
		for _, name := range allContainers(c.pod) {
			if _, ok := r.containers[name]; !ok && refusals[full][name] == "" {
				out = append(out, c.name+"/"+name)
			}
		}
	}
	return out
}

// runPodstart runs podstart's Syncer on kubelet's pods through a recording
// proxy until each pod has settled as on kubelet's side (or its sandbox
// failed, or it gave up after a deadline), and returns its refusals (the
// sandbox's error under the container name ""). Before, it makes the QoS
// cgroups, and each admitted pod's cgroup before its first sync, with the
// active pods (kubelet's GetActivePods) counting for the burstable tier;
// pods kubelet's admission rejects get none, as on kubelet (admission is
// the caller's).
func (tr *tier) runPodstart(cases []podCase, pods map[string]*corev1.Pod, active []*corev1.Pod, opts ...podsync.Option) map[string]map[string]string {
	t := tr.t
	s := tr.sides["podstart"]
	p, err := criproxy.Start(filepath.Join(tr.dir, "podstart.sock"), tr.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	s.proxy = p
	t.Cleanup(func() { p.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := runtime.Dial(ctx, p.Endpoint(), runtime.WithConnectTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ims := images.NewManager(rt)
	defer ims.Close()
	opts = append([]podsync.Option{podsync.WithNode(tr.node())}, opts...)
	syncer := podsync.NewSyncer(rt, ims, opts...)
	m, err := cgroups.NewManager(tr.tree, criconfig.FromHost(tr.node()), cgroups.WithActivePods(func() []*corev1.Pod { return active }))
	if err != nil {
		t.Fatal(err)
	}
	s.cgroups = m
	if err := m.EnsureQoS(ctx); err != nil {
		t.Fatal(err)
	}

	refusals := map[string]map[string]string{}
	for _, c := range cases {
		pod := pods[c.name]
		full := pod.Name
		refusals[full] = map[string]string{}
		if c.kubelet != rejected {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := m.EnsurePod(ctx, pod)
			cancel()
			if err != nil {
				t.Fatalf("%s: pod cgroup: %v", c.name, err)
			}
		}
		end := time.Now().Add(45 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			st, err := syncer.Status(ctx, pod)
			if err != nil {
				cancel()
				t.Fatalf("%s: status: %v", c.name, err)
			}
			res := syncer.SyncPod(ctx, pod, st, nil)
			cancel()
			sandboxFailed := false
			for _, r := range res.Results {
				switch {
				case r.Action == podsync.ActionStartContainer && errors.Is(r.Err, podsync.ErrCreateContainerConfig):
					refusals[full][r.Target] = r.Message
				case (r.Action == podsync.ActionCreatePodSandbox || r.Action == podsync.ActionConfigPodSandbox) && r.Err != nil:
					sandboxFailed = true
					if _, ok := refusals[full][""]; !ok {
						refusals[full][""] = fmt.Sprintf("%v: %s", r.Err, r.Message)
					}
				}
			}
			rec := collect(p.Calls())[full]
			settled := sandboxFailed
			if !settled && rec != nil && rec.sandbox != nil {
				settled = true
				for _, name := range allContainers(pod) {
					if _, ok := rec.containers[name]; !ok && refusals[full][name] == "" {
						settled = false
					}
				}
			}
			if settled {
				break
			}
			if time.Now().After(end) {
				t.Errorf("podstart: %s did not settle in 45 s: %v", c.name, res.Error())
				break
			}
			time.Sleep(100 * time.Millisecond) // init containers exit on the runtime's time
		}
	}
	return refusals
}

// TestKubeletEquality is the tier: kubelet's requests and podstart's, for
// the same pods, must be equal but for the allow-listed differences.
func TestKubeletEquality(t *testing.T) {
	tr := setup(t)
	start := time.Now()
	features := tr.features()
	cases := features.forRuntime(podTable(tr.hostDir))
	saved := allowed
	allowed = append(slices.Clip(allowed), features.allowances()...)
	t.Cleanup(func() { allowed = saved })
	kpods, logPath, kcgroups := tr.runKubelet(cases, 4*time.Minute)
	kubeletTime := time.Since(start)
	krec := collect(tr.sides["kubelet"].proxy.Calls())
	krefusals := kubeletRefusals(logPath)
	// kubelet leaves its pods running and its root dir mounted.
	tr.removeSandboxes()
	unmountUnder(tr.sides["kubelet"].root)

	pods := map[string]*corev1.Pod{}
	var active []*corev1.Pod // kubelet's active pods: admitted, not terminal
	for _, c := range cases {
		p, ok := kpods[c.name]
		if !ok {
			t.Errorf("%s: kubelet does not hold the pod (invalid manifest?); log:\n%s", c.name, tail(logPath, 20))
			continue
		}
		phase := p.Status.Phase
		p = p.DeepCopy()
		p.Status = corev1.PodStatus{}
		pods[c.name] = p
		if c.kubelet != rejected && phase != corev1.PodFailed && phase != corev1.PodSucceeded {
			active = append(active, p)
		}
	}
	if t.Failed() {
		return
	}
	pstart := time.Now()
	prefusals := tr.runPodstart(cases, pods, active, tr.podstartOptions()...)
	t.Logf("kubelet side %v, podstart side %v", kubeletTime.Round(time.Second), time.Since(pstart).Round(time.Second))
	prec := collect(tr.sides["podstart"].proxy.Calls())
	pcgroups := tr.snapshot("podstart", cases, prec)
	tr.removeSandboxes()
	// podstart's pods are killed: their cgroups go (RemovePod kills what
	// might be left in them).
	m := tr.sides["podstart"].cgroups
	for _, c := range cases {
		if pods[c.name] == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := m.RemovePod(ctx, pods[c.name]); err != nil {
			t.Errorf("%s: remove pod cgroup: %v", c.name, err)
		}
		cancel()
	}
	if left := tr.podCgroups("podstart"); len(left) > 0 {
		t.Errorf("podstart: pod cgroups left after RemovePod: %v", left)
	}
	// On a hybrid cgroup v1 host runc makes each container's cgroup in the
	// cgroup2 "unified" mount too; both sides remove the pod's there.
	if left := tr.unifiedPodCgroups("podstart"); len(left) > 0 {
		t.Errorf("podstart: pod cgroups left in the hybrid host's unified hierarchy: %d, e.g. %s", len(left), left[0])
	}
	tr.compareCgroups(cases, pods, kcgroups, pcgroups)

	kpodErrs := kubeletPodErrors(logPath)
	for _, c := range cases {
		tr.checkTable(c, krec[c.name+"-"+nodeName], krefusals[c.name+"-"+nodeName], kpodErrs[c.name+"-"+nodeName])
		if e := kpodErrs[c.name+"-"+nodeName]; e != "" {
			if krefusals[c.name+"-"+nodeName] == nil {
				krefusals[c.name+"-"+nodeName] = map[string]string{}
			}
			krefusals[c.name+"-"+nodeName][""] = e
		}
	}
	tr.dump("kubelet", krec)
	tr.dump("podstart", prec)
	rep := tr.compare(cases, pods, krec, prec, krefusals, prefusals)
	if path := os.Getenv("PODSTART_KUBELET_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(rep.markdown()), 0o644); err != nil {
			t.Error(err)
		}
	}
	rep.assert(t)
}

// dump writes one side's requests, pod by pod, as text under
// <dir>/requests/<side>/ for people to read.
func (tr *tier) dump(name string, rec map[string]*podRecord) {
	dir := filepath.Join(tr.dir, "requests", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tr.t.Error(err)
		return
	}
	opts := prototext.MarshalOptions{Multiline: true}
	for pod, r := range rec {
		var b strings.Builder
		if r.sandbox != nil {
			fmt.Fprintf(&b, "# RunPodSandbox (error: %v)\n%s\n", r.sandboxErr, opts.Format(r.sandbox))
		}
		for _, c := range sortedKeys(r.containers) {
			req := proto.Clone(r.containers[c]).(*runtimeapi.CreateContainerRequest)
			req.SandboxConfig = nil
			fmt.Fprintf(&b, "# CreateContainer %s\n%s\n", c, opts.Format(req))
		}
		if err := os.WriteFile(filepath.Join(dir, pod+".txt"), []byte(b.String()), 0o644); err != nil {
			tr.t.Error(err)
		}
	}
}

// checkTable fails when kubelet did not do what the table says it does
// on this node, so the table's claims stay true.
func (tr *tier) checkTable(c podCase, rec *podRecord, refused map[string]string, podErr string) {
	t := tr.t
	sent := rec != nil && rec.sandbox != nil
	switch c.kubelet {
	case rejected:
		if sent || !strings.HasPrefix(podErr, "admission: ") {
			t.Errorf("table: %s: kubelet should reject the pod, but it sent RunPodSandbox=%v (error %q)", c.name, sent, podErr)
		}
	case noSandboxConfig:
		if sent || !strings.HasPrefix(podErr, "CreatePodSandboxError: ") {
			t.Errorf("table: %s: kubelet should fail to make the sandbox config, but it sent RunPodSandbox=%v (error %q)", c.name, sent, podErr)
		}
	case sandboxFails:
		if !sent || rec.sandboxErr == nil {
			t.Errorf("table: %s: kubelet's RunPodSandbox should fail", c.name)
		}
	case runs:
		if !sent || rec.sandboxErr != nil {
			t.Errorf("table: %s: kubelet should run the pod: %v", c.name, podErr)
		}
		var got []string
		for name := range refused {
			got = append(got, name)
		}
		slices.Sort(got)
		want := slices.Clone(c.refused)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("table: %s: kubelet refused %v, the table says %v", c.name, got, want)
		}
	}
}
