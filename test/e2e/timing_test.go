package e2e

import (
	"bytes"
	"context"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/yaml"

	"github.com/podstart/podstart/credentials"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime"
)

// recorder keeps the sandbox and container configs podstart sends.
type recorder struct {
	runtime.RuntimeService
	mu         sync.Mutex
	sandbox    *runtimeapi.PodSandboxConfig
	containers []*runtimeapi.ContainerConfig
}

func (r *recorder) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	r.mu.Lock()
	r.sandbox = cfg
	r.mu.Unlock()
	return r.RuntimeService.RunPodSandbox(ctx, cfg, handler)
}

func (r *recorder) CreateContainer(ctx context.Context, id string, cfg *runtimeapi.ContainerConfig, sb *runtimeapi.PodSandboxConfig) (string, error) {
	r.mu.Lock()
	r.containers = append(r.containers, cfg)
	r.mu.Unlock()
	return r.RuntimeService.CreateContainer(ctx, id, cfg, sb)
}

const poll = 10 * time.Millisecond

// TestDemoPodTiming times the demo pod (two init containers, a sidecar,
// two apps) from nothing to running on containerd: podstart's Status and
// SyncPod loop against the same sandbox and container configs issued
// directly with the generated CRI client, both polling init containers
// every 10 ms. It only logs: the figures go in the notes, not in a pass or
// fail.
func TestDemoPodTiming(t *testing.T) {
	e, rt := setup(t)
	data, err := os.ReadFile("testdata/demo-pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The demo's images name env.sh's default registry; this environment's
	// may listen elsewhere (PODSTART_E2E_AUTH_PORT).
	data = bytes.ReplaceAll(data, []byte("127.0.0.1:5050/"), []byte(e.registry+"/"))
	var spec corev1.Pod
	if err := yaml.UnmarshalStrict(data, &spec); err != nil {
		t.Fatal(err)
	}
	keyring := &credentials.BasicKeyring{}
	keyring.Add(credentials.DockerConfig{e.registry: {Username: e.user, Password: e.pass}})
	root := t.TempDir()

	var podstartTimes, directTimes []time.Duration
	var rec *recorder
	for round := 0; round < 3; round++ {
		pod := newPod(t, rt, "timing", spec.Spec.Containers...)
		pod.Spec = *spec.Spec.DeepCopy()
		if pod.Spec.SecurityContext == nil {
			pod.Spec.SecurityContext = &corev1.PodSecurityContext{} // the API server's default, as newPod's
		}
		rec = &recorder{RuntimeService: rt}
		ims := images.NewManager(rt, images.WithNodeKeyring(keyring))
		s := podsync.NewSyncer(rec, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(root+"/logs"))
		ctx := context.Background()
		start := time.Now()
		for {
			st, err := s.Status(ctx, pod)
			if err != nil {
				t.Fatal(err)
			}
			if running(pod, st) {
				break
			}
			r := s.SyncPod(ctx, pod, st, nil)
			if err := r.Error(); err != nil {
				t.Fatal(err)
			}
			if len(r.Results) == 0 {
				time.Sleep(poll)
			}
			if time.Since(start) > time.Minute {
				t.Fatal("demo pod did not start")
			}
		}
		podstartTimes = append(podstartTimes, time.Since(start))
		ims.Close()
		removePod(t, rt, pod)
		directTimes = append(directTimes, direct(t, rt, rec, &spec))
	}
	med := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	t.Logf("demo pod to running on containerd: podstart %v, direct CRI calls %v (medians of %d, ratio %.2f); podstart %v, direct %v",
		med(podstartTimes), med(directTimes), len(podstartTimes), float64(med(podstartTimes))/float64(med(directTimes)), podstartTimes, directTimes)
}

// direct starts the pod with the recorded configs under a new UID, the
// calls a hand-written client would make, and removes it.
func direct(t *testing.T, rt *runtime.Client, rec *recorder, spec *corev1.Pod) time.Duration {
	ctx := context.Background()
	rs := runtimeapi.NewRuntimeServiceClient(rt.Conn())
	is := runtimeapi.NewImageServiceClient(rt.Conn())
	sb := rec.sandbox
	uid := "direct-" + time.Now().Format("150405.000000000")
	sb.Metadata.Uid = uid
	sb.Labels[podsync.LabelPodUID] = uid
	inits := map[string]bool{}
	for _, c := range spec.Spec.InitContainers {
		inits[c.Name] = !podsync.IsRestartableInitContainer(&c)
	}
	start := time.Now()
	run, err := rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sb})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: run.PodSandboxId})
		rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: run.PodSandboxId})
	}()
	if _, err := rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: run.PodSandboxId}); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range rec.containers {
		cfg.Labels[podsync.LabelPodUID] = uid
		if _, err := is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: cfg.Image.UserSpecifiedImage}}); err != nil {
			t.Fatal(err)
		}
		c, err := rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: run.PodSandboxId, Config: cfg, SandboxConfig: sb})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
			t.Fatal(err)
		}
		for inits[cfg.Metadata.Name] {
			st, err := rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.ContainerId})
			if err != nil {
				t.Fatal(err)
			}
			if st.Status.State == runtimeapi.ContainerState_CONTAINER_EXITED {
				break
			}
			time.Sleep(poll)
		}
	}
	return time.Since(start)
}
