package main

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/mounts"
	fakemount "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
	"github.com/podstart/podstart/test/cluster"
)

func clientFor(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// Certificates as data, not files: client-go watches certificate files
	// with a goroutine that outlives every client (goleak sees it).
	if err := rest.LoadTLSFiles(cfg); err != nil {
		t.Fatal(err)
	}
	cfg.CertFile, cfg.KeyFile, cfg.CAFile = "", "", ""
	setKubeletRateLimits(cfg)
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startCluster starts a real kube-apiserver with node as its node's name
// and makes what kube-controller-manager would have made: the default
// service account and the root CA config map every pod's token volume
// reads. It returns the cluster and an admin client.
func startCluster(t *testing.T, node string) (*cluster.Cluster, kubernetes.Interface) {
	t.Helper()
	c := cluster.StartT(t, cluster.Options{NodeName: node})
	admin := clientFor(t, c.AdminKubeconfig)
	ctx := context.Background()
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	rootCA := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": "CA"}}
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, rootCA, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return c, admin
}

// The agent against a real kube-apiserver v1.37.2 (test/cluster), with the
// node's own credentials (Node authorizer, NodeRestriction): it registers
// its Node and Lease, a pod bound to it by the API (admission applied: the
// service account's kube-api-access volume included) reaches Running and
// Ready as the API server shows it, and a graceful delete ends with the
// object gone. The runtime is runtime/fake; test/e2e covers containerd.
func TestAgentAgainstAPIServer(t *testing.T) {
	t.Parallel() // a cluster of its own: its start overlaps the others'
	const node = "podstart-node"
	c, admin := startCluster(t, node)
	ctx := context.Background()

	root := t.TempDir()
	runAgent(t, Config{Client: clientFor(t, c.NodeKubeconfig), Runtime: fake.New(), NodeName: node, RootDir: root,
		PodLogsDir: filepath.Join(root, "logs"), Clock: clock.RealClock{}, Mounter: fakemount.New()})

	n, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !nodeReady(n) {
		t.Fatalf("node conditions %+v", n.Status.Conditions)
	}
	if _, err := admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, node, metav1.GetOptions{}); err != nil {
		t.Fatalf("lease: %v", err)
	}

	grace := int64(5)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.35"}}},
	}
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	eventually(t, "pod Running and Ready through the API server", func() bool {
		got, err = admin.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodRunning && ready(got.Status)
	})
	if len(got.Status.ContainerStatuses) != 1 || got.Status.ContainerStatuses[0].State.Running == nil || got.Status.PodIP == "" || got.Status.StartTime == nil {
		t.Fatalf("status %+v", got.Status)
	}
	t.Logf("pod Running and Ready %v after creation (API times have second precision)", got.Status.Conditions[len(got.Status.Conditions)-1].LastTransitionTime.Sub(got.CreationTimestamp.Time))

	if err := admin.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod object deleted by the agent", func() bool {
		_, err := admin.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// runAgent runs the agent until the test ends or stop is called, and
// returns once it is ready.
func runAgent(t *testing.T, cfg Config) (stop func()) {
	t.Helper()
	if cfg.Mounter == nil {
		// Real mounts: whatever pods remain when the test ends, their
		// tmpfs go before their temporary root does (this runs after the
		// agent stops).
		t.Cleanup(func() {
			dirs, _ := filepath.Glob(filepath.Join(cfg.RootDir, "pods", "*"))
			for _, d := range dirs {
				if err := podsync.UnmountMemoryVolumes(&mounts.HostMounter{}, d); err != nil {
					t.Errorf("unmount volumes of %s: %v", d, err)
				}
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	agentReady, done := make(chan struct{}), make(chan error, 1)
	cfg.Ready = func() { close(agentReady) }
	go func() { done <- Run(ctx, cfg) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case <-agentReady:
	case err := <-done:
		t.Fatalf("Run ended before ready: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("agent not ready after 60s")
	}
	return stop
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
