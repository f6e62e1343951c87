package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/apiobjects"
	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/probes"
	"github.com/podstart/podstart/runtime"
)

// Config is what the agent needs: an API client, a runtime, and the node's
// name and directories.
type Config struct {
	Client     kubernetes.Interface
	Runtime    runtime.Runtime
	NodeName   string
	RootDir    string
	PodLogsDir string
	// Clock drives the Lease renewals and node status updates.
	Clock clock.WithTicker
	// ClusterDNS and ClusterDomain are kubelet's --cluster-dns and
	// --cluster-domain, for pods with the ClusterFirst DNS policy.
	ClusterDNS    []string
	ClusterDomain string
	// Ready, if set, is called once the node is registered and the pods
	// bound to it are known (tests wait on it).
	Ready func()
}

type agent struct {
	Config
	host    criconfig.Node // the node as criconfig sees it, read from the host
	pods    cache.Indexer  // the informer's pods bound to this node
	workers *podworker.Workers

	mu      sync.Mutex
	pending map[types.UID]podworker.PodState // newest state per pod, not yet written
	wake    chan struct{}
	sent    map[types.UID]corev1.PodStatus // the last status patched
}

// Run runs the agent until ctx ends. Pods keep running on the runtime when
// it returns, as they do when kubelet stops.
func Run(ctx context.Context, cfg Config) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: every goroutine started here has ended
	defer cancel()
	a := &agent{Config: cfg, pending: map[types.UID]podworker.PodState{}, wake: make(chan struct{}, 1), sent: map[types.UID]corev1.PodStatus{}}

	a.host = criconfig.FromHost(criconfig.Node{Name: cfg.NodeName, RootDir: cfg.RootDir, PodLogsDir: cfg.PodLogsDir,
		ClusterDNS: cfg.ClusterDNS, ClusterDomain: cfg.ClusterDomain})
	v, err := cfg.Runtime.Version(ctx, "v1")
	if err != nil {
		return fmt.Errorf("runtime version: %w", err)
	}
	node, err := a.registerNode(ctx, v.RuntimeName+"://"+v.RuntimeVersion)
	if err != nil {
		return err
	}
	wg.Go(func() { a.heartbeat(ctx, node) })

	// Events reach the API server as kubelet's do: source component "kubelet", host the node.
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cfg.Client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: cfg.NodeName})

	hostIPs := nodeIPs(node)
	a.host.HostIPs, a.host.Allocatable = hostIPs, node.Status.Allocatable
	ims := images.NewManager(cfg.Runtime, images.WithRecorder(recorder))
	defer ims.Close()
	prober := probes.New(cfg.Runtime, probes.WithRecorder(recorder))
	defer prober.Close()
	objects := apiObjects{cfg.Client}
	syncer := podsync.NewSyncer(cfg.Runtime, ims,
		podsync.WithNode(a.host),
		podsync.WithRootDir(cfg.RootDir), podsync.WithPodLogsDir(cfg.PodLogsDir),
		podsync.WithRecorder(recorder), podsync.WithProbes(prober),
		podsync.WithVolumes(&volumes{client: cfg.Client, rootDir: cfg.RootDir}),
		podsync.WithEnvResolver(apiobjects.Env{Source: objects}))
	// Kubelet reads only the pod's imagePullSecrets: the ServiceAccount
	// admission plugin has copied its account's into it. The agent also
	// reads the account's, for pods made without that plugin (client-go's
	// fake clientset in its tests).
	pullSecrets := apiobjects.PullSecrets{Source: objects, Recorder: recorder, ServiceAccounts: objects}
	a.workers = podworker.New(syncer, cfg.Runtime,
		podworker.WithRuntimeName(v.RuntimeName), podworker.WithHostIPs(hostIPs...),
		podworker.WithProbes(prober), podworker.WithPullSecrets(pullSecrets.ForPod),
		podworker.WithOnSync(a.onSync))
	defer a.workers.Close()

	// The pods bound to this node, as kubelet's API source watches them.
	factory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", cfg.NodeName).String()
	}))
	informer := factory.Core().V1().Pods().Informer()
	a.pods = informer.GetIndexer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { a.podChanged(obj) },
		UpdateFunc: func(_, obj any) { a.podChanged(obj) },
		DeleteFunc: a.podGone,
	}); err != nil {
		return err
	}
	wg.Go(func() { a.writeStatuses(ctx) })
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer cancel() // the informers stop before Shutdown waits for them
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return ctx.Err()
	}
	a.workers.SourcesReady()
	if cfg.Ready != nil {
		cfg.Ready()
	}
	<-ctx.Done()
	return nil
}

func (a *agent) podChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName != a.NodeName {
		return
	}
	var err error
	if pod.DeletionTimestamp != nil {
		err = a.workers.Delete(pod, pod.DeletionGracePeriodSeconds)
	} else {
		err = a.workers.Upsert(pod)
	}
	if err != nil {
		log.Printf("pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
}

// podGone: the pod object was removed (force-deleted, or by us): stop it
// with its own grace period.
func (a *agent) podGone(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName == a.NodeName {
		if err := a.workers.Delete(pod, nil); err != nil {
			log.Printf("pod %s/%s: %v", pod.Namespace, pod.Name, err)
		}
	}
}

// onSync runs on the pod's goroutine: it only records the newest state for
// writeStatuses.
func (a *agent) onSync(uid types.UID, st podworker.PodState) {
	a.mu.Lock()
	a.pending[uid] = st
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// writeStatuses patches each pod's status when it changed, and deletes a
// removed pod's object (grace period 0), as kubelet's status manager does.
// podstart gap: the status manager (a queue off the pod goroutines, "did it
// change", the patch, when a pod may be deleted) is the agent's to write.
func (a *agent) writeStatuses(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
		}
		a.mu.Lock()
		batch := a.pending
		a.pending = map[types.UID]podworker.PodState{}
		a.mu.Unlock()
		for uid, st := range batch {
			if err := a.writeStatus(ctx, uid, st); err != nil && ctx.Err() == nil {
				log.Printf("pod %s/%s status: %v", st.Pod.Namespace, st.Pod.Name, err)
			}
		}
	}
}

func (a *agent) writeStatus(ctx context.Context, uid types.UID, st podworker.PodState) error {
	pods := a.Client.CoreV1().Pods(st.Pod.Namespace)
	obj, ok, _ := a.pods.Get(st.Pod)
	if !ok || obj.(*corev1.Pod).UID != uid {
		delete(a.sent, uid)
		return nil // the object is gone, or a new pod took its name
	}
	cur := obj.(*corev1.Pod)
	if !equality.Semantic.DeepEqual(a.sent[uid], st.APIStatus) && !equality.Semantic.DeepEqual(cur.Status, st.APIStatus) {
		patch, err := statusPatch(cur, st.APIStatus)
		if err != nil {
			return err
		}
		if _, err := pods.Patch(ctx, cur.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		a.sent[uid] = st.APIStatus
	}
	if !st.Removed {
		return nil
	}
	delete(a.sent, uid)
	if cur.DeletionTimestamp == nil {
		return nil
	}
	zero := int64(0)
	err := pods.Delete(ctx, cur.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: metav1.NewUIDPreconditions(string(uid))})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// statusPatch is kubelet's PatchPodStatus: a strategic merge patch from the
// pod's current status to the new one; the UID, only in the new object,
// lands in the patch as a precondition.
func statusPatch(cur *corev1.Pod, status corev1.PodStatus) ([]byte, error) {
	oldJSON, err := json.Marshal(corev1.Pod{Status: cur.Status})
	if err != nil {
		return nil, err
	}
	newJSON, err := json.Marshal(corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: cur.UID}, Status: status})
	if err != nil {
		return nil, err
	}
	return strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, corev1.Pod{})
}
