//go:build chaos

package chaos

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/test/cluster"
	"github.com/podstart/podstart/test/e2elock"
	"github.com/podstart/podstart/test/kubeletrun"
)

var (
	seedFlag     = flag.Int64("chaos.seed", 0, "seed of the churn and the faults (0: time-based; the seed used is logged)")
	podsFlag     = flag.Int("chaos.pods", 8, "pods created during the churn")
	faultsFlag   = flag.Int("chaos.faults", 4, "faults injected during the churn")
	sabotage     = flag.Bool("chaos.sabotage", false, "a check of the checks: stop one recorded running container through the CRI after convergence; the run must then fail with 1 unexpected restart")
	freezeFlag   = flag.Duration("chaos.apiserver-freeze", 10*time.Second, "how long an apiserver-stop fault keeps kube-apiserver frozen (SIGSTOP)")
	downFlag     = flag.Duration("chaos.apiserver-down", 10*time.Second, "how long an apiserver-down fault keeps kube-apiserver stopped (the issue's 60s on demand)")
	diskFullFlag = flag.Duration("chaos.disk-full", 5*time.Second, "how long a disk-full fault keeps the root directory's file system full (at least until the next operation)")
	rootSize     = flag.String("chaos.root-size", "128m", "size of the tmpfs mounted as the agent's root directory")
	rootInodes   = flag.Int("chaos.root-inodes", 20000, "inodes of the tmpfs mounted as the agent's root directory (a disk-full fault takes them all)")
	onlyFlag     = flag.String("chaos.only", "", "comma-separated fault kinds to draw from (default: all; see README.md)")
	cgroupFlag   = flag.String("chaos.cgroup-root", "", "the agent's -cgroup-root (default /podstart-chaos/<pid>: a tree of its own, removed at the end)")
)

const (
	node = "podstart-chaos"
	ns   = "default"
)

// env is what a run needs from test/e2e/env.sh and test/cluster.
type env struct {
	endpoint, dir, image string
}

func chaosEnv(t *testing.T) env {
	t.Helper()
	e := env{endpoint: os.Getenv("PODSTART_CRI_ENDPOINT"), dir: os.Getenv("PODSTART_E2E_DIR"), image: os.Getenv("PODSTART_E2E_OPEN_IMAGE")}
	if e.dir == "" {
		e.dir = "/tmp/podstart-e2e"
	}
	if e.endpoint == "" || e.image == "" {
		if os.Getenv("PODSTART_E2E_REQUIRED") == "1" {
			t.Fatalf("PODSTART_E2E_REQUIRED=1 but PODSTART_CRI_ENDPOINT (%q) or PODSTART_E2E_OPEN_IMAGE (%q) is unset", e.endpoint, e.image)
		}
		t.Skip("needs 'bash test/e2e/env.sh up' and its env file sourced")
	}
	if _, _, err := cluster.Binaries(""); err != nil {
		if os.Getenv("PODSTART_E2E_REQUIRED") == "1" {
			t.Fatalf("PODSTART_E2E_REQUIRED=1 but %v", err)
		}
		t.Skipf("the chaos tier needs the cluster binaries: %v", err)
	}
	if err := e2elock.Shared(e.dir); err != nil {
		t.Fatal(err)
	}
	return e
}

func clientFor(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// Certificates as data: client-go's certificate file watcher outlives
	// the client.
	if err := rest.LoadTLSFiles(cfg); err != nil {
		t.Fatal(err)
	}
	cfg.CertFile, cfg.KeyFile, cfg.CAFile = "", "", ""
	cfg.QPS, cfg.Burst = 50, 100
	cfg.Timeout = 20 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestChaos runs one seed: churn with faults, then the checks (see
// README.md).
func TestChaos(t *testing.T) {
	e := chaosEnv(t)
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("chaos seed %d (rerun with -chaos.seed=%d), %d pods, %d faults", seed, seed, *podsFlag, *faultsFlag)
	r := newRun(t, e, seed, setup{tmpfsRoot: true})

	r.churn(*podsFlag, *faultsFlag)
	r.converge()
	if *sabotage {
		r.stopOneContainer()
		r.converge()
	}
	r.checkLeftovers("after the churn")
	r.checkResized()
	r.checkStateFiles("after the churn")
	r.compareWithFreshAgent()
	r.checkRestarts()
	r.checkStateFiles("after a fresh agent")
	r.deleteAll()
	r.checkLeftovers("after deleting every pod")
	t.Logf("chaos seed %d: hooked kills %d struck, %d not reached; images removed %d; 'no space left' errors in the agent's log %d, in events %d; resizes %d (%d pods checked against the runtime); pod cgroups of live pods seen %d; state files read %d, corrupt %d, stray temporary files %d",
		seed, r.hooked, r.hookMissed, r.imagesRemoved, r.enospc, r.enospcEvents(), r.resizes, r.resizesChecked, r.podCgroupsSeen, r.stateFiles, r.corrupt, r.strayTemp)
	t.Logf("chaos seed %d: runs 1, faults %d (%s), pods %d, leftovers %d, unexpected restarts %d",
		seed, len(r.faults), strings.Join(r.faults, ", "), len(r.created), r.leftovers, r.unexpectedRestarts)
}

// setup is what differs between the tier's runs.
type setup struct {
	tmpfsRoot bool // the root directory on a tmpfs of its own (-chaos.root-size)
	// proxy, if set, starts a CRI proxy listening on socket, in front of
	// the runtime, and returns its endpoint for the agent.
	proxy func(socket string) (string, error)
	env   []string // the agent's first run's extra environment
}

// newRun starts the cluster and the agent, and returns the run once the
// node is Ready.
func newRun(t *testing.T, e env, seed int64, o setup) *run {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))

	tmp := t.TempDir()
	bin := buildAgent(t, tmp)
	c := cluster.StartT(t, cluster.Options{NodeName: node})
	admin := clientFor(t, c.AdminKubeconfig)
	ctx := context.Background()
	for _, obj := range []func() error{
		func() error {
			_, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": "CA"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Data: map[string][]byte{"greeting": []byte("hello")}}, metav1.CreateOptions{})
			return err
		},
	} {
		if err := obj(); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	dialCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rt, err := runtime.Dial(dialCtx, e.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })

	cri := e.endpoint
	if o.proxy != nil {
		p, err := o.proxy(filepath.Join(tmp, "cri.sock"))
		if err != nil {
			t.Fatal(err)
		}
		cri = p
	}
	root := filepath.Join(tmp, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	// The root directory is a small file system of its own, for the
	// disk-full fault.
	if o.tmpfsRoot {
		if err := syscall.Mount("tmpfs", root, "tmpfs", 0, fmt.Sprintf("mode=0755,size=%s,nr_inodes=%d", *rootSize, *rootInodes)); err != nil {
			t.Fatalf("mount a tmpfs at the root directory: %v", err)
		}
	}
	// Whatever the agent left mounted goes before the temporary directory
	// does (cleanups run last-in first-out); a leftover mount already
	// failed the test below.
	t.Cleanup(func() {
		unmountBeneath(t, root)
		syscall.Unmount(root, syscall.MNT_DETACH)
	})
	cgroupRoot := *cgroupFlag
	if cgroupRoot == "" {
		cgroupRoot = fmt.Sprintf("/podstart-chaos/%d", os.Getpid())
	}
	if err := kubeletrun.MakeCgroupRoot(cgroupRoot); err != nil {
		t.Fatal(err)
	}
	// After the sandboxes are gone (cleanups run last-in first-out).
	t.Cleanup(func() { removeCgroupTree(t, cgroupRoot) })
	a := &agent{t: t, bin: bin, log: filepath.Join(tmp, "agent.log"), args: []string{
		"-kubeconfig", c.NodeKubeconfig, "-node-name", node, "-cri", cri, "-root-dir", root,
		// QoS and pod cgroups in a cgroup tree of the run's own: the
		// agent removes the pod cgroups it does not hold, so it must
		// not share its tree with another agent.
		"-cgroups-per-qos=true", "-cgroup-root", cgroupRoot,
		"-node-api-address", "",
		"-image-gc=false", "-eviction=false",
	}}
	r := &run{t: t, rng: rng, admin: admin, rt: rt, agent: a, env: e, cluster: c, root: root, cgroupRoot: cgroupRoot,
		created: map[types.UID]*podInfo{}, seen: map[containerKey]seenContainer{}}
	// After the agent stopped (cleanups run last-in first-out): a failed
	// run's pods are still on the runtime; remove their sandboxes, so that
	// no container of this run outlives it (containerd would reopen their
	// logs beneath the removed temporary directory when it restarts).
	t.Cleanup(r.removeSandboxes)
	t.Cleanup(func() {
		a.kill(syscall.SIGTERM)
		// Kept past the test's temporary directory.
		keep := filepath.Join(e.dir, fmt.Sprintf("chaos-agent-%d.log", seed))
		if b, err := os.ReadFile(a.log); err == nil && os.WriteFile(keep, b, 0o644) == nil && t.Failed() {
			t.Logf("agent log in %s; its last 20 lines:\n%s", keep, a.tail(20))
		}
	})
	t.Cleanup(r.thaw)
	a.nextEnv = o.env
	a.start()
	r.waitNodeReady()
	return r

}

// eventually polls cond every 200ms until it holds or timeout passes; it
// fails the test with what last returned otherwise.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v: %s", what, timeout, detail)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// unmountBeneath lazily unmounts every mount under dir, deepest first.
func unmountBeneath(t *testing.T, dir string) {
	ms, err := mountsBeneath(dir)
	if err != nil {
		t.Error(err)
		return
	}
	for i := len(ms) - 1; i >= 0; i-- {
		syscall.Unmount(ms[i], syscall.MNT_DETACH)
	}
}

// envSh runs test/e2e/env.sh with args for this run's environment.
func envSh(dir string, args ...string) error {
	cmd := exec.Command("bash", append([]string{"../e2e/env.sh"}, args...)...)
	cmd.Env = append(os.Environ(), "PODSTART_E2E_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("env.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}
