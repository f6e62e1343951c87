package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/credentials"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime"
)

// 1. Node credentials from a config.json under the root dir.
func TestNodeCredentials(t *testing.T) {
	e, rt := setup(t)
	removeImage(t, rt, e.image)
	root := nodeFile(t, e.registry, e.user, e.pass)
	a := newAgent(t, rt, t.TempDir(), images.WithNodeKeyring(credentials.NewNodeKeyring(root)))
	pod := newPod(t, rt, "node-creds", sleeper("app", e.image))
	a.converge(pod)
	st, err := rt.ImageStatus(context.Background(), &runtimeapi.ImageSpec{Image: e.image}, false)
	if err != nil || st.GetImage() == nil {
		t.Fatalf("ImageStatus after the pod started: %v %v", st, err)
	}
	if a.images.pulls.Load() != 1 {
		t.Fatalf("%d pulls", a.images.pulls.Load())
	}
}

// 2. The pod's pull secret comes before the node file, and every matching
// credential is tried; both wrong is ErrImagePull with the registry's 401,
// then back-off without a pull, then success after a reset.
func TestPullSecretBeatsNodeFile(t *testing.T) {
	e, rt := setup(t)
	cases := []struct {
		name              string
		nodePass, secPass string
		wantPulls         int32
	}{
		{"node wrong, secret right", "wrong", e.pass, 1},
		{"node right, secret wrong: both tried", e.pass, "wrong", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			removeImage(t, rt, e.image)
			a := newAgent(t, rt, t.TempDir(), images.WithNodeKeyring(credentials.NewNodeKeyring(nodeFile(t, e.registry, e.user, c.nodePass))))
			pod := newPod(t, rt, "secret", sleeper("app", e.image))
			a.converge(pod, pullSecret(e.registry, e.user, c.secPass))
			if got := a.images.pulls.Load(); got != c.wantPulls {
				t.Fatalf("%d runtime pulls, want %d", got, c.wantPulls)
			}
		})
	}
	t.Run("both wrong, then back-off, then fixed", func(t *testing.T) {
		removeImage(t, rt, e.image)
		a := newAgent(t, rt, t.TempDir(), images.WithNodeKeyring(credentials.NewNodeKeyring(nodeFile(t, e.registry, e.user, "wrong-node"))))
		pod := newPod(t, rt, "both-wrong", sleeper("app", e.image))
		bad := pullSecret(e.registry, e.user, "wrong-secret")
		err := firstError(a.sync(pod, bad))
		if !errors.Is(err, images.ErrImagePull) || !errors.Is(err, runtime.ErrUnauthorized) {
			t.Fatalf("both wrong: %v", err)
		}
		pulls := a.images.pulls.Load()
		if pulls != 2 {
			t.Fatalf("%d pulls, want one per credential", pulls)
		}
		if err := firstError(a.sync(pod, bad)); !errors.Is(err, images.ErrImagePullBackOff) {
			t.Fatalf("second sync: %v", err)
		}
		if a.images.pulls.Load() != pulls {
			t.Fatal("a pull was made during back-off")
		}
		a.ims.ResetBackOff(pod.UID, e.image)
		a.converge(pod, pullSecret(e.registry, e.user, e.pass))
	})
}

// 3. Pull policy Never with the image absent: ErrImageNeverPull, no pull.
func TestNeverPullAbsent(t *testing.T) {
	e, rt := setup(t)
	removeImage(t, rt, e.image)
	a := newAgent(t, rt, t.TempDir())
	c := sleeper("app", e.image)
	c.ImagePullPolicy = corev1.PullNever
	pod := newPod(t, rt, "never", c)
	if err := firstError(a.sync(pod)); !errors.Is(err, images.ErrImageNeverPull) {
		t.Fatalf("err %v", err)
	}
	if a.images.pulls.Load() != 0 {
		t.Fatal("pulled under Never")
	}
}

// 4. Init containers run in order, for real: each appends to a file in an
// emptyDir, the app starts after both exited 0.
func TestInitOrdering(t *testing.T) {
	e, rt := setup(t)
	root := t.TempDir()
	a := newAgent(t, rt, root)
	work := []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
	initC := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: e.openImage, ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{"sh", "-c", "echo " + name + " >> /work/log"}, VolumeMounts: work}
	}
	app := sleeper("app", e.openImage)
	app.Command = []string{"sh", "-c", "cat /work/log; exec sleep 3600"}
	app.VolumeMounts = work
	pod := newPod(t, rt, "init-order", app)
	pod.Spec.InitContainers = []corev1.Container{initC("init-1"), initC("init-2")}
	pod.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	a.converge(pod)

	log, err := os.ReadFile(filepath.Join(root, "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", "work", "log"))
	if err != nil || string(log) != "init-1\ninit-2\n" {
		t.Fatalf("log %q, %v", log, err)
	}
	st := a.status(pod)
	i1, i2, ap := st.FindContainerStatusByName("init-1"), st.FindContainerStatusByName("init-2"), st.FindContainerStatusByName("app")
	if i1.ExitCode != 0 || i2.ExitCode != 0 || i1.State != podsync.ContainerStateExited || i2.State != podsync.ContainerStateExited {
		t.Fatalf("init containers %+v %+v", i1, i2)
	}
	if !i2.StartedAt.After(i1.FinishedAt) || !ap.StartedAt.After(i2.FinishedAt) {
		t.Fatalf("order: init-1 finished %v, init-2 started %v finished %v, app started %v", i1.FinishedAt, i2.StartedAt, i2.FinishedAt, ap.StartedAt)
	}
}

// 5. A failing init container: under Never the pod is killed; under
// OnFailure it is retried, then backed off.
func TestFailingInit(t *testing.T) {
	e, rt := setup(t)
	for _, policy := range []corev1.RestartPolicy{corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure} {
		t.Run(string(policy), func(t *testing.T) {
			a := newAgent(t, rt, t.TempDir())
			pod := newPod(t, rt, "fail-"+strings.ToLower(string(policy)), sleeper("app", e.openImage))
			pod.Spec.RestartPolicy = policy
			pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: e.openImage, ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"sh", "-c", "exit 3"}}}
			if err := a.sync(pod).Error(); err != nil {
				t.Fatal(err)
			}
			if cs := a.waitExited(pod, "init"); cs.ExitCode != 3 {
				t.Fatalf("init exit %d", cs.ExitCode)
			}
			r := a.sync(pod)
			if policy == corev1.RestartPolicyNever {
				st := a.status(pod)
				if st.SandboxStatuses[0].State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY || st.FindContainerStatusByName("app") != nil {
					t.Fatalf("pod not killed under Never: %+v", r.Results)
				}
				return
			}
			if err := r.Error(); err != nil {
				t.Fatalf("retry: %v", err)
			}
			a.waitExited(pod, "init")
			if err := firstError(a.sync(pod)); !errors.Is(err, podsync.ErrCrashLoopBackOff) {
				t.Fatalf("third sync: %v", err)
			}
			// The retry is the second instance; the first was pruned, as
			// kubelet keeps only the newest exited instance.
			if cs := a.status(pod).FindContainerStatusByName("init"); cs.RestartCount != 1 || cs.ExitCode != 3 {
				t.Fatalf("init instance %+v, want restart count 1", cs)
			}
		})
	}
}

// 6. A hostPath volume with a subPath, read-only; the managed /etc/hosts.
func TestMounts(t *testing.T) {
	e, rt := setup(t)
	host := t.TempDir()
	if err := os.MkdirAll(filepath.Join(host, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(host, "sub", "hello.txt"), []byte("hello from the host\n"), 0o644)
	a := newAgent(t, rt, t.TempDir())
	app := sleeper("app", e.openImage)
	app.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "sub", ReadOnly: true}}
	pod := newPod(t, rt, "mounts", app)
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: host}}}}
	a.converge(pod)
	st := a.status(pod)
	id := st.FindContainerStatusByName("app").ID
	ctx := context.Background()

	out, _, err := rt.ExecSync(ctx, id, []string{"cat", "/data/hello.txt"}, 10*time.Second)
	if err != nil || string(out) != "hello from the host\n" {
		t.Fatalf("read: %q %v", out, err)
	}
	_, _, err = rt.ExecSync(ctx, id, []string{"sh", "-c", "echo x > /data/new"}, 10*time.Second)
	var exit *runtime.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(exit.Stderr), "Read-only file system") {
		t.Fatalf("write to a read-only mount: %v", err)
	}
	if _, err := os.Stat(filepath.Join(host, "sub", "new")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the container wrote through a read-only mount")
	}
	hosts, _, err := rt.ExecSync(ctx, id, []string{"cat", "/etc/hosts"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	hostname, _, _ := mounts.HostnameAndDomain(pod, "cluster.local")
	want, _ := mounts.HostsFileContent(hostname, "", st.IPs, nil)
	if string(hosts) != string(want) {
		t.Fatalf("/etc/hosts in the container:\n%s\nwant:\n%s", hosts, want)
	}
}

// 7. The agent restarts half-way: a new Syncer over the same endpoint
// finishes the pod, with no duplicate containers.
func TestAgentRestart(t *testing.T) {
	e, rt := setup(t)
	root := t.TempDir()
	first := newAgent(t, rt, root)
	pod := newPod(t, rt, "restart", sleeper("app", e.openImage), sleeper("web", e.openImage))
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: e.openImage, ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"true"}}}
	if err := first.sync(pod).Error(); err != nil {
		t.Fatal(err)
	}
	second := newAgent(t, rt, root)
	second.converge(pod)
	third := newAgent(t, rt, root) // and again, once running: nothing to do
	if r := third.sync(pod); len(r.Results) != 0 {
		t.Fatalf("a converged pod was changed: %+v", r.Results)
	}
	count := map[string]int{}
	for _, cs := range third.status(pod).ContainerStatuses {
		count[cs.Name]++
	}
	if count["init"] != 1 || count["app"] != 1 || count["web"] != 1 {
		t.Fatalf("instances %v", count)
	}
	if n := len(third.status(pod).SandboxStatuses); n != 1 {
		t.Fatalf("%d sandboxes", n)
	}
}
