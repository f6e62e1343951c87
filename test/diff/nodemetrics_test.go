package diff

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	compbasemetrics "k8s.io/component-base/metrics"
	km "k8s.io/kubernetes/pkg/kubelet/metrics"
	"k8s.io/kubernetes/pkg/kubelet/prober"

	"github.com/podstart/podstart/nodemetrics"
)

// kubeletMetrics are the metrics kubelet's metrics.Register registers
// (those behind a feature gate included), in its order.
func kubeletMetrics() []compbasemetrics.Registerable {
	return []compbasemetrics.Registerable{km.FirstNetworkPodStartSLIDuration, km.NodeName, km.PodWorkerDuration, km.PodStartDuration, km.PodStartSLIDuration, km.PodStartTotalDuration, km.ImagePullDuration, km.ImageGarbageCollectedTotal, km.NodeStartupPreKubeletDuration, km.NodeStartupPreRegistrationDuration, km.NodeStartupRegistrationDuration, km.NodeStartupPostRegistrationDuration, km.NodeStartupDuration, km.CgroupManagerDuration, km.PodWorkerStartDuration, km.PodStatusSyncDuration, km.ContainersPerPodCount, km.PLEGRelistDuration, km.PLEGDiscardEvents, km.PLEGRelistInterval, km.PLEGLastSeen, km.PLEGPodRelistDuration, km.EventedPLEGConnErr, km.EventedPLEGConn, km.EventedPLEGConnLatency, km.RuntimeOperations, km.RuntimeOperationsDuration, km.RuntimeOperationsErrors, km.Evictions, km.EvictionStatsAge, km.Preemptions, km.DevicePluginRegistrationCount, km.DevicePluginAllocationDuration, km.RunningContainerCount, km.RunningPodCount, km.DesiredPodCount, km.ActivePodCount, km.MirrorPodCount, km.WorkingPodCount, km.OrphanedRuntimePodTotal, km.RestartedPodTotal, km.ManagedEphemeralContainers, km.PodResourcesEndpointRequestsTotalCount, km.PodResourcesEndpointRequestsListCount, km.PodResourcesEndpointRequestsGetAllocatableCount, km.PodResourcesEndpointErrorsListCount, km.PodResourcesEndpointErrorsGetAllocatableCount, km.PodResourcesEndpointRequestsGetCount, km.PodResourcesEndpointErrorsGetCount, km.StartedUserNamespacedPodsTotal, km.StartedUserNamespacedPodsErrorsTotal, km.StartedPodsTotal, km.StartedPodsErrorsTotal, km.StartedContainersTotal, km.TerminatedContainersTotal, km.StartedContainersErrorsTotal, km.StartedHostProcessContainersTotal, km.StartedHostProcessContainersErrorsTotal, km.RunPodSandboxDuration, km.RunPodSandboxErrors, km.CPUManagerPinningRequestsTotal, km.CPUManagerPinningErrorsTotal, km.CPUManagerSharedPoolSizeMilliCores, km.CPUManagerExclusiveCPUsAllocationCount, km.CPUManagerAllocationPerNUMA, km.ContainerAlignedComputeResources, km.ContainerAlignedComputeResourcesFailure, km.MemoryManagerPinningRequestTotal, km.MemoryManagerPinningErrorsTotal, km.MemoryQoSNodeMemoryMinBytes, km.MemoryQoSNodeMemoryLowBytes, km.TopologyManagerAdmissionRequestsTotal, km.TopologyManagerAdmissionErrorsTotal, km.TopologyManagerAdmissionDuration, km.OrphanPodCleanedVolumes, km.OrphanPodCleanedVolumesErrors, km.GracefulShutdownStartTime, km.GracefulShutdownEndTime, km.LifecycleHandlerHTTPFallbacks, km.LifecycleHandlerSleepTerminated, km.CgroupVersion, km.AdmissionRejectionsTotal, km.ImageVolumeRequestedTotal, km.ImageVolumeMountedSucceedTotal, km.ImageVolumeMountedErrorsTotal, km.ContainerRequestedResizes, km.PodResizeDurationMilliseconds, km.PodPendingResizes, km.PodInfeasibleResizes, km.PodInProgressResizes, km.PodDeferredAcceptedResizes, km.PodDeferredResizeDurationSeconds, km.ResourceManagerAllocationsTotal, km.ResourceManagerAllocationErrorsTotal, km.ResourceManagerContainerAssignments, km.PodWatchEventsDroppedTotal, km.PodRequestsTotal, km.PodRequestsList, km.PodRequestsGet, km.PodRequestsWatch, km.PodLevelResourcesAdmissionTotal}
}

// kubeletFamily gathers one of kubelet's metrics after one sample ("x"
// for every label value, 1 observed), through a registry of its own, as
// kubelet's /metrics serves it; nil when the metric is hidden or of a kind
// this test does not drive.
func kubeletFamily(t *testing.T, m compbasemetrics.Registerable, register func(compbasemetrics.KubeRegistry)) *dto.MetricFamily {
	t.Helper()
	r := compbasemetrics.NewKubeRegistry()
	register(r)
	ch := make(chan *prometheus.Desc, 4)
	m.Describe(ch)
	close(ch)
	var labels int
	for d := range ch {
		if vl := regexp.MustCompile(`variableLabels: \{([^}]*)\}`).FindStringSubmatch(d.String()); vl != nil && vl[1] != "" {
			labels = len(strings.Split(vl[1], ","))
		}
	}
	values := slices.Repeat([]string{"x"}, labels)
	switch v := m.(type) {
	case *compbasemetrics.Counter:
		v.Inc()
	case *compbasemetrics.CounterVec:
		v.WithLabelValues(values...).Inc()
	case *compbasemetrics.Gauge:
		v.Set(1)
	case *compbasemetrics.GaugeVec:
		v.WithLabelValues(values...).Set(1)
	case *compbasemetrics.Histogram:
		v.Observe(1)
	case *compbasemetrics.HistogramVec:
		v.WithLabelValues(values...).Observe(1)
	}
	fams, err := r.Gather()
	if err != nil {
		t.Fatalf("%s: %v", m.FQName(), err)
	}
	for _, f := range fams {
		if f.GetName() == m.FQName() {
			return f
		}
	}
	return nil
}

// compareFamily is the differences between podstart's declaration of a
// family and kubelet's served one.
func compareFamily(ours nodemetrics.Family, theirs *dto.MetricFamily) []string {
	var diffs []string
	if got := ours.FullHelp(); got != theirs.GetHelp() {
		diffs = append(diffs, fmt.Sprintf("help %q, kubelet %q", got, theirs.GetHelp()))
	}
	if got := strings.ToUpper(string(ours.Type)); got != theirs.GetType().String() {
		diffs = append(diffs, fmt.Sprintf("type %s, kubelet %s", got, theirs.GetType()))
	}
	var theirLabels []string
	var theirBuckets []float64
	if len(theirs.Metric) > 0 {
		for _, l := range theirs.Metric[0].Label {
			theirLabels = append(theirLabels, l.GetName())
		}
		if h := theirs.Metric[0].Histogram; h != nil {
			for _, b := range h.Bucket {
				theirBuckets = append(theirBuckets, b.GetUpperBound())
			}
		}
	}
	ourLabels := slices.Clone(ours.Labels)
	sort.Strings(ourLabels)
	sort.Strings(theirLabels)
	if !slices.Equal(ourLabels, theirLabels) {
		diffs = append(diffs, fmt.Sprintf("labels %v, kubelet %v", ourLabels, theirLabels))
	}
	if !slices.Equal(ours.Buckets, theirBuckets) {
		diffs = append(diffs, fmt.Sprintf("buckets %v, kubelet %v", ours.Buckets, theirBuckets))
	}
	return diffs
}

// Every family nodemetrics serves on /metrics and /metrics/probes is one
// kubelet v1.37.2 registers, with the same name, type, help text
// (stability marker included), label names and buckets. Kubelet's
// families podstart does not serve are listed (nodemetrics' doc says
// why).
func TestNodeMetricsAgainstKubeletRegistry(t *testing.T) {
	theirs := map[string]*dto.MetricFamily{}
	var order []string
	for _, m := range kubeletMetrics() {
		f := kubeletFamily(t, m, func(r compbasemetrics.KubeRegistry) { r.MustRegister(m) })
		if f == nil {
			t.Logf("kubelet's %s: hidden or not driven here", m.FQName())
			continue
		}
		theirs[f.GetName()], order = f, append(order, f.GetName())
	}
	for _, m := range []compbasemetrics.Registerable{prober.ProberResults, prober.ProberDuration} {
		if f := kubeletFamily(t, m, func(r compbasemetrics.KubeRegistry) { r.MustRegister(m) }); f != nil {
			theirs[f.GetName()], order = f, append(order, f.GetName())
		}
	}
	// /metrics/probes' process start time, as kubelet registers it there.
	pr := compbasemetrics.NewKubeRegistry()
	if err := compbasemetrics.RegisterProcessStartTime(pr.Register); err != nil {
		t.Fatal(err)
	}
	fams, err := pr.Gather()
	if err != nil || len(fams) != 1 {
		t.Fatalf("process start time: %v %v", fams, err)
	}
	theirs[fams[0].GetName()] = fams[0]

	ours := append(nodemetrics.KubeletFamilies(), nodemetrics.ProbeFamilies()...)
	served := map[string]bool{}
	equal := 0
	for _, f := range ours {
		served[f.Name] = true
		k := theirs[f.Name]
		if k == nil {
			t.Errorf("%s: kubelet registers no such metric", f.Name)
			continue
		}
		if d := compareFamily(f, k); len(d) > 0 {
			t.Errorf("%s: %s", f.Name, strings.Join(d, "; "))
			continue
		}
		equal++
	}
	var missing []string
	for _, name := range order {
		if !served[name] {
			missing = append(missing, name)
		}
	}
	t.Logf("%d families equal to kubelet's, %d different; kubelet's %d registered metrics (and the prober's 2) include %d podstart does not serve: %s",
		equal, len(ours)-equal, len(order)-2, len(missing), strings.Join(missing, " "))
}
