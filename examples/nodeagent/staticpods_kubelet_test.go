package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/staticpods"
	"github.com/podstart/podstart/test/criproxy"
	"github.com/podstart/podstart/test/kubeletrun"
)

// staticCgroups is the kubelet's cgroup root in this test (its pods'
// cgroups; kubelet destroys pod cgroups under it that it does not run).
const staticCgroups = "/podstart-static"

// The agent and the real kubelet v1.37.2 on one API server, each with the
// same static pod manifest in its own directory, on the same containerd
// (each through a guarded proxy): their mirror pods are equal field by
// field (after the node name, UIDs, config hash values, times and IDs are
// masked) once Running, after the mirror's deletion (both recreate it),
// after a manifest change; removing the manifest deletes both mirrors.
// It needs the e2e tier's containerd and kubelet (skipped without them, as
// TestStartLatencyAgainstKubelet) and runs for about four minutes.
func TestStaticPodsAgainstKubelet(t *testing.T) {
	endpoint, dir := containerdEnv(t, "kubelet")
	image := os.Getenv("PODSTART_E2E_OPEN_IMAGE")
	if image == "" {
		t.Skip("needs PODSTART_E2E_OPEN_IMAGE ('bash test/e2e/env.sh up')")
	}
	const agentNode, kubeletNode = "podstart-static-a", "kubelet-static-k"
	cleanStatic(t, endpoint, agentNode, kubeletNode)
	t.Cleanup(func() { cleanStatic(t, endpoint, agentNode, kubeletNode) })
	c, admin := startCluster(t, agentNode)
	ctx := context.Background()
	work := t.TempDir()
	manifestText := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: sbs
  namespace: default
  labels: {app: sbs}
  annotations: {example.com/note: side-by-side}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "trap 'exit 0' TERM; sleep 3600 & wait"]
`, image)
	dirs := map[string]string{agentNode: filepath.Join(work, "agent-manifests"), kubeletNode: filepath.Join(work, "kubelet-manifests")}
	writeAll := func(text string) {
		for _, d := range dirs {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, "sbs.yaml"), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeAll(manifestText)

	// The agent, through a guarded proxy, without pod cgroups of its own.
	agentProxy, err := criproxy.Start(filepath.Join(work, "agent.sock"), endpoint, criproxy.Guard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agentProxy.Close() })
	dialCtx, cancelDial := context.WithTimeout(ctx, 30*time.Second)
	defer cancelDial()
	rt, err := runtime.Dial(dialCtx, agentProxy.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	root := filepath.Join(work, "agent")
	runAgent(t, Config{Client: clientFor(t, c.NodeKubeconfig), Runtime: rt, NodeName: agentNode, RootDir: root,
		PodLogsDir: filepath.Join(root, "logs"), Clock: clock.RealClock{}, ResolvConf: "/etc/resolv.conf",
		StaticPods: &StaticPods{ManifestPath: dirs[agentNode]}})

	kubeconfig, err := c.NodeKubeconfigFor(kubeletNode)
	if err != nil {
		t.Fatal(err)
	}
	startStaticKubelet(t, filepath.Join(dir, "bin", "kubelet"), kubeconfig, kubeletNode, work, endpoint, dirs[kubeletNode])

	mirror := func(node string) *corev1.Pod {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "sbs-"+node, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return p
	}
	bothRunning := func(what string, notUID map[string]types.UID) map[string]*corev1.Pod {
		t.Helper()
		got := map[string]*corev1.Pod{}
		// Three minutes: kubelet v1.37.2 acts on a mirror pod being deleted
		// only at its static pod's next periodic sync (syncFrequency, 1 min,
		// with up to 50% jitter), then its status manager writes the new
		// mirror's status at its next reconcile (10 s): HandlePodUpdates
		// skips the mirror pod's own update (its UID has no allocated
		// resources). The agent acts on the watch event.
		deadline := time.Now().Add(3 * time.Minute)
		for {
			done := true
			for node := range dirs {
				p := mirror(node)
				if p == nil || p.DeletionTimestamp != nil || p.UID == notUID[node] || p.Status.Phase != corev1.PodRunning || !ready(p.Status) {
					done = false
					if time.Now().After(deadline) {
						if p == nil {
							t.Errorf("%s: no mirror pod", node)
						} else {
							t.Errorf("%s: mirror %s deleting %v phase %s conditions %+v", node, p.UID, p.DeletionTimestamp, p.Status.Phase, p.Status.Conditions)
						}
					}
					continue
				}
				got[node] = p
			}
			if done {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(100 * time.Millisecond) // polling interval, not synchronisation
		}
		if d := cmp.Diff(maskMirror(got[kubeletNode], kubeletNode), maskMirror(got[agentNode], agentNode)); d != "" {
			t.Errorf("%s: mirror pods differ (-kubelet +agent):\n%s", what, d)
		}
		return got
	}
	first := bothRunning("both mirror pods Running", nil)

	// The mirror pods deleted: both recreated.
	for node, p := range first {
		if err := admin.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("%s: %v", node, err)
		}
	}
	uids := func(ps map[string]*corev1.Pod) map[string]types.UID {
		m := map[string]types.UID{}
		for n, p := range ps {
			m[n] = p.UID
		}
		return m
	}
	second := bothRunning("both mirror pods recreated", uids(first))

	// A changed manifest: both mirrors replaced by the new pod's.
	writeAll(strings.Replace(manifestText, "side-by-side", "changed", 1))
	third := bothRunning("both mirror pods of the changed manifest", uids(second))
	for node, p := range third {
		if p.Annotations["example.com/note"] != "changed" || p.Annotations[staticpods.ConfigMirrorAnnotation] == second[node].Annotations[staticpods.ConfigMirrorAnnotation] {
			t.Errorf("%s: mirror after the change: %v", node, p.Annotations)
		}
	}

	// The manifest removed: both mirrors deleted.
	for _, d := range dirs {
		if err := os.Remove(filepath.Join(d, "sbs.yaml")); err != nil {
			t.Fatal(err)
		}
	}
	eventually60(t, "both mirror pods deleted", func() bool {
		for node := range dirs {
			if _, err := admin.CoreV1().Pods("default").Get(ctx, "sbs-"+node, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false
			}
		}
		return true
	})
}

// maskMirror keeps what both nodes must agree on: node names, UIDs, hash
// values (staticpods' differ from kubelet's by design), times, IDs and IPs
// masked; statuses down to phase, conditions and container states.
func maskMirror(p *corev1.Pod, node string) *corev1.Pod {
	p = p.DeepCopy()
	p.Name = strings.TrimSuffix(p.Name, "-"+node)
	p.Spec.NodeName = ""
	p.UID, p.ResourceVersion, p.CreationTimestamp, p.ManagedFields, p.Generation = "", "", metav1.Time{}, nil, 0
	for _, k := range []string{staticpods.ConfigHashAnnotation, staticpods.ConfigMirrorAnnotation, staticpods.ConfigSeenAnnotation} {
		if _, ok := p.Annotations[k]; ok {
			p.Annotations[k] = "<masked>"
		}
	}
	for i := range p.OwnerReferences {
		p.OwnerReferences[i].Name, p.OwnerReferences[i].UID = "", ""
	}
	st := corev1.PodStatus{Phase: p.Status.Phase, QOSClass: p.Status.QOSClass}
	for _, c := range p.Status.Conditions {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason})
	}
	for _, cs := range p.Status.ContainerStatuses {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{Name: cs.Name, Ready: cs.Ready, Started: cs.Started,
			RestartCount: cs.RestartCount, Image: cs.Image, State: corev1.ContainerState{Running: maskRunning(cs.State.Running)}})
	}
	p.Status = st
	return p
}

func maskRunning(r *corev1.ContainerStateRunning) *corev1.ContainerStateRunning {
	if r == nil {
		return nil
	}
	return &corev1.ContainerStateRunning{}
}

// cleanStatic stops and removes the sandboxes of the static pods of nodes
// (named "<manifest name>-<node>").
func cleanStatic(t *testing.T, endpoint string, nodes ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rt, err := runtime.Dial(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.namespace": "default"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range sbs {
		name := sb.Labels["io.kubernetes.pod.name"]
		for _, n := range nodes {
			if strings.HasSuffix(name, "-"+n) {
				if err := rt.StopPodSandbox(ctx, sb.Id); err != nil {
					t.Errorf("leftover sandbox of %s: %v", name, err)
				}
				if err := rt.RemovePodSandbox(ctx, sb.Id); err != nil {
					t.Errorf("leftover sandbox of %s: %v", name, err)
				}
			}
		}
	}
}

// startStaticKubelet runs the real kubelet with manifests as its
// staticPodPath, as startKubelet does otherwise (its log is
// work/kubelet.log), with its pod cgroups under staticCgroups/kubelet.
func startStaticKubelet(t *testing.T, bin, kubeconfig, node, work, endpoint, manifests string) {
	t.Helper()
	p, err := criproxy.Start(filepath.Join(work, "kubelet.sock"), endpoint, criproxy.Guard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	root := filepath.Join(work, "kubelet")
	cfg := filepath.Join(work, "kubelet.yaml")
	if err := kubeletrun.MakeCgroupRoot(staticCgroups + "/kubelet"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := kubeletrun.RemoveCgroupRoot(ctx, staticCgroups); err != nil {
			t.Error(err)
		}
	})
	yaml := kubeletrun.Config{Endpoint: p.Endpoint(), Port: port, PodLogsDir: filepath.Join(root, "logs"),
		PodCgroups: true, CgroupRoot: staticCgroups + "/kubelet", StaticPodPath: manifests}.YAML()
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(work, "kubelet.log"))
	if err != nil {
		t.Fatal(err)
	}
	nodeIP := "127.0.0.1"
	if ip := hostIP(); ip != nil {
		nodeIP = ip.String()
	}
	cmd := exec.Command(bin, "--config="+cfg, "--kubeconfig="+kubeconfig, "--root-dir="+root,
		"--hostname-override="+node, "--node-ip="+nodeIP, "--v="+kubeletVerbosity())
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		logFile.Close()
		if err := kubeletrun.UnmountUnder(root); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(work, "kubelet.log")); err == nil {
				lines := strings.Split(string(b), "\n")
				for _, l := range lines[max(0, len(lines)-40):] {
					t.Log(l)
				}
			}
		}
	})
}
