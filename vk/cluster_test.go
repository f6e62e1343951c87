package vk_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
	"github.com/podstart/podstart/test/cluster"
	"github.com/podstart/podstart/test/e2elock"
	"github.com/podstart/podstart/vk"
)

// virtual-kubelet v1.14's node and pod controllers, with the podstart
// provider, against a real kube-apiserver v1.37.2, running a pod on
// containerd (test/e2e/env.sh): Ready as the API server shows it, then
// deleted with nothing of it left in the API server or in containerd.
func TestVirtualKubeletOnContainerd(t *testing.T) {
	endpoint, dir := os.Getenv("PODSTART_CRI_ENDPOINT"), os.Getenv("PODSTART_E2E_DIR")
	if dir == "" {
		dir = "/tmp/podstart-e2e"
	}
	image := os.Getenv("PODSTART_E2E_OPEN_IMAGE")
	if endpoint == "" || image == "" {
		if os.Getenv("PODSTART_E2E_REQUIRED") == "1" {
			t.Fatalf("PODSTART_E2E_REQUIRED=1 but PODSTART_CRI_ENDPOINT %q or PODSTART_E2E_OPEN_IMAGE %q is unset: run 'bash test/e2e/env.sh up' and source its env file", endpoint, image)
		}
		t.Skip("needs containerd: 'bash test/e2e/env.sh up', '. /tmp/podstart-e2e/env'")
	}
	if err := e2elock.Shared(dir); err != nil {
		t.Fatal(err)
	}
	c := cluster.StartT(t, cluster.Options{NodeName: "podstart-vk"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := runtime.Dial(ctx, endpoint, runtime.WithConnectTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	runThroughVirtualKubelet(t, c, rt, image, corev1.PodSucceeded) // its shell exits 0 on SIGTERM
}

// The same on the fake runtime served over CRI on a unix socket: no
// containerd needed, only the control plane's binaries.
func TestVirtualKubeletOnFakeRuntime(t *testing.T) {
	c := cluster.StartT(t, cluster.Options{NodeName: "podstart-vk"})
	f := fake.New(fake.WithImages("busybox:1.35"))
	srv := fake.NewServer(f)
	endpoint, err := srv.ServeUnix(filepath.Join(t.TempDir(), "cri.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := runtime.Dial(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	runThroughVirtualKubelet(t, c, rt, "busybox:1.35", corev1.PodFailed) // the fake stops containers with 143
}

// runThroughVirtualKubelet: the pod's last phase in the API server before
// its object goes is final, the terminal status the provider notified.
func runThroughVirtualKubelet(t *testing.T, c *cluster.Cluster, rt *runtime.Client, image string, final corev1.PodPhase) {
	start := time.Now()
	const nodeName, ns = "podstart-vk", "podstart-vk"
	// VK runs as a deployment does, with an account that may read the
	// cluster's pods, Secrets, ConfigMaps and Services (here the admin).
	client := clientFor(t, c.AdminKubeconfig)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The provider: podstart's pod path on the runtime.
	root := t.TempDir()
	ims := images.NewManager(rt)
	defer ims.Close()
	v, err := rt.Version(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	syncer := podsync.NewSyncer(rt, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs")))
	provider := vk.New(syncer, vk.WithWorkerOptions(podworker.WithRuntimeName(v.RuntimeName), podworker.WithHostIPs("127.0.0.1")))
	// Never SourcesReady here: the containerd is shared with other tests,
	// whose pods this node must not collect.
	defer provider.Close()

	// VK's node controller: the Node and its Lease.
	nodeObj := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{"type": "virtual-kubelet", "kubernetes.io/role": "agent"}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("10")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("10")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "podstart provider ready"}},
			Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
			NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.37.2-podstart-vk", ContainerRuntimeVersion: v.RuntimeName + "://" + v.RuntimeVersion},
		},
	}
	nc, err := node.NewNodeController(node.NaiveNodeProvider{}, nodeObj, client.CoreV1().Nodes(),
		node.WithNodeEnableLeaseV1(client.CoordinationV1().Leases(corev1.NamespaceNodeLease), 0))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel (deferred later, run first)
	wg.Go(func() {
		if err := nc.Run(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("node controller: %v", err)
		}
	})

	// VK's pod controller over informers of the node's pods.
	pods := informers.NewSharedInformerFactoryWithOptions(client, time.Minute, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "spec.nodeName=" + nodeName
	}))
	all := informers.NewSharedInformerFactory(client, time.Minute)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	pc, err := node.NewPodController(node.PodControllerConfig{
		PodClient:         client.CoreV1(),
		PodInformer:       pods.Core().V1().Pods(),
		EventRecorder:     broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "virtual-kubelet", Host: nodeName}),
		Provider:          provider,
		ConfigMapInformer: all.Core().V1().ConfigMaps(),
		SecretInformer:    all.Core().V1().Secrets(),
		ServiceInformer:   all.Core().V1().Services(),
	})
	if err != nil {
		t.Fatal(err)
	}
	pods.Start(ctx.Done())
	all.Start(ctx.Done())
	defer all.Shutdown()
	defer pods.Shutdown()
	defer cancel() // the informers and controllers stop before the waits above
	wg.Go(func() {
		if err := pc.Run(ctx, 2); err != nil && ctx.Err() == nil {
			t.Errorf("pod controller: %v", err)
		}
	})
	for what, ready := range map[string]<-chan struct{}{"node controller": nc.Ready(), "pod controller": pc.Ready()} {
		select {
		case <-ready:
		case <-time.After(time.Minute):
			t.Fatalf("%s not ready", what)
		}
	}
	t.Logf("VK node and pod controllers ready after %v", time.Since(start).Round(time.Millisecond))

	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// No controller manager runs: the namespace's default ServiceAccount,
	// which the ServiceAccount admission plugin looks up, is made here.
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	grace := int64(5)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName: nodeName, TerminationGracePeriodSeconds: &grace, AutomountServiceAccountToken: new(bool),
			Containers: []corev1.Container{{Name: "app", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}}},
		},
	}
	created, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(created.UID)
	w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=web", ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	var phases []string // each phase the API server stored, in order; "deleted" at the end
	gone := make(chan struct{})
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			mu.Lock()
			ph := string(p.Status.Phase)
			if ev.Type == watch.Deleted {
				ph = "deleted"
			}
			if len(phases) == 0 || phases[len(phases)-1] != ph {
				phases = append(phases, ph)
			}
			mu.Unlock()
			if ev.Type == watch.Deleted {
				close(gone)
				return
			}
		}
	}()

	get := func() *corev1.Pod {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	eventually(t, 2*time.Minute, "web Running and Ready in the API server", func() bool {
		p := get()
		return p.Status.Phase == corev1.PodRunning && isReady(p.Status) &&
			len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
	t.Logf("web Ready after %v", time.Since(start).Round(time.Millisecond))
	p := get()
	status, _ := json.MarshalIndent(p.Status, "", "  ")
	t.Logf("web's status in the API server:\n%s", status)
	cs := p.Status.ContainerStatuses[0]
	if !cs.Ready || !strings.HasPrefix(cs.ContainerID, v.RuntimeName+"://") || p.Status.PodIP == "" && image != "busybox:1.35" {
		t.Fatalf("web's container status: %+v, pod IP %q", cs, p.Status.PodIP)
	}
	sandboxes, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{podsync.LabelPodUID: uid}})
	if err != nil || len(sandboxes) != 1 {
		t.Fatalf("web's sandboxes in the runtime: %v, %v", sandboxes, err)
	}

	deleted := time.Now()
	if err := client.CoreV1().Pods(ns).Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gone:
	case <-time.After(2 * time.Minute):
		t.Fatal("web's API object not deleted")
	}
	t.Logf("web's API object deleted %v after the delete call", time.Since(deleted).Round(time.Millisecond))
	if _, err := client.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("web after its deletion: %v", err)
	}
	mu.Lock()
	t.Logf("web's phases in the API server: %v", phases)
	if n := len(phases); n < 2 || phases[n-2] != string(final) {
		t.Errorf("web's phase before its object went: %v, want %s (the terminal status the provider notified)", phases, final)
	}
	mu.Unlock()
	eventually(t, time.Minute, "nothing of web left in the runtime", func() bool {
		sbs, err1 := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{podsync.LabelPodUID: uid}})
		cts, err2 := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{podsync.LabelPodUID: uid}})
		return err1 == nil && err2 == nil && len(sbs) == 0 && len(cts) == 0
	})
	if left, _ := provider.GetPods(ctx); len(left) != 0 {
		t.Fatalf("the provider still holds %d pods", len(left))
	}
	t.Logf("flow done in %v", time.Since(start).Round(time.Millisecond))
}

func isReady(s corev1.PodStatus) bool {
	for _, c := range s.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func eventually(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func clientFor(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// Certificates as data, not files: client-go watches certificate files
	// with a goroutine that outlives every client.
	if err := rest.LoadTLSFiles(cfg); err != nil {
		t.Fatal(err)
	}
	cfg.CertFile, cfg.KeyFile, cfg.CAFile = "", "", ""
	cfg.QPS, cfg.Burst = 50, 100
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
