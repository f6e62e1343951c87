// Command podstart starts a pod the way kubelet does, with podstart's
// packages, and shows each step as it happens: by default a demo pod with
// two init containers, a sidecar and two apps, on the built-in fake
// runtime served on a unix socket (no root, no containerd).
//
//	go run ./examples/podstart                      # the demo pod on the fake runtime
//	go run ./examples/podstart -f pod.yaml          # your pod
//	go run ./examples/podstart -cri unix:///run/containerd/containerd.sock -config ~/.docker/config.json
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/yaml"

	"github.com/podstart/podstart/credentials"
	"github.com/podstart/podstart/defaults"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
	"github.com/podstart/podstart/validation"
)

//go:embed pod.yaml
var demoPod []byte

func main() {
	podFile := flag.String("f", "", "pod spec (YAML or JSON); default: the demo pod")
	endpoint := flag.String("cri", "", "CRI endpoint, e.g. unix:///run/containerd/containerd.sock; default: the built-in fake runtime")
	config := flag.String("config", "", "node docker config.json with registry credentials")
	root := flag.String("root", "", "kubelet-style root dir for pod directories (default: a temporary one)")
	keep := flag.Bool("keep", false, "leave the pod running on a real runtime")
	timeout := flag.Duration("timeout", 2*time.Minute, "give up after this long")
	flag.Parse()
	if err := run(os.Stdout, *podFile, *endpoint, *config, *root, *keep, *timeout, nil); err != nil {
		fmt.Fprintln(os.Stderr, "\npodstart:", err)
		os.Exit(1)
	}
}

// run starts the pod and, unless keep is set on a real runtime, removes
// everything of it afterwards. mounter mounts its emptyDir medium Memory
// volumes (nil: the host's).
func run(out io.Writer, podFile, endpoint, config, root string, keep bool, timeout time.Duration, mounter mounts.Mounter) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// Traces and events come from parallel steps (kills, pulls).
	out = &lockedWriter{w: out}
	pod, err := loadPod(podFile)
	if err != nil {
		return err
	}
	if root == "" {
		if root, err = os.MkdirTemp("", "podstart-root-"); err != nil {
			return err
		}
		defer os.RemoveAll(root)
	}
	real := endpoint != ""
	if !real {
		stop, ep, err := serveFake(pod)
		if err != nil {
			return err
		}
		defer stop()
		endpoint = ep
	}
	rt, err := runtime.Dial(ctx, endpoint, runtime.WithConnectTimeout(10*time.Second))
	if err != nil {
		return explain(err)
	}
	defer rt.Close()
	v, err := rt.Version(ctx, "v1")
	if err != nil {
		return explain(err)
	}
	fmt.Fprintf(out, "pod %s/%s on %s %s (%s)\n\n", pod.Namespace, pod.Name, v.RuntimeName, v.RuntimeVersion, endpoint)

	imageOpts := []images.Option{images.WithRecorder(printer{out})}
	if config != "" {
		data, err := os.ReadFile(config)
		if err != nil {
			return err
		}
		cf, err := credentials.ParseConfigJSON(data)
		if err != nil {
			return fmt.Errorf("%s: %w", config, err)
		}
		var node credentials.BasicKeyring
		node.Add(cf.Auths)
		imageOpts = append(imageOpts, images.WithNodeKeyring(&node))
	}
	ims := images.NewManager(rt, imageOpts...)
	defer ims.Close()
	syncOpts := []podsync.Option{podsync.WithRecorder(printer{out}), podsync.WithRootDir(root),
		podsync.WithPodLogsDir(filepath.Join(root, "logs"))}
	if mounter != nil {
		syncOpts = append(syncOpts, podsync.WithMounter(mounter))
	}
	syncer := podsync.NewSyncer(rt, ims, append(syncOpts,
		podsync.WithTrace(func(s podsync.Step) {
			status := "ok"
			if s.Err != nil {
				status = "FAILED"
			}
			fmt.Fprintf(out, "  %-10s %-12s %10s  %s\n", s.Name, s.Container, s.Duration.Round(10*time.Microsecond), status)
		}))...)
	// Deferred after the runtime, the fake and the root, so it runs before
	// they go: a memory-backed emptyDir must be unmounted while the pod's
	// directory is still there to find it.
	if !real || !keep {
		defer cleanup(syncer, pod, out)
	}

	start := time.Now()
	for n := 1; ; n++ {
		st, err := syncer.Status(ctx, pod)
		if err != nil {
			return explain(err)
		}
		if ready(pod, st) {
			fmt.Fprintf(out, "\npod running after %d syncs in %s\n\n", n-1, time.Since(start).Round(time.Millisecond))
			return summary(out, pod, st)
		}
		actions := podsync.ComputePodActions(pod, st, nil)
		fmt.Fprintf(out, "sync %d: %s\n", n, actions)
		result := syncer.SyncPod(ctx, pod, st, nil)
		if err := result.Error(); err != nil {
			return explain(err)
		}
		if len(result.Results) == 0 {
			// Waiting for an init container to finish on a real runtime.
			select {
			case <-ctx.Done():
				return explain(ctx.Err())
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

func loadPod(file string) (*corev1.Pod, error) {
	data := demoPod
	if file != "" {
		var err error
		if data, err = os.ReadFile(file); err != nil {
			return nil, err
		}
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(data, &pod); err != nil {
		return nil, fmt.Errorf("pod spec %s: %w", file, err)
	}
	if pod.Name == "" {
		return nil, fmt.Errorf("pod spec %s has no metadata.name", file)
	}
	if pod.Namespace == "" {
		pod.Namespace = "default"
	}
	if pod.UID == "" {
		h := fnv.New64a()
		h.Write([]byte(pod.Namespace + "/" + pod.Name))
		pod.UID = types.UID(fmt.Sprintf("podstart-%016x", h.Sum64()))
	}
	// What the API server would have filled in: pull policies, the
	// termination message path, restart and DNS policy, probe timings, ...
	defaults.Pod(&pod)
	// What the API server would have refused (SyncPod checks it too).
	if err := validation.Check(&pod); err != nil {
		return nil, fmt.Errorf("pod spec %s: %w", file, err)
	}
	return &pod, nil
}

// serveFake serves the fake runtime on a unix socket: regular init
// containers finish at once, everything else keeps running, and calls take
// roughly what a local containerd takes.
func serveFake(pod *corev1.Pod) (stop func(), endpoint string, err error) {
	inits := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		inits[c.Name] = !podsync.IsRestartableInitContainer(&c)
	}
	f := fake.New(fake.WithStartFunc(func(c *runtimeapi.ContainerConfig) *fake.Exit {
		if inits[c.Metadata.Name] {
			return &fake.Exit{Code: 0}
		}
		return nil
	}))
	for method, d := range map[string]time.Duration{"PullImage": 40 * time.Millisecond, "RunPodSandbox": 20 * time.Millisecond, "CreateContainer": 5 * time.Millisecond, "StartContainer": 10 * time.Millisecond} {
		f.SetLatency(method, d)
	}
	dir, err := os.MkdirTemp("", "podstart-demo-")
	if err != nil {
		return nil, "", err
	}
	srv := fake.NewServer(f)
	endpoint, err = srv.ServeUnix(filepath.Join(dir, "cri.sock"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	return func() { srv.Stop(); os.RemoveAll(dir) }, endpoint, nil
}

func ready(pod *corev1.Pod, st *podsync.PodStatus) bool {
	for _, c := range pod.Spec.Containers {
		if cs := st.FindContainerStatusByName(c.Name); cs == nil || cs.State != podsync.ContainerStateRunning {
			return false
		}
	}
	return true
}

func summary(out io.Writer, pod *corev1.Pod, st *podsync.PodStatus) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "CONTAINER\tKIND\tSTATE\tRESTARTS\tIMAGE\tID")
	row := func(kind string, c corev1.Container) {
		cs := st.FindContainerStatusByName(c.Name)
		if cs == nil {
			fmt.Fprintf(w, "%s\t%s\tnot created\t-\t%s\t-\n", c.Name, kind, c.Image)
			return
		}
		state := string(cs.State)
		if cs.State == podsync.ContainerStateExited {
			state = fmt.Sprintf("exited(%d)", cs.ExitCode)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%.12s\n", c.Name, kind, state, cs.RestartCount, c.Image, cs.ID)
	}
	for _, c := range pod.Spec.InitContainers {
		kind := "init"
		if podsync.IsRestartableInitContainer(&c) {
			kind = "sidecar"
		}
		row(kind, c)
	}
	for _, c := range pod.Spec.Containers {
		row("app", c)
	}
	if len(st.IPs) > 0 {
		fmt.Fprintf(w, "\npod IP %s, sandbox %.12s\n", strings.Join(st.IPs, ", "), st.SandboxStatuses[0].Id)
	}
	return w.Flush()
}

// explain turns an error into what a person should do about it.
func explain(err error) error {
	hints := []struct {
		class error
		hint  string
	}{
		{validation.ErrInvalidPod, "the API server would refuse this pod: fix the fields named below"},
		{images.ErrInvalidImageName, "an image reference in the pod spec is not valid"},
		{images.ErrImageNeverPull, "imagePullPolicy is Never and the image is not on the node"},
		{runtime.ErrUnauthorized, "the registry refused the credentials: check -config or the pull secret"},
		{images.ErrImagePull, "the image could not be pulled"},
		{podsync.ErrVolumeNotSupported, "a volume type needs a volume manager; this demo handles hostPath and emptyDir"},
		{podsync.ErrCreateContainerConfig, "the container's configuration could not be built (volumes, env, mounts)"},
		{runtime.ErrUnavailable, "the container runtime cannot be reached: is it running, and is the endpoint right?"},
		{context.DeadlineExceeded, "the pod did not start in time (-timeout)"},
	}
	for _, h := range hints {
		if errors.Is(err, h.class) {
			return fmt.Errorf("%s\n  cause: %w", h.hint, err)
		}
	}
	return err
}

// cleanup removes the pod as a node agent removes a deleted one: KillPod
// stops its containers (pre-stop hooks, then a short grace) and
// sandboxes, then podsync's RemovePod removes the containers with their
// logs, the sandboxes, the memory-backed volumes' tmpfs mounts and the
// pod's directories. Removing the sandboxes alone left a medium Memory
// emptyDir mounted under the root directory.
func cleanup(syncer *podsync.Syncer, pod *corev1.Pod, out io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := syncer.Status(ctx, pod)
	if err != nil {
		fmt.Fprintf(out, "\ncleanup: %v\n", err)
		return
	}
	grace := int64(0) // kubelet's minimum, 2 s, still applies
	if err := syncer.KillPod(ctx, pod, st, &grace).Error(); err != nil {
		fmt.Fprintf(out, "\ncleanup: %v\n", err)
	}
	if err := syncer.RemovePod(ctx, pod.UID); err != nil {
		fmt.Fprintf(out, "\ncleanup: %v\n", err)
		return
	}
	fmt.Fprintf(out, "\nremoved the pod: %d sandbox(es), its containers, volumes and directories (-keep to keep them on a real runtime)\n", len(st.SandboxStatuses))
}

// lockedWriter serialises writes from concurrent steps.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type printer struct{ w io.Writer }

func (p printer) Eventf(obj apiruntime.Object, typ, reason, format string, args ...interface{}) {
	target := ""
	if ref, ok := obj.(*corev1.ObjectReference); ok && ref.FieldPath != "" {
		target = ref.FieldPath[strings.Index(ref.FieldPath, "{")+1 : len(ref.FieldPath)-1]
	}
	fmt.Fprintf(p.w, "    event %-7s %-10s %-12s %s\n", typ, reason, target, fmt.Sprintf(format, args...))
}
