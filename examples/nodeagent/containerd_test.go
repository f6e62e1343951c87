package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/test/cluster"
	"github.com/podstart/podstart/test/criproxy"
	"github.com/podstart/podstart/test/e2elock"
)

// The agent on containerd (test/e2e/env.sh) against a real kube-apiserver,
// as a user sees it through the API: a pod reaches Running, its Secret
// volume reads correctly in the container, its readiness probe flips Ready;
// a bad image shows ErrImagePull then ImagePullBackOff; a private image
// runs with a pull secret; an agent restart loses and duplicates nothing;
// a graceful delete runs the pre-stop hook, removes the pods and leaves no
// sandbox behind.
func TestAgentOnContainerd(t *testing.T) {
	endpoint, _ := containerdEnv(t)
	registry, user, pass := os.Getenv("PODSTART_E2E_REGISTRY"), os.Getenv("PODSTART_E2E_REGISTRY_USER"), os.Getenv("PODSTART_E2E_REGISTRY_PASS")
	private, open := os.Getenv("PODSTART_E2E_IMAGE"), os.Getenv("PODSTART_E2E_OPEN_IMAGE")

	const node = "podstart-containerd"
	c := cluster.StartT(t, cluster.Options{NodeName: node})
	admin := clientFor(t, c.AdminKubeconfig)
	ctx := context.Background()
	rt := guardedRuntime(t, endpoint)

	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	for _, obj := range []func() error{
		func() error {
			_, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": "CA"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
				Data: map[string][]byte{corev1.DockerConfigJsonKey: fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, registry, auth)}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Data: map[string][]byte{"greeting": []byte("hello from a secret")}}, metav1.CreateOptions{})
			return err
		},
	} {
		if err := obj(); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}

	root := t.TempDir()
	agentConfig := Config{Client: clientFor(t, c.NodeKubeconfig), Runtime: rt, NodeName: node, RootDir: root,
		PodLogsDir: filepath.Join(root, "logs"), Clock: clock.RealClock{}}
	stopAgent := runAgent(t, agentConfig)

	grace := int64(10)
	sleeper := func(name, image string) corev1.Container {
		return corev1.Container{Name: name, Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}}
	}
	// The pre-stop hook leaves a mark on the host, where the test reads it.
	marks := t.TempDir()
	web := sleeper("web", open)
	web.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "marks", MountPath: "/marks"}}
	web.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo stopped > /marks/pre-stop"}}}}
	web.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ready"}}}, PeriodSeconds: 1}
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &grace, Containers: []corev1.Container{web},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "data"}}},
				{Name: "marks", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: marks}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{sleeper("app", registry[:strings.LastIndex(registry, ":")]+":5051/no-such-image:1")}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "private"}, Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &grace,
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}, Containers: []corev1.Container{sleeper("app", private)}}},
	}
	// Every waiting reason the API server stores for "bad", in order, as a
	// watch (kubectl get -w) shows them.
	w, err := admin.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=bad"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	var reasons []string
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Waiting != nil {
					mu.Lock()
					if r := cs.State.Waiting.Reason; len(reasons) == 0 || reasons[len(reasons)-1] != r {
						reasons = append(reasons, r)
					}
					mu.Unlock()
				}
			}
		}
	}()
	for _, p := range pods {
		if _, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(name string) *corev1.Pod {
		p, err := admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	running := func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	}

	eventually(t, "web Running", func() bool { return running(get("web")) })
	p := get("web")
	if ready(p.Status) {
		t.Fatal("web Ready before its probe passed")
	}
	id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
	execCtx, cancelExec := context.WithTimeout(ctx, 30*time.Second)
	defer cancelExec()
	out, _, err := rt.ExecSync(execCtx, id, []string{"cat", "/data/greeting"}, 10*time.Second)
	if err != nil || string(out) != "hello from a secret" {
		t.Fatalf("secret volume in the container: %q, %v", out, err)
	}
	if _, _, err := rt.ExecSync(execCtx, id, []string{"touch", "/tmp/ready"}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	eventually(t, "web Ready after its probe passed", func() bool { return ready(get("web").Status) })

	eventually(t, "private Running with its pull secret", func() bool { return running(get("private")) })

	eventually(t, "bad: ErrImagePull, then ImagePullBackOff", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return containsInOrder(reasons, "ErrImagePull", "ImagePullBackOff")
	})

	// An agent restart loses nothing and duplicates nothing: the same
	// containers keep running, none restarted, and the pods stay Ready.
	before := map[string]string{}
	for _, p := range []string{"web", "private"} {
		before[p] = get(p).Status.ContainerStatuses[0].ContainerID
	}
	stopAgent()
	runAgent(t, agentConfig)
	for _, name := range []string{"web", "private"} {
		eventually(t, name+" Running after the agent restarted", func() bool { return running(get(name)) })
		p := get(name)
		if cs := p.Status.ContainerStatuses[0]; cs.ContainerID != before[name] || cs.RestartCount != 0 {
			t.Fatalf("%s after the agent restarted: %s (was %s), restart count %d", name, cs.ContainerID, before[name], cs.RestartCount)
		}
		sandboxes, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(p.UID)}})
		if err != nil || len(sandboxes) != 1 {
			t.Fatalf("%s: %d sandboxes after the agent restarted, %v", name, len(sandboxes), err)
		}
	}
	eventually(t, "web Ready after the agent restarted", func() bool { return ready(get("web").Status) })

	uids := map[string]string{}
	for _, p := range pods {
		uids[p.Name] = string(get(p.Name).UID)
		if err := admin.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			t.Fatal(err)
		}
	}
	for name, uid := range uids {
		eventually(t, name+" deleted by the agent", func() bool {
			_, err := admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		left, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid}})
		if err != nil || len(left) != 0 {
			t.Fatalf("%s: %d sandboxes left, %v", name, len(left), err)
		}
	}
	if mark, err := os.ReadFile(filepath.Join(marks, "pre-stop")); err != nil || string(mark) != "stopped\n" {
		t.Fatalf("pre-stop hook: %q, %v", mark, err)
	}
}

// containerdEnv is the containerd of test/e2e/env.sh and its directory,
// under the e2e tiers' shared lock; the test skips without it, or fails
// with PODSTART_E2E_REQUIRED=1. Each of needs (a file under the
// directory's bin/) must exist too.
// guardedRuntime is a client of the shared containerd through a guarded
// CRI proxy (criproxy.Guard), for an agent: the agent says SourcesReady,
// and from then on its garbage collection (once a minute) removes every
// pod on its runtime that it does not hold, as kubelet's does. On the
// containerd that test/e2e, test/kubelet and this package's other tests
// share, those are their pods: an agent living past its first collection
// would kill them (a test/e2e pod gone mid-test loses its stats too, and
// kubelet's ranking, which the disk eviction test checks, puts a pod
// without stats first). These agents live 30-60 s, near that first
// collection on a loaded machine. Through the guard an agent stops and
// removes only what it created (the latency test's agent already runs
// so; vk's tests never say SourcesReady; test/chaos runs alone).
func guardedRuntime(t *testing.T, endpoint string) *runtime.Client {
	t.Helper()
	p, err := criproxy.Start(filepath.Join(t.TempDir(), "agent.sock"), endpoint, criproxy.Guard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := runtime.Dial(ctx, p.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func containerdEnv(t *testing.T, needs ...string) (endpoint, dir string) {
	t.Helper()
	endpoint, dir = os.Getenv("PODSTART_CRI_ENDPOINT"), os.Getenv("PODSTART_E2E_DIR")
	if dir == "" {
		dir = "/tmp/podstart-e2e"
	}
	missing := endpoint == ""
	for _, n := range needs {
		if _, err := os.Stat(filepath.Join(dir, "bin", n)); err != nil {
			missing = true
		}
	}
	if missing {
		if os.Getenv("PODSTART_E2E_REQUIRED") == "1" {
			t.Fatalf("PODSTART_E2E_REQUIRED=1 but containerd (PODSTART_CRI_ENDPOINT %q) or %v in %s/bin is missing", endpoint, needs, dir)
		}
		t.Skip("needs 'bash test/e2e/env.sh up' (and test/kubelet/build.sh for kubelet)")
	}
	if err := e2elock.Shared(dir); err != nil {
		t.Fatal(err)
	}
	return endpoint, dir
}

func containsInOrder(list []string, want ...string) bool {
	i := 0
	for _, s := range list {
		if i < len(want) && s == want[i] {
			i++
		}
	}
	return i == len(want)
}
