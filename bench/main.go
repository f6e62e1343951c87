// Command bench is the steady-state bench tier of issue 27: for each N it
// starts N static pods under the real kubelet (standalone) and under
// podstart's podworker (bench/cmd/podagent), each on a fresh runtime/fake
// served in a process of its own (bench/cmd/fakecri), and measures, once
// all N containers run and a settling time has passed, over a window:
// the CPU time of the agent's process (utime+stime of it and its waited
// children, /proc/<pid>/stat), its resident memory (VmRSS, the mean of
// samples taken through the window) and the CRI calls the fake served
// per minute. It prints one line per run and a table of kubelet/podstart
// ratios. It is run on demand (see README.md), never by go test.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/podstart/podstart/test/kubeletrun"
)

// Stats is fakecri's GET /stats answer.
type Stats struct {
	Calls     map[string]int64 `json:"calls"`
	Sandboxes int              `json:"sandboxes"`
	Running   int              `json:"running"`
}

func (s Stats) total() int64 {
	var n int64
	for _, c := range s.Calls {
		n += c
	}
	return n
}

// result is one run: one agent, N pods.
type result struct {
	side       string
	n          int
	toRunning  time.Duration // from the agent's start until N containers ran
	cpuPerMin  float64       // CPU seconds per minute in the window
	rssMiB     float64       // mean VmRSS in the window
	rssMaxMiB  float64       // largest VmRSS sample
	callsMin   float64       // CRI calls per minute in the window
	byMethod   map[string]float64
	loadBefore string
	loadAfter  string
}

type config struct {
	dir, kubelet, image string
	window, settle      time.Duration
	timeout             time.Duration
	keep                bool
	podCgroups          bool
	cgroupPrefix        string // a side's cgroup root is <prefix>-<side>
	imageFs             string
	kubeletArgs         []string // more flags for kubelet
	nodeIP              string
	bin                 string // where fakecri and podagent were built
}

// agentBuildArgs are the go command's arguments that build podagent, as a
// node agent is shipped (with CGO_ENABLED=0: a static binary, Go's own
// resolver; it only dials a unix socket): the build tag grpcnotrace drops
// gRPC's golang.org/x/net/trace, whose html/template calls reflect's
// MethodByName, which makes the linker keep every exported method of every
// type it keeps (k8s.io/api's). Measured: 32.5 MB binary → 25.8 MB, and
// 18.8 → 14.1 MiB of the binary's (and libc's) pages resident.
func agentBuildArgs(out string) []string {
	return []string{"build", "-tags", "grpcnotrace", "-o", out, "github.com/podstart/podstart/bench/cmd/podagent"}
}

func main() {
	ns := flag.String("n", "100,250,500", "comma-separated pod counts")
	sides := flag.String("sides", "kubelet,podstart", "which agents to run, in order")
	var c config
	flag.StringVar(&c.dir, "dir", "/tmp/podstart-bench", "work directory (emptied for each run)")
	flag.StringVar(&c.kubelet, "kubelet", "/tmp/podstart-e2e/bin/kubelet", "kubelet v1.37.2 binary (bash test/kubelet/build.sh)")
	flag.StringVar(&c.image, "image", "docker.io/library/busybox:1.35", "the pods' image (present on the fake)")
	flag.DurationVar(&c.window, "window", 60*time.Second, "steady-state measurement window")
	flag.DurationVar(&c.settle, "settle", 20*time.Second, "wait after all containers run before measuring")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Minute, "time allowed for all N containers to run")
	flag.StringVar(&c.imageFs, "image-fs", "", "a directory the fake reports as its image filesystem (default: one in the run's directory); kubelet's cAdvisor must know its device")
	flag.BoolVar(&c.keep, "keep", false, "keep each run's directory (logs, manifests)")
	flag.BoolVar(&c.podCgroups, "pod-cgroups", true, "kubelet's default cgroupsPerQOS (QoS and pod cgroups, under a cgroup root of each side's own: /podstart-bench-<side>); false: the recipe's cgroupsPerQOS false, where kubelet's cAdvisor watches every cgroup of the host")
	kubeletArgs := flag.String("kubelet-args", "", `more kubelet flags, space-separated (e.g. "--v=4")`)
	mode := flag.String("mode", "static", `"static": N static pods, podworker alone against standalone kubelet (issue 27); "cluster": the whole agent (examples/nodeagent) against kubelet, both joined to one kube-apiserver (issue 41; see README.md)`)
	binDir := flag.String("bin-dir", "/tmp/podstart-e2e/bin", "cluster mode: where kube-apiserver and etcd are (bash test/cluster/build.sh)")
	cgroupPrefix := flag.String("cgroup-prefix", "/podstart-bench", "a side's cgroup root is <prefix>-<side>")
	portBase := flag.Int("port-base", 5430, "cluster mode: kubelet's port is base+1, the agent's node API base+2, kubelet's healthz base+3, the agent's pprof base+4")
	profile := flag.Bool("profile", true, "cluster mode: take the agent's CPU profile in the burst and the steady window")
	flag.Parse()
	c.kubeletArgs = strings.Fields(*kubeletArgs)
	c.cgroupPrefix = *cgroupPrefix
	counts, err := parseCounts(*ns)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *mode == "cluster" {
		if *sides != "kubelet,podstart" || len(c.kubeletArgs) > 0 || !c.podCgroups || c.imageFs != "" {
			log.Fatal("cluster mode runs both sides with kubelet's defaults: -sides, -kubelet-args, -pod-cgroups and -image-fs do not apply")
		}
		err := clusterMain(ctx, clusterConfig{dir: c.dir, binDir: *binDir, kubelet: c.kubelet, image: c.image, window: c.window, settle: c.settle,
			timeout: c.timeout, cgroupPrefix: c.cgroupPrefix, portBase: *portBase, profile: *profile, keep: c.keep}, counts)
		if err != nil {
			log.Fatal(err)
		}
		return
	} else if *mode != "static" {
		log.Fatalf("-mode %q: static or cluster", *mode)
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		log.Fatal(err)
	}
	c.bin = filepath.Join(c.dir, "bin")
	for _, cmd := range []string{"fakecri", "podagent"} {
		build := exec.Command("go", "build", "-o", filepath.Join(c.bin, cmd), "github.com/podstart/podstart/bench/cmd/"+cmd)
		if cmd == "podagent" {
			build = exec.Command("go", agentBuildArgs(filepath.Join(c.bin, cmd))...)
			build.Env = append(os.Environ(), "CGO_ENABLED=0")
		}
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			log.Fatalf("build %s: %v", cmd, err)
		}
	}
	if strings.Contains(*sides, "kubelet") {
		if _, err := os.Stat(c.kubelet); err != nil {
			log.Fatalf("no kubelet binary (bash test/kubelet/build.sh): %v", err)
		}
	}
	c.nodeIP = hostIP()
	var results []result
	fmt.Printf("%-8s %5s %10s %10s %9s %9s %10s  load before / after\n", "side", "N", "to-running", "CPU s/min", "RSS MiB", "RSS max", "CRI /min")
	for _, n := range counts {
		for _, side := range strings.Split(*sides, ",") {
			r, err := run(ctx, c, side, n)
			if err != nil {
				log.Fatalf("%s, %d pods: %v", side, n, err)
			}
			results = append(results, r)
			fmt.Printf("%-8s %5d %10s %10.3f %9.1f %9.1f %10.1f  %s / %s\n", r.side, r.n, r.toRunning.Round(100*time.Millisecond),
				r.cpuPerMin, r.rssMiB, r.rssMaxMiB, r.callsMin, r.loadBefore, r.loadAfter)
			fmt.Printf("         calls/min by method: %s\n", methods(r.byMethod))
		}
	}
	fmt.Println()
	printRatios(os.Stdout, results)
}

func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad pod count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// printRatios prints, per N with both sides, kubelet's figures over
// podstart's.
func printRatios(w io.Writer, results []result) {
	by := map[int]map[string]result{}
	var ns []int
	for _, r := range results {
		if by[r.n] == nil {
			by[r.n] = map[string]result{}
			ns = append(ns, r.n)
		}
		by[r.n][r.side] = r
	}
	fmt.Fprintf(w, "%5s | %21s %7s | %19s %7s | %15s | %15s\n", "N", "CPU s/min kub / pod", "ratio", "RSS MiB kub / pod", "ratio", "CRI/min kub/pod", "to-running k/p")
	for _, n := range ns {
		k, okk := by[n]["kubelet"]
		p, okp := by[n]["podstart"]
		if !okk || !okp {
			continue
		}
		fmt.Fprintf(w, "%5d | %10.3f / %8.3f %6.1fx | %8.1f / %8.1f %6.1fx | %7.0f / %5.0f | %6s / %6s\n", n,
			k.cpuPerMin, p.cpuPerMin, ratio(k.cpuPerMin, p.cpuPerMin), k.rssMiB, p.rssMiB, ratio(k.rssMiB, p.rssMiB),
			k.callsMin, p.callsMin, k.toRunning.Round(time.Second), p.toRunning.Round(time.Second))
	}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func methods(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	var b strings.Builder
	for _, k := range keys {
		if m[k] > 0 {
			fmt.Fprintf(&b, "%s %.1f, ", k, m[k])
		}
	}
	return strings.TrimSuffix(b.String(), ", ")
}

// manifest is one static pod: one container of image that runs until
// stopped (the fake runs an image's own command forever).
func manifest(i int, image string) []byte {
	return []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bench-%04d","namespace":"default"},`+
		`"spec":{"containers":[{"name":"app","image":%q,"imagePullPolicy":"IfNotPresent"}]}}`+"\n", i, image))
}

// kubeletYAML is test/kubeletrun's configuration (the recipe's: no swap
// check, anonymous API on loopback, image GC off; kubelet's pod cgroups
// under cgroupRoot, or none when it is "") with kubelet's default
// fileCheckFrequency (20 s; the recipe's 1 s would make kubelet read every
// manifest each second) and maxPods 1000.
func kubeletYAML(endpoint, logs, manifests, cgroupRoot string, port int) string {
	y := kubeletrun.Config{Endpoint: endpoint, Port: port, PodLogsDir: logs, StaticPodPath: manifests,
		PodCgroups: cgroupRoot != "", CgroupRoot: cgroupRoot}.YAML()
	y = strings.Replace(y, "fileCheckFrequency: 1s\n", "", 1)
	return y + "maxPods: 1000\n"
}

// run is one agent with n pods on a fresh fake.
func run(ctx context.Context, c config, side string, n int) (result, error) {
	r := result{side: side, n: n}
	d := filepath.Join(c.dir, fmt.Sprintf("%s-%d", side, n))
	if err := clean(d); err != nil {
		return r, err
	}
	defer func() {
		if !c.keep {
			clean(d)
		}
	}()
	manifests, root, logs, imageFs := filepath.Join(d, "manifests"), filepath.Join(d, "root"), filepath.Join(d, "logs"), filepath.Join(d, "imagefs")
	if c.imageFs != "" {
		imageFs = c.imageFs
	}
	for _, dir := range []string{manifests, root, logs, imageFs} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return r, err
		}
	}
	for i := 0; i < n; i++ {
		if err := os.WriteFile(filepath.Join(manifests, fmt.Sprintf("bench-%04d.json", i)), manifest(i, c.image), 0o644); err != nil {
			return r, err
		}
	}
	cgroupRoot := ""
	if c.podCgroups {
		cgroupRoot = c.cgroupPrefix + "-" + side
		if err := kubeletrun.MakeCgroupRoot(cgroupRoot); err != nil {
			return r, fmt.Errorf("cgroup root: %w", err)
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := kubeletrun.RemoveCgroupRoot(ctx, cgroupRoot); err != nil {
				log.Printf("remove cgroup root %s: %v", cgroupRoot, err)
			}
		}()
	}
	sock, statsSock := filepath.Join(d, "cri.sock"), filepath.Join(d, "stats.sock")
	fake, err := start(filepath.Join(d, "fakecri.log"), filepath.Join(c.bin, "fakecri"),
		"-socket="+sock, "-stats-socket="+statsSock, "-image-fs="+imageFs, "-images="+c.image)
	if err != nil {
		return r, err
	}
	defer fake.stop()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", statsSock)
		}}}
	stats := func() (Stats, error) {
		var s Stats
		resp, err := client.Get("http://fakecri/stats")
		if err != nil {
			return s, err
		}
		defer resp.Body.Close()
		return s, json.NewDecoder(resp.Body).Decode(&s)
	}
	if err := waitFor(ctx, 20*time.Second, func() (bool, error) { _, err := stats(); return err == nil, nil }); err != nil {
		return r, fmt.Errorf("fakecri did not answer: %w", err)
	}
	endpoint := "unix://" + sock
	var agent *proc
	switch side {
	case "kubelet":
		cfg := filepath.Join(d, "kubelet.yaml")
		port, err := freePort()
		if err != nil {
			return r, err
		}
		if err := os.WriteFile(cfg, []byte(kubeletYAML(endpoint, logs, manifests, cgroupRoot, port)), 0o644); err != nil {
			return r, err
		}
		agent, err = start(filepath.Join(d, "kubelet.log"), c.kubelet, append([]string{"--config=" + cfg, "--root-dir=" + root,
			"--hostname-override=bench", "--node-ip=" + c.nodeIP}, c.kubeletArgs...)...)
		if err != nil {
			return r, err
		}
	case "podstart":
		agent, err = start(filepath.Join(d, "podagent.log"), filepath.Join(c.bin, "podagent"), "-cri="+endpoint,
			"-manifests="+manifests, "-root-dir="+root, "-pod-logs-dir="+logs, "-node-name=bench", "-cgroup-root="+cgroupRoot)
		if err != nil {
			return r, err
		}
	default:
		return r, fmt.Errorf("unknown side %q (kubelet or podstart)", side)
	}
	defer agent.stop()
	began := time.Now()
	err = waitFor(ctx, c.timeout, func() (bool, error) {
		if agent.exited() {
			return false, fmt.Errorf("%s exited; log tail:\n%s", side, tail(agent.log, 30))
		}
		s, err := stats()
		return err == nil && s.Running >= n && s.Sandboxes >= n, nil
	})
	if err != nil {
		s, _ := stats()
		return r, fmt.Errorf("not all running (%d sandboxes, %d containers): %w", s.Sandboxes, s.Running, err)
	}
	r.toRunning = time.Since(began)
	if err := sleep(ctx, c.settle); err != nil {
		return r, err
	}
	r.loadBefore = loadavg()
	s0, err := stats()
	if err != nil {
		return r, err
	}
	cpu0, err := cpuSeconds(agent.cmd.Process.Pid)
	if err != nil {
		return r, err
	}
	t0 := time.Now()
	var rss []float64
	for end := t0.Add(c.window); time.Now().Before(end); {
		kb, err := rssKiB(agent.cmd.Process.Pid)
		if err != nil {
			return r, fmt.Errorf("%s: %w; log tail:\n%s", side, err, tail(agent.log, 30))
		}
		rss = append(rss, float64(kb)/1024)
		if err := sleep(ctx, min(5*time.Second, time.Until(end))); err != nil {
			return r, err
		}
	}
	cpu1, err := cpuSeconds(agent.cmd.Process.Pid)
	if err != nil {
		return r, err
	}
	s1, err := stats()
	if err != nil {
		return r, err
	}
	minutes := time.Since(t0).Minutes()
	r.loadAfter = loadavg()
	r.cpuPerMin = (cpu1 - cpu0) / minutes
	r.callsMin = float64(s1.total()-s0.total()) / minutes
	r.byMethod = map[string]float64{}
	for m, v := range s1.Calls {
		r.byMethod[m] = float64(v-s0.Calls[m]) / minutes
	}
	for _, v := range rss {
		r.rssMiB += v / float64(len(rss))
		r.rssMaxMiB = max(r.rssMaxMiB, v)
	}
	if s1.Running < n {
		return r, fmt.Errorf("only %d of %d containers running at the end", s1.Running, n)
	}
	return r, nil
}

// clean removes a run's directory: what kubelet mounted under it, its
// /var/log/containers links into it, then the files.
func clean(d string) error {
	if err := unmountAndUnlink(d); err != nil {
		return err
	}
	return os.RemoveAll(d)
}

// unmountAndUnlink undoes what kubelet and the agent did outside d's files:
// their mounts under d and their /var/log/containers links into it.
func unmountAndUnlink(d string) error {
	if err := kubeletrun.UnmountUnder(d); err != nil {
		return err
	}
	ents, _ := os.ReadDir("/var/log/containers")
	for _, e := range ents {
		p := filepath.Join("/var/log/containers", e.Name())
		if target, err := os.Readlink(p); err == nil && strings.HasPrefix(target, d+"/") {
			os.Remove(p)
		}
	}
	return nil
}

// proc is a child process in a process group of its own.
type proc struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func start(logPath, bin string, args ...string) (*proc, error) {
	return startEnv(logPath, nil, bin, args...)
}

// startEnv is start with env added to this process's environment.
func startEnv(logPath string, env []string, bin string, args ...string) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &proc{cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, then SIGKILL to the process group after 20 s.
func (p *proc) stop() {
	if p.exited() {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func waitFor(ctx context.Context, timeout time.Duration, ok func() (bool, error)) error {
	end := time.Now().Add(timeout)
	for {
		done, err := ok()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("timed out after %v", timeout)
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// userHZ is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on Linux).
const userHZ = 100

// cpuSeconds is the CPU time of pid and of its children it waited for:
// utime+stime+cutime+cstime of /proc/<pid>/stat.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStat(string(b))
}

// parseStat reads utime, stime, cutime and cstime (fields 14-17) of a
// /proc/<pid>/stat line, in seconds. The command name (field 2) is in
// parentheses and may hold spaces and parentheses: fields are counted
// after its last ")".
func parseStat(s string) (float64, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("stat: no command name")
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 15 {
		return 0, fmt.Errorf("stat: %d fields after the command name", len(f))
	}
	var ticks uint64
	for _, x := range f[11:15] {
		v, err := strconv.ParseUint(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("stat: %w", err)
		}
		ticks += v
	}
	return float64(ticks) / userHZ, nil
}

// rssKiB is VmRSS of /proc/<pid>/status, in KiB.
func rssKiB(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseRSS(string(b))
}

func parseRSS(status string) (uint64, error) {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("status: VmRSS %q", rest)
			}
			return strconv.ParseUint(f[0], 10, 64)
		}
	}
	return 0, errors.New("status: no VmRSS")
}

// loadavg is the first three fields of /proc/loadavg, as uptime prints them.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// hostIP is the node's IP as kubelet takes it (kubeletrun.HostIP).
func hostIP() string {
	ip, err := kubeletrun.HostIP()
	if err != nil {
		log.Fatal(err)
	}
	return ip
}

func tail(path string, lines int) string {
	b, _ := os.ReadFile(path)
	l := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}
