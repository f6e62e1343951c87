package main

// The cluster mode (issue 41, item 1): the whole agent, examples/nodeagent
// with its defaults, against kubelet v1.37.2 in its default configuration,
// both joined to one kube-apiserver (test/cluster), each on a fresh
// bench/cmd/fakecri. For each N: a burst of N pod creations per node
// through the API server (spec.nodeName set, no scheduler), then a steady
// window with nothing changing.

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podstart/podstart/test/cluster"
	"github.com/podstart/podstart/test/kubeletrun"
)

// The two nodes' names.
const (
	kubeletNode = "bench-kubelet"
	agentNode   = "bench-podstart"
)

// clusterConfig is the cluster mode's configuration.
type clusterConfig struct {
	dir          string // work directory; <dir>/n-<N> per N, <dir>/profiles kept
	binDir       string // kube-apiserver and etcd
	kubelet      string
	bin          string // fakecri and nodeagent, built
	image        string
	window       time.Duration
	settle       time.Duration
	timeout      time.Duration
	cgroupPrefix string // cgroup roots <prefix>-kubelet and <prefix>-podstart
	portBase     int    // kubelet port+1, agent node API +2, kubelet healthz +3, agent pprof +4
	profile      bool
	keep         bool
}

// sideResult is one node's figures for one N.
type sideResult struct {
	side     string
	n        int
	burst    time.Duration      // first creation → the N-th pod Ready as the API server shows it
	burstCPU float64            // CPU seconds of the node's process in the burst
	burstAPI map[string]float64 // API requests in the burst, by "verb resource"
	// burstAPIFailed are the burst's requests answered with an error, by
	// "verb resource code".
	burstAPIFailed map[string]float64
	burstCRI       map[string]float64 // CRI calls in the burst, by method
	cpuPerMin      float64            // steady window
	rssMiB         float64
	rssMaxMiB      float64
	apiPerMin      map[string]float64
	criPerMin      map[string]float64
	loadBefore     string
	loadAfter      string
	rssParts       string // RssAnon, RssFile, RssShmem at the window's end
}

// node is one side: its fake runtime and its agent.
type node struct {
	side, name string
	fake       *proc
	agent      *proc
	stats      func() (Stats, error)
}

// clusterMain builds fakecri and nodeagent and runs every N.
func clusterMain(ctx context.Context, c clusterConfig, counts []int) error {
	c.bin = filepath.Join(c.dir, "bin")
	for _, b := range []struct{ name, pkg string }{{"fakecri", "./bench/cmd/fakecri"}, {"nodeagent", "./examples/nodeagent"}} {
		// nodeagent as a user builds it: go build, default flags.
		build := exec.Command("go", "build", "-o", filepath.Join(c.bin, b.name), "github.com/podstart/podstart/"+b.pkg[2:])
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build %s: %w", b.name, err)
		}
	}
	if _, err := os.Stat(c.kubelet); err != nil {
		return fmt.Errorf("no kubelet binary: %w", err)
	}
	var all []sideResult
	for _, n := range counts {
		rs, err := clusterRun(ctx, c, n)
		if err != nil {
			return fmt.Errorf("%d pods: %w", n, err)
		}
		for _, r := range rs {
			printSide(os.Stdout, r)
		}
		all = append(all, rs...)
	}
	fmt.Println()
	printClusterRatios(os.Stdout, all)
	return nil
}

// clusterRun is one N: a fresh API server, both nodes on fresh fakes, the
// burst, the steady window.
func clusterRun(ctx context.Context, c clusterConfig, n int) (rs []sideResult, err error) {
	d := filepath.Join(c.dir, fmt.Sprintf("n-%d", n))
	if err := clean(d); err != nil {
		return nil, err
	}
	defer func() {
		if !c.keep && err == nil {
			clean(d)
			return
		}
		// Kept: the files stay, not the mounts nor /var/log/containers' links.
		if err := unmountAndUnlink(d); err != nil {
			log.Printf("clean %s: %v", d, err)
		}
	}()
	profDir := filepath.Join(c.dir, "profiles")
	for _, dir := range []string{filepath.Join(d, "cluster"), profDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	policy := filepath.Join(d, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return nil, err
	}
	auditLog := filepath.Join(d, "audit.log")
	cl, err := cluster.Start(ctx, filepath.Join(d, "cluster"), cluster.Options{BinDir: c.binDir, NodeName: agentNode,
		ExtraAPIServerArgs: []string{"--audit-policy-file=" + policy, "--audit-log-path=" + auditLog, "--audit-log-mode=blocking"}})
	if err != nil {
		return nil, err
	}
	defer cl.Stop()
	admin, err := clientFrom(cl.AdminKubeconfig, 200, 400)
	if err != nil {
		return nil, err
	}
	// What kube-controller-manager would make: the default service account
	// and the root CA every pod's token volume projects.
	ca, err := os.ReadFile(cl.CAFile)
	if err != nil {
		return nil, err
	}
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"},
		Data: map[string]string{"ca.crt": string(ca)}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	kubeletKubeconfig, err := cl.NodeKubeconfigFor(kubeletNode)
	if err != nil {
		return nil, err
	}

	var nodes []*node
	defer func() {
		for _, nd := range nodes {
			if nd.agent != nil {
				nd.agent.stop()
			}
			nd.fake.stop()
		}
		for _, side := range []string{"kubelet", "podstart"} {
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			if err := kubeletrun.RemoveCgroupRoot(rctx, c.cgroupPrefix+"-"+side); err != nil {
				log.Printf("remove cgroup root: %v", err)
			}
			cancel()
		}
	}()
	for _, side := range []string{"kubelet", "podstart"} {
		nd, err := startNode(ctx, c, d, side, cl.NodeKubeconfig, kubeletKubeconfig)
		if nd != nil {
			nodes = append(nodes, nd)
		}
		if err != nil {
			return nil, err
		}
	}
	for _, nd := range nodes {
		if err := waitFor(ctx, c.timeout, // kubelet took over 2 min under load 80
			func() (bool, error) {
				if nd.agent.exited() {
					return false, fmt.Errorf("%s exited; log tail:\n%s", nd.side, tail(nd.agent.log, 30))
				}
				no, err := admin.CoreV1().Nodes().Get(ctx, nd.name, metav1.GetOptions{})
				return err == nil && nodeIsReady(no), nil
			}); err != nil {
			return nil, fmt.Errorf("node %s not Ready: %w", nd.name, err)
		}
	}
	if err := sleep(ctx, 10*time.Second); err != nil { // both past their start
		return nil, err
	}

	rs = make([]sideResult, len(nodes))
	for i, nd := range nodes {
		rs[i] = sideResult{side: nd.side, n: n}
	}
	if err := burst(ctx, c, admin, nodes, rs, n, auditLog, filepath.Join(profDir, fmt.Sprintf("burst-%d", n))); err != nil {
		return nil, err
	}
	if err := sleep(ctx, c.settle); err != nil {
		return nil, err
	}
	if err := steady(ctx, c, nodes, rs, n, auditLog, filepath.Join(profDir, fmt.Sprintf("steady-%d.pb.gz", n))); err != nil {
		return nil, err
	}
	return rs, nil
}

// startNode starts a fresh fakecri and the side's agent on it.
func startNode(ctx context.Context, c clusterConfig, d, side, agentKubeconfig, kubeletKubeconfig string) (*node, error) {
	sd := filepath.Join(d, side)
	root, logs, imageFs := filepath.Join(sd, "root"), filepath.Join(sd, "logs"), filepath.Join(sd, "imagefs")
	for _, dir := range []string{root, logs, imageFs} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	sock, statsSock := filepath.Join(sd, "cri.sock"), filepath.Join(sd, "stats.sock")
	fake, err := start(filepath.Join(sd, "fakecri.log"), filepath.Join(c.bin, "fakecri"),
		"-socket="+sock, "-stats-socket="+statsSock, "-image-fs="+imageFs, "-images="+c.image)
	if err != nil {
		return nil, err
	}
	nd := &node{side: side, fake: fake, stats: statsClient(statsSock)}
	if err := waitFor(ctx, 20*time.Second, func() (bool, error) { _, err := nd.stats(); return err == nil, nil }); err != nil {
		return nd, fmt.Errorf("fakecri did not answer: %w", err)
	}
	cgroupRoot := c.cgroupPrefix + "-" + side
	if err := kubeletrun.MakeCgroupRoot(cgroupRoot); err != nil {
		return nd, fmt.Errorf("cgroup root: %w", err)
	}
	endpoint := "unix://" + sock
	switch side {
	case "kubelet":
		nd.name = kubeletNode
		cfg := filepath.Join(sd, "kubelet.yaml")
		if err := os.WriteFile(cfg, []byte(defaultKubeletYAML(endpoint, logs, cgroupRoot, c.portBase+1, c.portBase+3, cgroupV1())), 0o644); err != nil {
			return nd, err
		}
		nd.agent, err = start(filepath.Join(sd, "kubelet.log"), c.kubelet, "--config="+cfg, "--kubeconfig="+kubeletKubeconfig,
			"--root-dir="+root, "--hostname-override="+kubeletNode)
	case "podstart":
		nd.name = agentNode
		nd.agent, err = startEnv(filepath.Join(sd, "nodeagent.log"), []string{pprofEnv + "=" + c.pprofAddr()}, filepath.Join(c.bin, "nodeagent"),
			"-kubeconfig="+agentKubeconfig, "-node-name="+agentNode, "-cri="+endpoint, "-root-dir="+root, "-pod-logs-dir="+logs,
			"-cgroup-root="+cgroupRoot, "-max-pods=1000", "-node-api-address="+net.JoinHostPort("127.0.0.1", strconv.Itoa(c.portBase+2)))
	}
	return nd, err
}

// pprofEnv is examples/nodeagent's PODSTART_PPROF_ADDR.
const pprofEnv = "PODSTART_PPROF_ADDR"

func (c clusterConfig) pprofAddr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.portBase+4))
}

// defaultKubeletYAML is kubelet's default configuration plus what the tier
// must set: the CRI endpoint, the pod log directory (the default,
// /var/log/pods, is shared with the host's), the cgroup root, ports of the
// tier's own (the defaults 10250 and 10248 may be taken), maxPods above
// 500, and on a cgroup v1 host failCgroupV1: false (kubelet v1.37 refuses
// to start there otherwise).
func defaultKubeletYAML(endpoint, logs, cgroupRoot string, port, healthzPort int, v1 bool) string {
	y := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: %s
podLogsDir: %s
cgroupRoot: %s
port: %d
healthzPort: %d
maxPods: 1000
`, endpoint, logs, cgroupRoot, port, healthzPort)
	if v1 {
		y += "failCgroupV1: false\n"
	}
	return y
}

// cgroupV1 reports whether the host's cgroup hierarchy is v1 (or hybrid).
func cgroupV1() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err != nil
}

func nodeIsReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func clientFrom(kubeconfig string, qps float32, burst int) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = qps, burst
	return kubernetes.NewForConfig(cfg)
}

func statsClient(sock string) func() (Stats, error) {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	return func() (Stats, error) {
		var s Stats
		resp, err := client.Get("http://fakecri/stats")
		if err != nil {
			return s, err
		}
		defer resp.Body.Close()
		return s, json.NewDecoder(resp.Body).Decode(&s)
	}
}

// benchPod is a pod bound to node: one busybox container that runs until
// stopped, the service account's token volume added by admission.
func benchPod(node string, i int, image string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%04d", node, i), Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: image, ImagePullPolicy: corev1.PullIfNotPresent}}}}
}

// readyCounter counts, per node, the pods Ready as an informer of the
// admin sees them.
type readyCounter struct {
	mu    sync.Mutex
	ready map[string]map[string]bool // node → pod → Ready
}

func (r *readyCounter) update(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	ready := false
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ready[p.Spec.NodeName] == nil {
		r.ready[p.Spec.NodeName] = map[string]bool{}
	}
	r.ready[p.Spec.NodeName][p.Name] = ready
}

func (r *readyCounter) count(node string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ok := range r.ready[node] {
		if ok {
			n++
		}
	}
	return n
}

// burst creates n pods on each node (interleaved, 8 creators) and waits
// until each node's n pods are Ready; each node's CPU, API requests and
// CRI calls are taken from the first creation to its n-th Ready pod. The
// agent's CPU profile is taken in 5 s slices meanwhile.
func burst(ctx context.Context, c clusterConfig, admin kubernetes.Interface, nodes []*node, rs []sideResult, n int, auditLog, profPrefix string) error {
	rc := &readyCounter{ready: map[string]map[string]bool{}}
	factory := informers.NewSharedInformerFactoryWithOptions(admin, 0, informers.WithNamespace("default"))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: rc.update, UpdateFunc: func(_, o any) { rc.update(o) }}); err != nil {
		return err
	}
	ictx, stopInformer := context.WithCancel(ctx)
	defer stopInformer()
	factory.Start(ictx.Done())
	if !cache.WaitForCacheSync(ictx.Done(), inf.HasSynced) {
		return fmt.Errorf("pod informer did not sync")
	}
	cpu0 := make([]float64, len(nodes))
	cri0 := make([]Stats, len(nodes))
	for i, nd := range nodes {
		var err error
		if cri0[i], err = nd.stats(); err != nil {
			return err
		}
		if cpu0[i], err = cpuSeconds(nd.agent.cmd.Process.Pid); err != nil {
			return err
		}
	}
	for i := range rs {
		rs[i].loadBefore = loadavg()
	}
	pctx, stopProfiles := context.WithCancel(ctx)
	profDone := make(chan []string, 1)
	if c.profile {
		go func() { profDone <- profileSlices(pctx, c.pprofAddr(), profPrefix) }()
	} else {
		profDone <- nil
	}
	t0 := time.Now()
	jobs := make(chan *corev1.Pod)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for p := range jobs {
				if _, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
					select {
					case errs <- fmt.Errorf("create %s: %w", p.Name, err):
					default:
					}
				}
			}
		})
	}
	for i := range n {
		for _, nd := range nodes {
			jobs <- benchPod(nd.name, i, c.image)
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		stopProfiles()
		<-profDone
		return err
	default:
	}
	done := make([]time.Time, len(nodes))
	cpu1 := make([]float64, len(nodes))
	cri1 := make([]Stats, len(nodes))
	err := waitFor(ctx, c.timeout, func() (bool, error) {
		all := true
		for i, nd := range nodes {
			if !done[i].IsZero() {
				continue
			}
			if nd.agent.exited() {
				return false, fmt.Errorf("%s exited; log tail:\n%s", nd.side, tail(nd.agent.log, 30))
			}
			if rc.count(nd.name) < n {
				all = false
				continue
			}
			done[i] = time.Now()
			var err error
			if cpu1[i], err = cpuSeconds(nd.agent.cmd.Process.Pid); err != nil {
				return false, err
			}
			if cri1[i], err = nd.stats(); err != nil {
				return false, err
			}
			if nd.side == "podstart" {
				stopProfiles()
			}
		}
		return all, nil
	})
	stopProfiles()
	profiles := <-profDone
	if err != nil {
		for _, nd := range nodes {
			err = fmt.Errorf("%w; %s: %d of %d pods Ready", err, nd.side, rc.count(nd.name), n)
		}
		return err
	}
	if err := sleep(ctx, time.Second); err != nil { // the audit log written
		return err
	}
	for i, nd := range nodes {
		api, failed, err := auditCounts(auditLog, "system:node:"+nd.name, t0, done[i])
		if err != nil {
			return err
		}
		rs[i].burstAPIFailed = failed
		rs[i].burst = done[i].Sub(t0)
		rs[i].burstCPU = cpu1[i] - cpu0[i]
		rs[i].burstAPI = api
		rs[i].burstCRI = map[string]float64{}
		for m, v := range cri1[i].Calls {
			rs[i].burstCRI[m] = float64(v - cri0[i].Calls[m])
		}
	}
	if len(profiles) > 0 {
		if err := summarizeProfiles(os.Stdout, fmt.Sprintf("podstart agent, burst of %d pods", n), profPrefix+".txt", profiles); err != nil {
			log.Printf("burst profile: %v", err)
		}
	}
	return nil
}

// steady measures both nodes over the same window: CPU, RSS (sampled every
// 5 s), API requests and CRI calls per minute, and the agent's CPU
// profile over the window.
func steady(ctx context.Context, c clusterConfig, nodes []*node, rs []sideResult, n int, auditLog, profPath string) error {
	for i := range rs {
		rs[i].loadBefore += " | " + loadavg()
	}
	cpu0 := make([]float64, len(nodes))
	cri0 := make([]Stats, len(nodes))
	for i, nd := range nodes {
		var err error
		if cri0[i], err = nd.stats(); err != nil {
			return err
		}
		if cpu0[i], err = cpuSeconds(nd.agent.cmd.Process.Pid); err != nil {
			return err
		}
	}
	t0 := time.Now()
	profErr := make(chan error, 1)
	if c.profile {
		go func() { profErr <- fetchProfile(ctx, c.pprofAddr(), c.window, profPath) }()
	} else {
		profErr <- nil
	}
	rss := make([][]float64, len(nodes))
	for end := t0.Add(c.window); time.Now().Before(end); {
		for i, nd := range nodes {
			kb, err := rssKiB(nd.agent.cmd.Process.Pid)
			if err != nil {
				return fmt.Errorf("%s: %w; log tail:\n%s", nd.side, err, tail(nd.agent.log, 30))
			}
			rss[i] = append(rss[i], float64(kb)/1024)
		}
		if err := sleep(ctx, min(5*time.Second, time.Until(end))); err != nil {
			return err
		}
	}
	t1 := time.Now()
	minutes := t1.Sub(t0).Minutes()
	for i, nd := range nodes {
		cpu1, err := cpuSeconds(nd.agent.cmd.Process.Pid)
		if err != nil {
			return err
		}
		cri1, err := nd.stats()
		if err != nil {
			return err
		}
		if cri1.Running < n {
			return fmt.Errorf("%s: only %d of %d containers running at the end", nd.side, cri1.Running, n)
		}
		rs[i].cpuPerMin = (cpu1 - cpu0[i]) / minutes
		rs[i].criPerMin = map[string]float64{}
		for m, v := range cri1.Calls {
			rs[i].criPerMin[m] = float64(v-cri0[i].Calls[m]) / minutes
		}
		for _, v := range rss[i] {
			rs[i].rssMiB += v / float64(len(rss[i]))
			rs[i].rssMaxMiB = max(rs[i].rssMaxMiB, v)
		}
		rs[i].loadAfter = loadavg()
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", nd.agent.cmd.Process.Pid)); err == nil {
			rs[i].rssParts = rssParts(string(b))
		}
	}
	if c.profile {
		heap := strings.TrimSuffix(profPath, ".pb.gz") + "-heap.pb.gz"
		if err := fetchNamed(ctx, c.pprofAddr(), "heap", heap); err != nil {
			log.Printf("heap profile: %v", err)
		} else if out, err := exec.Command("go", "tool", "pprof", "-top", "-sample_index=inuse_space", "-nodecount=15", heap).Output(); err != nil {
			log.Printf("heap profile: %v", err)
		} else {
			fmt.Printf("Heap profile (in use), podstart agent at the end of the steady window at %d pods:\n%s", n, out)
		}
	}
	if err := <-profErr; err != nil {
		log.Printf("steady profile: %v", err)
	} else if c.profile {
		if err := summarizeProfiles(os.Stdout, fmt.Sprintf("podstart agent, steady window at %d pods", n), profPath+".txt", []string{profPath}); err != nil {
			log.Printf("steady profile: %v", err)
		}
	}
	if err := sleep(ctx, time.Second); err != nil {
		return err
	}
	for i, nd := range nodes {
		api, _, err := auditCounts(auditLog, "system:node:"+nd.name, t0, t1)
		if err != nil {
			return err
		}
		rs[i].apiPerMin = map[string]float64{}
		for k, v := range api {
			rs[i].apiPerMin[k] = v / minutes
		}
	}
	return nil
}
