// Command nodeagent is podstart's reference node agent: it joins a cluster as
// a node and runs the pods bound to it the way kubelet does, so the control
// plane cannot tell it from a kubelet for those pods. It registers the Node
// and renews its Lease and status (nodestatus), watches the pods bound to it,
// runs them through podworker, patches their status (statusmanager), fetches
// their pull secrets (with kubelet's image pull records in
// <root-dir>/image_manager: a private image is not handed to a pod that
// could not pull it), writes their Secret, ConfigMap, downward API and
// projected volumes (service account tokens included), mounts their
// persistent, generic ephemeral and CSI inline volumes through the CSI
// drivers that register in <root-dir>/plugins_registry (pluginmanager, csi,
// volumemanager), and honours deletion with graceful termination before
// deleting the pod object.
//
// Everything about pods and the node comes from podstart's public API; the
// rest (the API client, informer, events) is client-go, adapted to
// podstart's small interfaces in objects.go, node.go and agent.go. By
// default it runs the built-in fake runtime in process, so it runs
// anywhere:
//
//	go run ./examples/nodeagent -kubeconfig ~/.kube/config -node-name agent-1
//	go run ./examples/nodeagent -kubeconfig ~/.kube/config -node-name agent-1 \
//		-cri unix:///run/containerd/containerd.sock -root-dir /var/lib/podstart -pod-logs-dir /var/log/pods \
//		-cluster-dns 10.96.0.10
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/cgroups"
	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/eviction"
	"github.com/podstart/podstart/imagegc"
	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/nodeapi"
	"github.com/podstart/podstart/nodemetrics"
	"github.com/podstart/podstart/nodestatus"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster to join")
	nodeName := flag.String("node-name", "", "the node's name (default: the hostname)")
	endpoint := flag.String("cri", "", "CRI endpoint, e.g. unix:///run/containerd/containerd.sock; default: the built-in fake runtime")
	rootDir := flag.String("root-dir", filepath.Join(os.TempDir(), "podstart-agent"), "kubelet-style root dir (pod directories and volumes)")
	logsDir := flag.String("pod-logs-dir", "", "pod log directory (default: <root-dir>/logs)")
	clusterDNS := flag.String("cluster-dns", "", "comma-separated DNS server IPs for ClusterFirst pods (kubelet's --cluster-dns)")
	clusterDomain := flag.String("cluster-domain", "cluster.local", "the cluster's DNS domain (kubelet's --cluster-domain, whose default is none; kubeadm clusters use cluster.local)")
	resolvConf := flag.String("resolv-conf", criconfig.DefaultResolvConf, `the host resolv.conf for pods with the Default DNS policy, and ClusterFirst ones without -cluster-dns (kubelet's --resolv-conf); "" for none`)
	cgroupRoot := flag.String("cgroup-root", "", `kubelet's --cgroup-root: the cgroup (an existing cgroupfs path) the QoS and pod cgroups go under; "" for "/"`)
	perQOS := flag.Bool("cgroups-per-qos", true, "make kubelet's QoS and pod cgroups (kubelet's --cgroups-per-qos; ignored on the fake runtime)")
	driver := flag.String("cgroup-driver", cgroups.DriverCgroupfs, `kubelet's --cgroup-driver: "cgroupfs", or "systemd" (slices made through systemd's D-Bus API; the runtime must use systemd cgroups too)`)
	apiAddr := flag.String("node-api-address", ":10250", `where to serve kubelet's node API (logs, exec, attach, port-forward, stats; kubelet's --address and --port); "" for none`)
	clientCA := flag.String("client-ca-file", "", "CA bundle that verifies client certificates on the node API (kubelet's --client-ca-file); bearer tokens are reviewed through the API server")
	certFile := flag.String("tls-cert-file", "", "serving certificate of the node API (default: a self-signed one in <root-dir>/pki, as kubelet's)")
	keyFile := flag.String("tls-private-key-file", "", "key of -tls-cert-file")
	rotate := flag.Bool("rotate-server-certificates", false, "request the serving certificate through a CertificateSigningRequest to kubernetes.io/kubelet-serving and renew it (kubelet's serverTLSBootstrap); someone must approve it")
	imageGC := flag.Bool("image-gc", true, "collect unused images at kubelet's thresholds, 85% and 80% (ignored on the fake runtime)")
	evict := flag.Bool("eviction", true, "evict pods under node pressure at kubelet's hard thresholds (ignored on the fake runtime)")
	unsafeSysctls := flag.String("allowed-unsafe-sysctls", "", `comma-separated unsafe sysctls or patterns ("kernel.msg*", "net.core.somaxconn") pods may set besides the safe ones (kubelet's --allowed-unsafe-sysctls); others are rejected at admission (SysctlForbidden)`)
	maxPods := flag.Int("max-pods", nodestatus.DefaultMaxPods, "the number of pods the node runs (kubelet's --max-pods); pods beyond it are rejected at admission (OutOfpods)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	api := apiFlags{maxPods: *maxPods, addr: *apiAddr, clientCA: *clientCA, certFile: *certFile, keyFile: *keyFile, rotate: *rotate, unsafeSysctls: splitNonEmpty(*unsafeSysctls)}
	if err := run(ctx, *kubeconfig, *nodeName, *endpoint, *rootDir, *logsDir, *clusterDNS, *clusterDomain, *resolvConf, *cgroupRoot, *driver, *perQOS, *imageGC, *evict, api); err != nil {
		fmt.Fprintln(os.Stderr, "nodeagent:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, nodeName, endpoint, rootDir, logsDir, clusterDNS, clusterDomain, resolvConf, cgroupRoot, driver string, perQOS, imageGC, evict bool, api apiFlags) error {
	if nodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return err
		}
		nodeName = h
	}
	if logsDir == "" {
		logsDir = filepath.Join(rootDir, "logs")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	setKubeletRateLimits(cfg)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// Events through a client of their own, as kubelet's (eventRecordQPS
	// 50, eventBurst 100: the same numbers, a separate limiter).
	eventClient, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return err
	}
	kill, err := chaosKill()
	if err != nil {
		return err
	}
	if err := servePprof(ctx); err != nil {
		return err
	}
	var rt runtime.Runtime = fake.New()
	var podCgroups podworker.PodCgroups
	var gcPolicy *imagegc.Policy
	var thresholds []eviction.Threshold
	// The node's /metrics, whose interceptor counts the CRI calls.
	metrics, err := nodemetrics.New(nodeName)
	if err != nil {
		return err
	}
	if endpoint != "" {
		c, err := runtime.Dial(ctx, endpoint, runtime.WithDialOptions(grpc.WithChainUnaryInterceptor(metrics.UnaryClientInterceptor())))
		if err != nil {
			return err
		}
		defer c.Close()
		rt = c
		if kill != nil {
			rt = chaosRuntime{c, kill}
		}
		if perQOS {
			m, err := hostCgroups(ctx, rootDir, cgroupRoot, driver)
			if err != nil {
				return err
			}
			podCgroups = m
		}
		if imageGC {
			p := imagegc.DefaultPolicy()
			gcPolicy = &p
		}
		if evict {
			thresholds = eviction.DefaultThresholds()
		}
	}
	nodeAPI, err := api.nodeAPI(ctx, client, nodeName, rootDir)
	if err != nil {
		return err
	}
	agentCfg := Config{
		NodeAPI:       nodeAPI,
		PodCgroups:    podCgroups,
		ImageGC:       gcPolicy,
		Eviction:      thresholds,
		CgroupRoot:    cgroupRoot,
		CgroupDriver:  driver,
		Client:        client,
		EventClient:   eventClient,
		Runtime:       rt,
		NodeName:      nodeName,
		RootDir:       rootDir,
		PodLogsDir:    logsDir,
		Clock:         clock.RealClock{},
		ClusterDNS:    splitNonEmpty(clusterDNS),
		ClusterDomain: clusterDomain,
		ResolvConf:    resolvConf,
		NoResolvConf:  resolvConf == "",
		Metrics:       metrics,
	}
	agentCfg.AllowedUnsafeSysctls = api.unsafeSysctls
	agentCfg.MaxPods = api.maxPods
	agentCfg.StaticPods = staticFlags.config()
	if kill != nil {
		agentCfg.Trace = kill.trace
		agentCfg.Mounter = chaosMounter{&mounts.HostMounter{}, kill}
	}
	return Run(ctx, agentCfg)
}

func splitNonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// setKubeletRateLimits gives the API client kubelet's defaults
// (kubeAPIQPS 50, kubeAPIBurst 100): client-go's own 5 and 10 let a burst
// of new pods wait on each other's requests, about 2.8 s a pod. It also
// speaks protobuf, kubelet's default --kube-api-content-type (client-go's
// is JSON, which the bench tier's profile showed decoding every pod the
// informers receive), accepting JSON for a resource without protobuf.
func setKubeletRateLimits(cfg *rest.Config) {
	cfg.QPS, cfg.Burst = 50, 100
	cfg.ContentType = kubeAPIContentType
	cfg.AcceptContentTypes = kubeAPIContentType + ",application/json"
}

// kubeAPIContentType is kubelet's default --kube-api-content-type.
const kubeAPIContentType = "application/vnd.kubernetes.protobuf"

// hostCgroups makes kubelet's QoS cgroups on this host (under cgroupRoot,
// node allocatable enforced on kubepods: capacity minus no reservation, as
// kubelet without --kube-reserved and --system-reserved) under driver, and
// returns the manager that makes the pods'. Under the systemd driver each
// cgroup is a slice started through systemd's D-Bus API; the connection
// lives as long as the agent.
func hostCgroups(ctx context.Context, rootDir, cgroupRoot, driver string) (*cgroups.Manager, error) {
	tree, err := cgroups.DetectTree("")
	if err != nil {
		return nil, err
	}
	opts := []cgroups.Option{cgroups.WithNodeAllocatable(cgroups.NodeAllocatable{Capacity: cgroups.HostCapacity()})}
	if driver == cgroups.DriverSystemd {
		conn, err := cgroups.NewSystemdDBus(ctx)
		if err != nil {
			return nil, fmt.Errorf("cgroup driver systemd: %w", err)
		}
		opts = append(opts, cgroups.WithSystemd(conn))
	}
	m, err := cgroups.NewManager(tree, criconfig.Node{RootDir: rootDir, CgroupRoot: cgroupRoot, CgroupDriver: driver}, opts...)
	if err != nil {
		return nil, err
	}
	return m, m.EnsureQoS(ctx)
}

// apiFlags are the node API's flags.
type apiFlags struct {
	addr, clientCA, certFile, keyFile string
	rotate                            bool
	unsafeSysctls                     []string // -allowed-unsafe-sysctls, carried with these
	maxPods                           int      // -max-pods, likewise
}

// nodeAPI listens and finds the serving certificate as kubelet would with
// these flags.
func (f apiFlags) nodeAPI(ctx context.Context, client kubernetes.Interface, nodeName, rootDir string) (*NodeAPI, error) {
	if f.addr == "" {
		return nil, nil
	}
	n := &NodeAPI{}
	if f.clientCA != "" {
		pem, err := os.ReadFile(f.clientCA)
		if err != nil {
			return nil, err
		}
		n.ClientCAs = x509.NewCertPool()
		if !n.ClientCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no certificates in %s", f.clientCA)
		}
	}
	switch {
	case f.certFile != "" || f.keyFile != "":
		c, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
		if err != nil {
			return nil, err
		}
		n.Certificate = c
	case f.rotate:
		m := nodeapi.NewServingCertificates(csrs{client}, nodeName, func() []corev1.NodeAddress {
			addrs := []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: nodeName}}
			if ip := hostIP(); ip != nil {
				addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip.String()})
			}
			return addrs
		})
		if err := m.Request(ctx); err != nil {
			return nil, err
		}
		go m.Run(ctx)
		n.GetCertificate = m.GetCertificate
	default:
		c, err := nodeapi.SelfSignedCertificate(filepath.Join(rootDir, "pki"), nodeName)
		if err != nil {
			return nil, err
		}
		n.Certificate = c
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return nil, err
	}
	n.Listener = ln
	return n, nil
}
