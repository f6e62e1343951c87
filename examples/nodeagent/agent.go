package main

import (
	"context"
	"fmt"
	"log"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/apiobjects"
	"github.com/podstart/podstart/containerlogs"
	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/csi"
	"github.com/podstart/podstart/devicemanager"
	"github.com/podstart/podstart/eviction"
	"github.com/podstart/podstart/imagegc"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/images/pullrecords"
	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/nodemetrics"
	"github.com/podstart/podstart/nodestatus"
	"github.com/podstart/podstart/pluginmanager"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/probes"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/staticpods"
	"github.com/podstart/podstart/stats"
	"github.com/podstart/podstart/statusmanager"
	"github.com/podstart/podstart/volumemanager"
)

// Config is what the agent needs: an API client, a runtime, and the node's
// name and directories.
type Config struct {
	Client kubernetes.Interface
	// EventClient sends the events (nil: Client). Kubelet sends them
	// through a client of their own, rate-limited apart (eventRecordQPS
	// 50, eventBurst 100), so that a burst of events never delays a
	// status write.
	EventClient kubernetes.Interface
	Runtime     runtime.Runtime
	NodeName    string
	RootDir     string
	PodLogsDir  string
	// Clock drives the Lease renewals, node status updates, runtime status
	// checks and the status manager's periodic reconcile.
	Clock clock.WithTicker
	// ClusterDNS and ClusterDomain are kubelet's --cluster-dns and
	// --cluster-domain, for pods with the ClusterFirst DNS policy.
	ClusterDNS    []string
	ClusterDomain string
	// ResolvConf is kubelet's --resolv-conf, the host resolv.conf for pods
	// with the Default DNS policy, and ClusterFirst ones without
	// ClusterDNS ("" is kubelet's default, /etc/resolv.conf); NoResolvConf
	// is --resolv-conf="" (a nameserver on the local machine).
	ResolvConf   string
	NoResolvConf bool
	// Ready, if set, is called once the node is registered and the pods
	// bound to it are known (tests wait on it).
	Ready func()
	// PodCgroups, if set, makes each pod's cgroup before its sandbox and
	// removes it after the kill (podworker.WithPodCgroups; a
	// cgroups.Manager whose EnsureQoS the caller ran). Nil: pods get the
	// cgroup the runtime makes under the parent the sandbox names.
	PodCgroups podworker.PodCgroups
	// CgroupRoot is kubelet's --cgroup-root, the root PodCgroups makes
	// kubepods under ("": "/"); sandboxes name their pod cgroup under it.
	CgroupRoot string
	// CgroupDriver is kubelet's --cgroup-driver, "cgroupfs" (default) or
	// "systemd": how sandboxes name their pod cgroup's parent; PodCgroups
	// must use the same.
	CgroupDriver string
	// NodeAPI, if set, serves kubelet's node API (logs, exec, attach,
	// port-forward, stats) with kubelet's authentication and
	// authorization through the API server.
	NodeAPI *NodeAPI
	// ImageGC, if set, collects unused images with this policy every 5
	// minutes (imagegc; kubelet's is imagegc.DefaultPolicy()). Nil: never,
	// as the tests on a runtime shared with other tests want.
	ImageGC *imagegc.Policy
	// Eviction, if set, runs kubelet's eviction manager with these
	// thresholds (eviction.DefaultThresholds() are kubelet's) over CRI
	// stats and the host's: pods under node pressure are evicted (Failed,
	// Evicted), new pods refused as kubelet's admission refuses them, and
	// the pressure conditions reported on the Node. Nil: none.
	Eviction []eviction.Threshold
	// MaxPods is kubelet's --max-pods, the node's pods capacity
	// (0: kubelet's default, 110).
	MaxPods int
	// AllowedUnsafeSysctls is kubelet's --allowed-unsafe-sysctls: the
	// sysctls (names, or prefixes ending in "*") pods may set besides
	// kubelet's safe ones for this kernel; admission rejects a pod setting
	// any other (SysctlForbidden).
	AllowedUnsafeSysctls []string
	// Mounter mounts the tmpfs of Secret, downward API, projected and
	// Memory emptyDir volumes and unmounts them when pods go (nil: the
	// host's; the agent then needs CAP_SYS_ADMIN, as kubelet does). Tests
	// over a fake runtime pass mounts/fake's.
	Mounter mounts.Mounter
	// Trace, if set, hears where each pod's start spends its time
	// (TraceEvent's stages: the watch, admission, each sync, podsync's
	// steps, the status manager's reads and patches), from the
	// goroutines doing the work: it must not block.
	Trace func(TraceEvent)
	// Metrics, if set, is the node's /metrics registry, whose
	// UnaryClientInterceptor the caller gave runtime.Dial (runtime
	// operations are counted there); nil: the agent makes its own.
	Metrics *nodemetrics.Metrics
	// StaticPods, if set, runs kubelet's static pod sources beside the
	// API server's, with their mirror pods (staticpods.go).
	StaticPods *StaticPods
}

type agent struct {
	Config
	host    criconfig.Node // the node as criconfig sees it, read from the host
	workers *podworker.Workers
	// statuses writes the pods' statuses; a pod deleted from the API
	// server is forgotten there (podGone).
	statuses *statusmanager.Manager
	evicter  atomic.Pointer[eviction.Manager] // nil: no eviction
	volumes  *apiobjects.Volumes
	// vm mounts the volumes that need a storage system (PVCs, generic
	// ephemeral and CSI inline volumes) through the CSI drivers
	// registered in <root-dir>/plugins_registry.
	vm *volumemanager.Manager
	// dm allocates device plugins' devices (devices.go).
	dm             *devicemanager.Manager
	devicesChanged chan struct{}    // a plugin's devices changed (devices.go)
	draHealth      chan []types.UID // pods whose DRA devices' health changed (dra.go)
	sourcesReady   atomic.Bool      // every pod bound to the node is known
	watches        *objectWatches   // the Secrets and ConfigMaps the pods refer to
	pods           cache.Store      // the informer's pods bound to this node
	stats          *stats.Provider  // nil on a runtime without CRI stats
	// metrics and probeMetrics are kubelet's /metrics and /metrics/probes
	// (metrics.go).
	metrics      *nodemetrics.Metrics
	probeMetrics *nodemetrics.Probes
	static       *staticAgent // static pods and mirror pods
}

// Run runs the agent until ctx ends. Pods keep running on the runtime when
// it returns, as they do when kubelet stops.
func Run(ctx context.Context, cfg Config) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: every goroutine started here has ended
	defer cancel()
	a := &agent{Config: cfg}
	if err := a.initMetrics(); err != nil {
		return err
	}

	a.host = criconfig.FromHost(criconfig.Node{Name: cfg.NodeName, RootDir: cfg.RootDir, PodLogsDir: cfg.PodLogsDir,
		ClusterDNS: cfg.ClusterDNS, ClusterDomain: cfg.ClusterDomain, CgroupRoot: cfg.CgroupRoot, CgroupDriver: cfg.CgroupDriver,
		ResolvConf: cfg.ResolvConf, NoResolvConf: cfg.NoResolvConf,
		// Resource claims are prepared by the DRA manager (dra.go);
		// block volumes mapped by the volume manager (its DeviceOptions).
		DynamicResourceAllocation: true, BlockVolumes: true})
	v, err := cfg.Runtime.Version(ctx, "v1")
	if err != nil {
		return fmt.Errorf("runtime version: %w", err)
	}
	// What the runtime supports (user namespaces, Strict supplemental
	// groups), as kubelet reads it from CRI Status.
	st, err := cfg.Runtime.Status(ctx, false)
	if err != nil {
		return fmt.Errorf("runtime status: %w", err)
	}
	a.host = a.host.WithRuntimeStatus(st)

	// Events reach the API server as kubelet's do: source component "kubelet", host the node.
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	events := cfg.EventClient
	if events == nil {
		events = cfg.Client
	}
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: events.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: cfg.NodeName})
	// The agent's loops log their failures (retried) through logr.
	logger := funcr.New(func(prefix, args string) { log.Println(prefix, args) }, funcr.Options{})
	mounter := cfg.Mounter
	if mounter == nil {
		mounter = &mounts.HostMounter{}
	}
	// Persistent volumes, as kubelet's: CSI drivers register through
	// their sockets in <root-dir>/plugins_registry (pluginmanager) with
	// kubelet's CSI plugin (csi), which writes their node info (the
	// Node's nodeid annotation and topology labels, the CSINode); the
	// volume manager stages and publishes the pods' volumes through it.
	// Both run until ctx ends.
	plugin, err := csi.New(cfg.RootDir, cfg.NodeName, csi.WithLogger(logger),
		csi.WithNodeInfoWriter(nodeInfoWriter{client: cfg.Client, nodeName: cfg.NodeName}))
	if err != nil {
		return err
	}
	storage := newStorageObjects(cfg.Client, cfg.NodeName)
	wg.Go(func() { storage.run(ctx) }) // ends at cancel, before wg.Wait
	if a.vm, err = volumemanager.New(cfg.NodeName, cfg.RootDir, storage, volumemanager.CSI(plugin),
		volumemanager.WithEventRecorder(recorder), volumemanager.WithMounter(mounter)); err != nil {
		return err
	}
	plugins, err := pluginmanager.New(filepath.Join(cfg.RootDir, pluginmanager.DirName))
	if err != nil {
		return err
	}
	plugins.AddHandler("CSIPlugin", plugin)
	claims, err := a.newDRA(ctx, logger)
	if err != nil {
		return err
	}
	defer claims.Close()
	plugins.AddHandler("DRAPlugin", claims)
	if a.dm, err = a.newDeviceManager(logger); err != nil {
		return err
	}

	heartbeat := a.newHeartbeat()
	node, err := register(ctx, heartbeat, cfg.Clock)
	if err != nil {
		return err
	}
	wg.Go(func() { heartbeat.Run(ctx) })
	wg.Go(func() { a.reportDevices(ctx, heartbeat) })
	wg.Go(func() {
		if err := (nodeInfoWriter{client: cfg.Client, nodeName: cfg.NodeName}).initCSINode(ctx, node); err != nil && ctx.Err() == nil {
			log.Println("nodeagent: CSINode:", err)
		}
	})
	wg.Go(func() {
		if err := plugins.Run(logr.NewContext(ctx, logger)); err != nil && ctx.Err() == nil {
			log.Println("nodeagent: plugin manager:", err)
		}
	})
	// The volume manager reads CSIDrivers and the Node from their
	// informers: synced before its first pass.
	if !cache.WaitForCacheSync(ctx.Done(), storage.synced) {
		return ctx.Err()
	}
	wg.Go(func() { a.vm.Run(logr.NewContext(ctx, logger)) })

	hostIPs := nodeIPs(node)
	a.host.HostIPs, a.host.Allocatable = hostIPs, node.Status.Allocatable
	// Kubelet's image pull records (KubeletEnsureSecretPulledImages, on by
	// default in v1.37): an image a pod pulled with credentials is not
	// used by a pod that could not pull it itself, without a pull with
	// that pod's credentials. Kept in <root-dir>/image_manager, as
	// kubelet's; pruned by image GC.
	records, err := pullrecords.New(logr.NewContext(ctx, logger), pullrecords.Config{Dir: filepath.Join(cfg.RootDir, "image_manager")}, cfg.Runtime)
	if err != nil {
		return fmt.Errorf("image pull records: %w", err)
	}
	ims := images.NewManager(cfg.Runtime, images.WithRecorder(a.metrics.Recorder(recorder)), images.WithPullRecords(records))
	defer ims.Close()
	prober := probes.New(cfg.Runtime, probes.WithRecorder(recorder), probes.WithOnProbe(a.probeMetrics.OnProbe))
	defer prober.Close()
	objects := apiObjects{cfg.Client}
	// The Secrets and ConfigMaps the pods refer to, watched one by one as
	// kubelet's managers watch them: read from the watches, and a change
	// syncs the pods that refer to the object again, so that their
	// volumes follow it (podworker does not resync a steady pod every
	// minute). Stopped after the workers.
	a.watches = newObjectWatches(objects, func(ref podworker.ObjectRef) { a.workers.ResyncReferencing(ref) })
	defer a.watches.shutdown()
	// ClusterTrustBundles from an informer started on first use, as
	// kubelet's; stopped after the workers (their volume setups read it).
	// A bundle's change syncs the pods with clusterTrustBundle
	// projections again.
	bundles := newTrustBundles(cfg.Client)
	bundles.changed = func() { a.workers.ResyncMatching(hasTrustBundleProjection) }
	defer bundles.shutdown()
	tokens := apiobjects.NewTokens(objects)
	wg.Go(func() { tokens.Run(ctx) }) // drops expired tokens every minute
	// Pod certificates: requested from their signers, renewed by Run,
	// which syncs a pod again when one of its certificates is issued.
	certs := apiobjects.NewPodCertificates(objects, types.NodeName(cfg.NodeName), node.UID,
		apiobjects.WithPodCertificateClock(cfg.Clock), apiobjects.WithPodCertificateRecorder(recorder),
		apiobjects.WithPodCertificateNotify(a.resync))
	a.volumes = apiobjects.NewVolumes(a.watches, cfg.RootDir, apiobjects.WithTokens(tokens), apiobjects.WithMounter(mounter),
		apiobjects.WithEventRecorder(recorder), apiobjects.WithNodeAllocatable(node.Status.Allocatable),
		apiobjects.WithPodCertificates(certs), apiobjects.WithClusterTrustBundles(bundles))
	// Services from an informer's cache, as kubelet reads them for
	// containers' service variables (a live list per container start is an
	// API round trip on each pod's way to its container). It has read
	// them once before the first pod is handled (run and synced before
	// the pods' informer).
	svcInformer := coreinformers.NewServiceInformer(cfg.Client, metav1.NamespaceAll, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	services := serviceCache{corelisters.NewServiceLister(svcInformer.GetIndexer())}
	var syncOpts []podsync.Option
	if cfg.Trace != nil {
		syncOpts = append(syncOpts, podsync.WithTrace(a.traceStep))
	}
	syncer := podsync.NewSyncer(cfg.Runtime, ims, append(syncOpts,
		podsync.WithNode(a.host), podsync.WithMounter(mounter),
		podsync.WithRootDir(cfg.RootDir), podsync.WithPodLogsDir(cfg.PodLogsDir),
		podsync.WithRecorder(recorder), podsync.WithProbes(prober),
		podsync.WithVolumes(a.volumeProvider()), podsync.WithDevices(podsync.JoinDevices(claims, a.dm, a.vm)), podsync.WithResourcePreparer(claims),
		// Services give every container KUBERNETES_SERVICE_HOST and _PORT
		// (client-go's in-cluster config) and, with enableServiceLinks, its
		// namespace's service variables.
		podsync.WithEnvResolver(apiobjects.Env{Source: a.watches, Services: services, ServicesSynced: svcInformer.HasSynced}))...)
	// Kubelet reads only the pod's imagePullSecrets: the ServiceAccount
	// admission plugin has copied its account's into it. The agent also
	// reads the account's, for pods made without that plugin (client-go's
	// fake clientset in its tests).
	// The pod's own imagePullSecrets only, as kubelet: the API server's
	// ServiceAccount admission has copied its service account's into a
	// pod that listed none. (Reading the service account at each sync, as
	// apiobjects.PullSecrets.ServiceAccounts can, cost four GETs per pod
	// start that kubelet never makes.)
	pullSecrets := &apiobjects.PullSecrets{Source: objects, Recorder: recorder}
	// Statuses reach the API server through kubelet's status manager,
	// which also deletes a pod's object once the worker removed the pod.
	var client statusmanager.Client = apiClient{cfg.Client}
	if cfg.Trace != nil {
		client = tracedClient{apiClient{cfg.Client}, a}
	}
	a.static = newStaticAgent(cfg.Client, cfg.NodeName)
	statuses := statusmanager.New(client, statusmanager.WithClock(cfg.Clock), statusmanager.WithMirrorPods(a.static.mirrors))
	a.statuses = statuses
	var workerOpts []podworker.Option
	if cfg.PodCgroups != nil {
		workerOpts = append(workerOpts, podworker.WithPodCgroups(cfg.PodCgroups))
	}
	// Container logs rotate as kubelet's (10Mi, 5 files, every 10 s) on a
	// runtime that reopens them.
	if rt, ok := cfg.Runtime.(containerlogs.Runtime); ok {
		logs, err := containerlogs.New(rt, containerlogs.WithPodLogsDir(cfg.PodLogsDir), containerlogs.WithClock(cfg.Clock))
		if err != nil {
			return err
		}
		wg.Go(func() { logs.Run(ctx) })
	}
	var imageGC *imagegc.Manager
	if cfg.ImageGC != nil {
		rt, ok := cfg.Runtime.(imagegc.Runtime)
		if !ok {
			return fmt.Errorf("image GC: the runtime does not report its image filesystem (CRI ImageFsInfo)")
		}
		gc, err := imagegc.New(rt, imagegc.WithPolicy(*cfg.ImageGC), imagegc.WithClock(cfg.Clock),
			imagegc.WithRecorder(recorder, imagegc.NodeRef(cfg.NodeName)), imagegc.WithOnPass(a.metrics.OnImageGC),
			imagegc.WithPullRecords(records))
		if err != nil {
			return err
		}
		imageGC = gc
		wg.Go(func() { gc.Run(ctx) })
	}
	admit, err := a.newAdmission(heartbeat, recorder)
	if err != nil {
		return err
	}
	workerOpts = append(workerOpts, podworker.WithAdmission(admit), podworker.WithVolumeManager(a.vm), podworker.WithResourceClaims(claims),
		podworker.WithRuntimeName(v.RuntimeName), podworker.WithHostIPs(hostIPs...),
		podworker.WithProbes(prober), podworker.WithPullSecrets(func(ctx context.Context, pod *corev1.Pod) ([]corev1.Secret, error) {
			a.trace(pod, "sync", 0, false)
			if staticpods.IsStaticPod(pod) {
				return nil, nil // no API objects: neither pull secrets nor a service account's
			}
			return pullSecrets.ForPod(ctx, pod)
		}),
		podworker.WithOnRelist(a.metrics.OnRelist),
		podworker.WithOnSync(func(uid types.UID, st podworker.PodState) {
			a.metrics.OnSync(uid, st)
			// FailedToRetrieveImagePullSecret, after a pull that failed
			// (kubelet v1.37).
			pullSecrets.AfterSync(st.Pod, st.Result)
			statuses.OnSync(uid, withDeviceHealth(claims, st))
			a.trace(st.Pod, "synced", 0, podReady(st.APIStatus))
		}))
	a.workers = podworker.New(syncer, workerOpts...)
	defer a.workers.Close()
	wg.Go(func() { a.reconcileClaims(ctx, claims, cfg.Clock) })
	if err := a.startDevices(ctx, a.dm, plugins, claims, wg.Go); err != nil {
		return err
	}
	defer a.dm.Stop()
	a.static.workers = a.workers
	staticSeen := make(chan struct{})
	wg.Go(func() { a.static.run(ctx, cfg.StaticPods, cfg.NodeName, staticSeen) })
	// One stats provider for eviction and the node API's summary, as
	// kubelet's: eviction's passes (every 10 s) keep the CPU samples the
	// usage rates come from; without eviction a loop of its own does.
	if sl, ok := cfg.Runtime.(runtime.StatsLister); ok {
		if fs, ok := cfg.Runtime.(runtime.ImageFsInfoReader); ok {
			// The CSI volumes' stats (NodeGetVolumeStats), cached per pod
			// and refreshed on kubelet's period in real time, as kubelet's
			// fs resource analyzer.
			volumeStats := stats.NewVolumeAnalyzer(a.vm)
			wg.Go(func() { volumeStats.Run(logr.NewContext(ctx, logger)) })
			a.stats = stats.New(sl, fs, stats.WithNodeName(cfg.NodeName), stats.WithRootDir(cfg.RootDir),
				stats.WithPodLogsDir(cfg.PodLogsDir), stats.WithClock(cfg.Clock), stats.WithCgroupRoot(cfg.CgroupRoot),
				stats.WithVolumeStats(volumeStats))
			if cfg.Eviction == nil {
				wg.Go(func() { a.sampleStats(ctx) })
			}
		}
	}
	if cfg.NodeAPI != nil {
		errc := make(chan error, 1)
		wg.Go(func() { errc <- a.serveNodeAPI(ctx) })
		defer func() {
			cancel()
			if err := <-errc; err != nil {
				log.Println("nodeagent:", err)
			}
		}()
	}
	if cfg.Eviction != nil {
		m, err := a.newEviction(recorder, imageGC, node.UID)
		if err != nil {
			return err
		}
		a.evicter.Store(m)
		wg.Go(func() { _ = m.Run(ctx) })
	}

	// The pods bound to this node, as kubelet's API source watches them:
	// the informer a factory would make for them (the same indexer), made
	// without one, as informers' factory imports every API group's
	// informers and listers (~120 more packages to compile).
	informer := coreinformers.NewFilteredPodInformer(cfg.Client, metav1.NamespaceAll, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", cfg.NodeName).String()
		})
	a.pods = informer.GetStore()
	wg.Go(func() { certs.Run(ctx) }) // its notifications resync pods through the workers
	podHandler, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { a.podChanged(obj) },
		UpdateFunc: func(_, obj any) { a.podChanged(obj) },
		DeleteFunc: a.podGone,
	})
	if err != nil {
		return err
	}
	wg.Go(func() { _ = statuses.Run(logr.NewContext(ctx, logger)) })
	wg.Go(func() { svcInformer.Run(ctx.Done()) }) // ends at cancel, before wg.Wait
	if !cache.WaitForCacheSync(ctx.Done(), svcInformer.HasSynced) {
		return ctx.Err()
	}
	wg.Go(func() { informer.Run(ctx.Done()) }) // ends at cancel, before wg.Wait
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced, podHandler.HasSynced) {
		return ctx.Err()
	}
	select { // kubelet's sources ready: the static pod sources too
	case <-staticSeen:
	case <-ctx.Done():
		return ctx.Err()
	}
	a.workers.SourcesReady()
	a.sourcesReady.Store(true)
	a.volumeSourcesReady(ctx)
	if cfg.Ready != nil {
		cfg.Ready()
	}
	<-ctx.Done()
	return nil
}

// volumeSourcesReady tells the volume manager every pod is known, once
// each admitted pod of the initial list is in its desired state (kubelet's
// populator adds them from the pod manager; the workers add a pod only at
// its first sync): from then on it unpublishes and unstages what no pod
// wants, which after a restart are the volumes of pods deleted meanwhile.
func (a *agent) volumeSourcesReady(ctx context.Context) {
	for _, uid := range a.workers.Pods() {
		if st, ok := a.workers.Status(uid); ok && !st.Terminating && st.Pod != nil {
			if err := a.vm.AddPod(ctx, st.Pod); err != nil {
				log.Printf("pod %s/%s: volumes: %v", st.Pod.Namespace, st.Pod.Name, err)
			}
		}
	}
	a.vm.SourcesReady()
}

func (a *agent) podChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName != a.NodeName || a.static.apiPod(pod, false) {
		return
	}
	a.trace(pod, "watch", 0, false)
	a.metrics.ObservedPodOnWatch(pod)
	var err error
	if pod.DeletionTimestamp != nil {
		err = a.workers.Delete(pod, pod.DeletionGracePeriodSeconds)
	} else {
		// Admission (kubelet's, podworker.WithAdmission) runs before the
		// pod's first sync; a rejected pod is never run. Reconcile is
		// kubelet's pod config: the echo of our own status write (a
		// status-only change) updates the pod without a sync.
		a.metrics.Seen(pod.UID) // before its worker may sync it
		if err = a.workers.Reconcile(pod); err == nil {
			a.watches.setPod(pod)
		}
		a.trace(pod, "admitted", 0, false)
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
	if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName == a.NodeName && !a.static.apiPod(pod, true) {
		if err := a.workers.Delete(pod, nil); err != nil {
			log.Printf("pod %s/%s: %v", pod.Namespace, pod.Name, err)
		}
		// Its tokens and pod certificates go with it, as kubelet drops
		// them when it forgets the pod, and the watches of its objects;
		// its status, which nothing needs any more, once the worker has
		// no more of it (kubelet's RemoveOrphanedStatuses).
		if _, held := a.workers.Status(pod.UID); !held {
			a.statuses.Forget(pod.UID)
		}
		a.volumes.ForgetPod(pod.UID)
		a.watches.forgetPod(pod.UID)
	}
}

// resync syncs the pod again: one of its pod certificates was issued,
// renewed or refused, so its projected volumes are written again (kubelet
// remounts projected volumes periodically).
func (a *agent) resync(uid types.UID) { a.workers.Resync(uid) }

// hasTrustBundleProjection: the pod has a clusterTrustBundle projection,
// whose content a change of any bundle may change (by name or by signer
// and labels).
func hasTrustBundleProjection(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ClusterTrustBundle != nil {
				return true
			}
		}
	}
	return false
}

// apiClient is statusmanager's Client over client-go. Kubelet's status
// manager reads the pod live before each patch (not from its pod
// manager's cache), so GetPod does too.
type apiClient struct{ kubernetes.Interface }

func (c apiClient) GetPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	return c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
}

func (c apiClient) PatchPodStatus(ctx context.Context, ns, name string, patch []byte) (*corev1.Pod, error) {
	return c.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
}

func (c apiClient) DeletePod(ctx context.Context, ns, name string, uid types.UID) error {
	return c.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64), Preconditions: metav1.NewUIDPreconditions(string(uid))})
}

// newEviction makes kubelet's eviction manager over CRI stats and the
// host's, reclaiming images with imageGC (when the agent collects them)
// before it evicts pods through the workers.
func (a *agent) newEviction(recorder record.EventRecorder, imageGC *imagegc.Manager, nodeUID types.UID) (*eviction.Manager, error) {
	if a.stats == nil {
		return nil, fmt.Errorf("eviction: the runtime reports no stats (CRI ListPodSandboxStats, ImageFsInfo)")
	}
	opts := []eviction.Option{eviction.WithThresholds(a.Eviction), eviction.WithClock(a.Clock), eviction.WithRecorder(recorder),
		eviction.WithNodeRef(&corev1.ObjectReference{Kind: "Node", Name: a.NodeName, UID: nodeUID}),
		eviction.WithPodCleanedUp(func(pod *corev1.Pod) bool { _, held := a.workers.Status(pod.UID); return !held })}
	if imageGC != nil {
		opts = append(opts, eviction.WithImageGC(imageGC))
	}
	return eviction.New(eviction.ProviderSource(a.stats), a.metrics.EvictionKiller(evictions{a}), opts...), nil
}

// sampleStats takes the stats samples the summary's CPU rates come from
// every 10 s, what kubelet's eviction manager does for it.
func (a *agent) sampleStats(ctx context.Context) {
	t := a.Clock.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		_, _ = a.stats.Get(ctx, true)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// evictions is the eviction manager's Killer: the pods the workers run,
// and an eviction through podworker.Evict.
type evictions struct{ a *agent }

func (k evictions) ActivePods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, uid := range k.a.workers.Pods() {
		if st, ok := k.a.workers.Status(uid); ok && !st.Terminating && st.Pod != nil {
			out = append(out, st.Pod)
		}
	}
	return out
}

func (k evictions) Evict(_ context.Context, e eviction.Eviction) error {
	return k.a.workers.Evict(e.Pod, e.GracePeriodSeconds, func(s *corev1.PodStatus) { e.Status(s, metav1.Now()) })
}

// pressure reports a condition of the eviction manager (false without one).
func (a *agent) pressure(under func(*eviction.Manager) bool) func() bool {
	return func() bool {
		m := a.evicter.Load()
		return m != nil && under(m)
	}
}

// register is kubelet's registerWithAPIServer: it tries until the node is
// registered or ctx ends, waiting 100 ms after the first failure, twice as
// long after each next one, 7 s at most. (Kubelet also waits before its
// first try; the agent tries at once.) An API server that is down or
// hanging when the agent starts delays it; it does not end it.
func register(ctx context.Context, h *nodestatus.Heartbeat, clk clock.Clock) (*corev1.Node, error) {
	step := 100 * time.Millisecond
	for {
		node, err := h.Register(ctx)
		if err == nil {
			return node, nil
		}
		log.Printf("nodeagent: %v; retrying in %v", err, step)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-clk.After(step):
		}
		step = min(2*step, 7*time.Second)
	}
}
