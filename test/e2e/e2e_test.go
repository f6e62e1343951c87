// Package e2e runs podstart against a real container runtime: containerd's
// CRI and a registry that requires auth, as brought up by env.sh. The tests
// skip when PODSTART_CRI_ENDPOINT is unset, so "go test ./..." works
// anywhere; with PODSTART_E2E_REQUIRED=1 (CI) a missing endpoint fails
// instead.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/test/e2elock"
)

type environment struct {
	endpoint, registry, user, pass, image, openImage string
}

func setup(t *testing.T) (environment, *runtime.Client) {
	t.Helper()
	e := environment{
		endpoint:  os.Getenv("PODSTART_CRI_ENDPOINT"),
		registry:  os.Getenv("PODSTART_E2E_REGISTRY"),
		user:      os.Getenv("PODSTART_E2E_REGISTRY_USER"),
		pass:      os.Getenv("PODSTART_E2E_REGISTRY_PASS"),
		image:     os.Getenv("PODSTART_E2E_IMAGE"),
		openImage: os.Getenv("PODSTART_E2E_OPEN_IMAGE"),
	}
	if e.endpoint == "" {
		if os.Getenv("PODSTART_E2E_REQUIRED") == "1" {
			t.Fatal("PODSTART_E2E_REQUIRED=1 but PODSTART_CRI_ENDPOINT is unset: run 'bash test/e2e/env.sh up' and source its env file")
		}
		t.Skip("PODSTART_CRI_ENDPOINT is unset: the real-runtime tier needs 'bash test/e2e/env.sh up' (see README)")
	}
	if err := e2elock.Shared(e2eDir()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := runtime.Dial(ctx, e.endpoint, runtime.WithConnectTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	sweep.Do(func() { removeLeftovers(t, rt) })
	return e, rt
}

var sweep sync.Once

func e2eDir() string {
	if d := os.Getenv("PODSTART_E2E_DIR"); d != "" {
		return d
	}
	return "/tmp/podstart-e2e"
}

// removeLeftovers removes every sandbox in the tests' namespace left by an
// earlier run that died before its cleanup, so each run starts clean.
func removeLeftovers(t *testing.T, rt *runtime.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sandboxes, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{podsync.LabelPodNamespace: namespace}})
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range sandboxes {
		rt.StopPodSandbox(ctx, sb.Id)
		if err := rt.RemovePodSandbox(ctx, sb.Id); err != nil {
			t.Logf("leftover sandbox %s: %v", sb.Id, err)
		}
	}
}

const namespace = "podstart-e2e"

// countingImages counts the runtime pulls the manager makes.
type countingImages struct {
	runtime.ImageService
	pulls atomic.Int32
}

func (c *countingImages) PullImage(ctx context.Context, img *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sb *runtimeapi.PodSandboxConfig) (string, error) {
	c.pulls.Add(1)
	return c.ImageService.PullImage(ctx, img, auth, sb)
}

// agent is one node agent: an image manager and a Syncer over the runtime.
type agent struct {
	t      *testing.T
	rt     *runtime.Client
	images *countingImages
	ims    *images.Manager
	syncer *podsync.Syncer
	root   string
}

func newAgent(t *testing.T, rt *runtime.Client, root string, imageOpts ...images.Option) *agent {
	a := &agent{t: t, rt: rt, images: &countingImages{ImageService: rt}, root: root}
	a.ims = images.NewManager(a.images, imageOpts...)
	t.Cleanup(func() { a.ims.Close() })
	a.syncer = podsync.NewSyncer(rt, a.ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs")))
	return a
}

func (a *agent) status(pod *corev1.Pod) *podsync.PodStatus {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := a.syncer.Status(ctx, pod)
	if err != nil {
		a.t.Fatal(err)
	}
	return st
}

func (a *agent) sync(pod *corev1.Pod, secrets ...corev1.Secret) podsync.Result {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return a.syncer.SyncPod(ctx, pod, a.status(pod), secrets)
}

// converge syncs until every app container runs. Between syncs that had
// nothing to do it polls the runtime (an init container is running), as a
// node agent's loop does, within an overall deadline.
func (a *agent) converge(pod *corev1.Pod, secrets ...corev1.Secret) int {
	a.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for n := 1; time.Now().Before(deadline); n++ {
		if running(pod, a.status(pod)) {
			return n - 1
		}
		r := a.sync(pod, secrets...)
		if err := r.Error(); err != nil {
			a.t.Fatalf("sync %d: %v", n, err)
		}
		if len(r.Results) == 0 {
			time.Sleep(50 * time.Millisecond) // the runtime's containers run on their own time
		}
	}
	a.t.Fatal("pod did not converge in 90 s")
	return 0
}

// waitExited polls the runtime until the named container's newest
// instance has exited.
func (a *agent) waitExited(pod *corev1.Pod, name string) *podsync.ContainerStatus {
	a.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if cs := a.status(pod).FindContainerStatusByName(name); cs != nil && cs.State == podsync.ContainerStateExited {
			return cs
		}
		time.Sleep(50 * time.Millisecond)
	}
	a.t.Fatalf("container %s did not exit", name)
	return nil
}

func running(pod *corev1.Pod, st *podsync.PodStatus) bool {
	for _, c := range pod.Spec.Containers {
		if cs := st.FindContainerStatusByName(c.Name); cs == nil || cs.State != podsync.ContainerStateRunning {
			return false
		}
	}
	return true
}

// newPod returns a pod with a UID unique to this run, whose sandboxes are
// all removed when the test ends.
func newPod(t *testing.T, rt *runtime.Client, name string, containers ...corev1.Container) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID(fmt.Sprintf("e2e-%s-%d", name, time.Now().UnixNano()))},
		// The API server always defaults an empty pod security context, and
		// kubelet (and podstart, as kubelet) sends the sandbox's namespace
		// options only with one; containerd 2 refuses a container whose
		// user namespace (the node's) differs from its sandbox's (none).
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, Containers: containers, SecurityContext: &corev1.PodSecurityContext{}},
	}
	t.Cleanup(func() { removePod(t, rt, pod) })
	return pod
}

// removePod stops and removes every sandbox of the pod (and so its
// containers), and checks that none is left.
func removePod(t *testing.T, rt *runtime.Client, pod *corev1.Pod) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sel := &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{podsync.LabelPodUID: string(pod.UID)}}
	sandboxes, err := rt.ListPodSandbox(ctx, sel)
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	for _, sb := range sandboxes {
		if err := rt.StopPodSandbox(ctx, sb.Id); err != nil {
			t.Errorf("cleanup: stop %s: %v", sb.Id, err)
		}
		if err := rt.RemovePodSandbox(ctx, sb.Id); err != nil {
			t.Errorf("cleanup: remove %s: %v", sb.Id, err)
		}
	}
	if left, _ := rt.ListPodSandbox(ctx, sel); len(left) != 0 {
		t.Errorf("cleanup: %d sandboxes of %s left", len(left), pod.UID)
	}
}

func sleeper(name, image string) corev1.Container {
	return corev1.Container{Name: name, Image: image, ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"sh", "-c", "exec sleep 3600"}}
}

func removeImage(t *testing.T, rt *runtime.Client, image string) {
	t.Helper()
	if err := rt.RemoveImage(context.Background(), &runtimeapi.ImageSpec{Image: image}); err != nil {
		t.Fatal(err)
	}
}

func nodeFile(t *testing.T, registry, user, pass string) string {
	t.Helper()
	root := t.TempDir()
	cfg := fmt.Sprintf(`{"auths":{%q:{"username":%q,"password":%q}}}`, registry, user, pass)
	if err := os.WriteFile(filepath.Join(root, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return root
}

func pullSecret(registry, user, pass string) corev1.Secret {
	return corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "regcred"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(fmt.Sprintf(
			`{"auths":{%q:{"username":%q,"password":%q}}}`, registry, user, pass))},
	}
}

func firstError(r podsync.Result) error {
	for _, sr := range r.Results {
		if sr.Err != nil {
			return sr.Err
		}
	}
	return nil
}
