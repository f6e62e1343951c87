package nodemetrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"
)

// SummarySource is the node's stats Summary (stats.Provider's Get).
type SummarySource interface {
	Get(ctx context.Context, updateStats bool) (*statsapi.Summary, error)
}

// Lister is what the runtime tells of its sandboxes and containers (every
// runtime.RuntimeService has it): their IDs, images and pods.
type Lister interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
}

// Cadvisor serves kubelet's /metrics/cadvisor from the stats Summary (CRI
// stats and the pod cgroups) and the runtime's lists. It is safe for
// concurrent use.
type Cadvisor struct {
	src          SummarySource
	rt           Lister
	cgroupDir    string
	cgroupRoot   string
	sandboxImage string
	clock        clock.PassiveClock
}

// CadvisorOption configures a Cadvisor.
type CadvisorOption func(*Cadvisor)

// WithCgroupDir sets where the cgroup hierarchies are mounted (default
// /sys/fs/cgroup): the id label is a cgroup's path there.
func WithCgroupDir(dir string) CadvisorOption { return func(c *Cadvisor) { c.cgroupDir = dir } }

// WithCgroupRoot is kubelet's --cgroup-root (default "/"): the pods'
// cgroups are under <root>/kubepods.
func WithCgroupRoot(root string) CadvisorOption { return func(c *Cadvisor) { c.cgroupRoot = root } }

// WithSandboxImage is the pause image the runtime runs sandboxes from
// (containerd's sandbox_image): cAdvisor labels a pod's network series
// with its sandbox container, and without it they are not served.
func WithSandboxImage(image string) CadvisorOption {
	return func(c *Cadvisor) { c.sandboxImage = image }
}

// WithCadvisorClock sets the clock of container_last_seen (default the
// real one).
func WithCadvisorClock(clk clock.PassiveClock) CadvisorOption {
	return func(c *Cadvisor) { c.clock = clk }
}

// NewCadvisor serves the series of src's Summary under the labels of rt's
// containers.
func NewCadvisor(src SummarySource, rt Lister, opts ...CadvisorOption) *Cadvisor {
	c := &Cadvisor{src: src, rt: rt, cgroupDir: "/sys/fs/cgroup", clock: clock.RealClock{}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Handler serves /metrics/cadvisor: one Summary and one pair of lists per
// request, bound to the request's context.
func (c *Cadvisor) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(&cadvisorCollector{c: c, ctx: r.Context()})
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
	})
}

// Gatherer gathers one scrape with ctx, for tests and other servers.
func (c *Cadvisor) Gatherer(ctx context.Context) prometheus.Gatherer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(&cadvisorCollector{c: c, ctx: ctx})
	return reg
}

// cAdvisor's families (github.com/google/cadvisor/lib/metrics, as kubelet
// registers them raw: no stability marker). Every series carries
// kubelet's labels.
var (
	baseLabels      = []string{"container", "id", "image", "name", "namespace", "pod"}
	descCPU         = prometheus.NewDesc("container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", append(baseLabels, "cpu"), nil)
	descMemUsage    = prometheus.NewDesc("container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed", baseLabels, nil)
	descMemWS       = prometheus.NewDesc("container_memory_working_set_bytes", "Current working set in bytes.", baseLabels, nil)
	descMemRSS      = prometheus.NewDesc("container_memory_rss", "Size of RSS in bytes.", baseLabels, nil)
	descMemSwap     = prometheus.NewDesc("container_memory_swap", "Container swap usage in bytes.", baseLabels, nil)
	descStart       = prometheus.NewDesc("container_start_time_seconds", "Start time of the container since unix epoch in seconds.", baseLabels, nil)
	descLastSeen    = prometheus.NewDesc("container_last_seen", "Last time a container was seen by the exporter", baseLabels, nil)
	descRxBytes     = prometheus.NewDesc("container_network_receive_bytes_total", "Cumulative count of bytes received", append(baseLabels, "interface"), nil)
	descRxErrors    = prometheus.NewDesc("container_network_receive_errors_total", "Cumulative count of errors encountered while receiving", append(baseLabels, "interface"), nil)
	descTxBytes     = prometheus.NewDesc("container_network_transmit_bytes_total", "Cumulative count of bytes transmitted", append(baseLabels, "interface"), nil)
	descTxErrors    = prometheus.NewDesc("container_network_transmit_errors_total", "Cumulative count of errors encountered while transmitting", append(baseLabels, "interface"), nil)
	descScrapeError = prometheus.NewDesc("container_scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
)

// CadvisorFamilies are the names of the cAdvisor families Cadvisor serves.
func CadvisorFamilies() []string {
	return []string{"container_cpu_usage_seconds_total", "container_memory_usage_bytes", "container_memory_working_set_bytes",
		"container_memory_rss", "container_memory_swap", "container_start_time_seconds", "container_last_seen",
		"container_network_receive_bytes_total", "container_network_receive_errors_total",
		"container_network_transmit_bytes_total", "container_network_transmit_errors_total", "container_scrape_error"}
}

type cadvisorCollector struct {
	c   *Cadvisor
	ctx context.Context
}

func (cc *cadvisorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCPU, descMemUsage, descMemWS, descMemRSS, descMemSwap, descStart,
		descLastSeen, descRxBytes, descRxErrors, descTxBytes, descTxErrors, descScrapeError} {
		ch <- d
	}
}

// labels are one cgroup's label values, in baseLabels' order.
type labels struct{ container, id, image, name, namespace, pod string }

func (l labels) values(extra ...string) []string {
	return append([]string{l.container, l.id, l.image, l.name, l.namespace, l.pod}, extra...)
}

func (cc *cadvisorCollector) Collect(ch chan<- prometheus.Metric) {
	if err := cc.collect(ch); err != nil {
		ch <- prometheus.MustNewConstMetric(descScrapeError, prometheus.GaugeValue, 1)
		return
	}
	ch <- prometheus.MustNewConstMetric(descScrapeError, prometheus.GaugeValue, 0)
}

func (cc *cadvisorCollector) collect(ch chan<- prometheus.Metric) error {
	c := cc.c
	sum, err := c.src.Get(cc.ctx, false)
	if err != nil {
		return err
	}
	sandboxes, err := c.rt.ListPodSandbox(cc.ctx, &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}})
	if err != nil {
		return err
	}
	containers, err := c.rt.ListContainers(cc.ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	if err != nil {
		return err
	}
	sandboxOf := map[string]*runtimeapi.PodSandbox{} // by pod UID
	for _, s := range sandboxes {
		sandboxOf[s.GetMetadata().GetUid()] = s
	}
	type ref struct{ uid, name string }
	containerOf := map[ref]*runtimeapi.Container{}
	for _, ctr := range containers {
		containerOf[ref{ctr.GetLabels()[labelPodUID], ctr.GetMetadata().GetName()}] = ctr
	}
	cg := newCgroupFinder(c.cgroupDir, c.cgroupRoot)
	now := c.clock.Now()
	for i := range sum.Pods {
		ps := &sum.Pods[i]
		uid := ps.PodRef.UID
		podDir, ok := cg.pod(uid)
		if !ok {
			continue // cAdvisor sees no cgroup, so no series
		}
		children := cg.children(podDir)
		podLabels := labels{id: podDir, namespace: ps.PodRef.Namespace, pod: ps.PodRef.Name}
		writeUsage(ch, podLabels, ps.CPU, ps.Memory, ps.Swap)
		ch <- prometheus.NewMetricWithTimestamp(now, prometheus.MustNewConstMetric(descLastSeen, prometheus.GaugeValue, float64(now.Unix()), podLabels.values()...))
		if sb := sandboxOf[uid]; sb != nil && c.sandboxImage != "" && ps.Network != nil {
			if id, ok := children[sb.Id]; ok {
				l := labels{id: id, image: c.sandboxImage, name: sb.Id, namespace: ps.PodRef.Namespace, pod: ps.PodRef.Name}
				writeNetwork(ch, l, ps.Network)
			}
		}
		for j := range ps.Containers {
			cs := &ps.Containers[j]
			ctr := containerOf[ref{uid, cs.Name}]
			if ctr == nil {
				continue
			}
			id, ok := children[ctr.Id]
			if !ok {
				continue
			}
			l := labels{container: cs.Name, id: id, image: imageOf(ctr), name: ctr.Id, namespace: ps.PodRef.Namespace, pod: ps.PodRef.Name}
			writeUsage(ch, l, cs.CPU, cs.Memory, cs.Swap)
			if !cs.StartTime.IsZero() {
				ch <- prometheus.MustNewConstMetric(descStart, prometheus.GaugeValue, float64(cs.StartTime.Unix()), l.values()...)
			}
			ch <- prometheus.NewMetricWithTimestamp(now, prometheus.MustNewConstMetric(descLastSeen, prometheus.GaugeValue, float64(now.Unix()), l.values()...))
		}
	}
	return nil
}

const labelPodUID = "io.kubernetes.pod.uid"

// imageOf is the image as the container was asked to run it (what
// containerd keeps as the container's image), else the runtime's
// reference.
func imageOf(c *runtimeapi.Container) string {
	if s := c.GetImage().GetUserSpecifiedImage(); s != "" {
		return s
	}
	if s := c.GetImage().GetImage(); s != "" {
		return s
	}
	return c.GetImageRef()
}

func stamp(t time.Time, m prometheus.Metric) prometheus.Metric {
	if t.IsZero() {
		return m
	}
	return prometheus.NewMetricWithTimestamp(t, m)
}

// writeUsage writes what cAdvisor reports of a cgroup's CPU and memory
// that the Summary knows: a value the Summary lacks is not written.
func writeUsage(ch chan<- prometheus.Metric, l labels, cpu *statsapi.CPUStats, mem *statsapi.MemoryStats, swap *statsapi.SwapStats) {
	// cAdvisor writes the total only when it is above 0.
	if cpu != nil && cpu.UsageCoreNanoSeconds != nil && *cpu.UsageCoreNanoSeconds > 0 {
		ch <- stamp(cpu.Time.Time, prometheus.MustNewConstMetric(descCPU, prometheus.CounterValue, float64(*cpu.UsageCoreNanoSeconds)/1e9, l.values("total")...))
	}
	if mem != nil {
		t := mem.Time.Time
		for _, v := range []struct {
			d *prometheus.Desc
			v *uint64
		}{{descMemUsage, mem.UsageBytes}, {descMemWS, mem.WorkingSetBytes}, {descMemRSS, mem.RSSBytes}} {
			if v.v != nil {
				ch <- stamp(t, prometheus.MustNewConstMetric(v.d, prometheus.GaugeValue, float64(*v.v), l.values()...))
			}
		}
	}
	if swap != nil && swap.SwapUsageBytes != nil {
		ch <- stamp(swap.Time.Time, prometheus.MustNewConstMetric(descMemSwap, prometheus.GaugeValue, float64(*swap.SwapUsageBytes), l.values()...))
	}
}

// writeNetwork writes a pod's interfaces as cAdvisor reports its sandbox
// container's.
func writeNetwork(ch chan<- prometheus.Metric, l labels, n *statsapi.NetworkStats) {
	t := n.Time.Time
	for _, i := range n.Interfaces {
		for _, v := range []struct {
			d *prometheus.Desc
			v *uint64
		}{{descRxBytes, i.RxBytes}, {descRxErrors, i.RxErrors}, {descTxBytes, i.TxBytes}, {descTxErrors, i.TxErrors}} {
			if v.v != nil {
				ch <- stamp(t, prometheus.MustNewConstMetric(v.d, prometheus.CounterValue, float64(*v.v), l.values(i.Name)...))
			}
		}
	}
}
