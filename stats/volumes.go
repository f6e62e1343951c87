package stats

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"
)

// DefaultVolumeStatsPeriod is kubelet's volumeStatsAggPeriod default: how
// often the VolumeAnalyzer looks for new pods, and the base period of
// each pod's measurements.
const DefaultVolumeStatsPeriod = time.Minute

// ErrVolumeMetricsNotSupported is returned by a volume's Metrics when its
// driver cannot measure it (kubelet's volume.IsNotSupported: a CSI driver
// without the GET_VOLUME_STATS capability). The volume is left out of the
// pod's stats without a log, as kubelet.
var ErrVolumeMetricsNotSupported = errors.New("volume metrics not supported")

// VolumeMetrics is what a volume's driver says of it (kubelet's
// volume.Metrics as the CSI client fills it: a unit the driver does not
// report is 0).
type VolumeMetrics struct {
	AvailableBytes, CapacityBytes, UsedBytes int64
	Inodes, InodesFree, InodesUsed           int64
}

// MountedVolume is one volume mounted for a pod (an entry of kubelet's
// ListVolumesForPod): the pod's name for it and how to measure it.
type MountedVolume struct {
	// Name is the pod's volume name (spec.volumes[].name).
	Name string
	// Metrics measures the volume; ErrVolumeMetricsNotSupported when its
	// driver cannot.
	Metrics func(ctx context.Context) (VolumeMetrics, error)
}

// VolumeSource is what a VolumeAnalyzer measures (kubelet's stats
// Provider as the fs resource analyzer uses it).
type VolumeSource interface {
	// VolumePods are the pods whose volumes are measured (kubelet's
	// GetPods).
	VolumePods() []*corev1.Pod
	// MountedVolumes are the volumes mounted for the pod; false when
	// there are none (kubelet's ListVolumesForPod).
	MountedVolumes(uid types.UID) ([]MountedVolume, bool)
}

// PodVolumeStats is a pod's volume stats (kubelet's PodVolumeStats):
// Ephemeral are its local ephemeral volumes (disk emptyDir, configMap,
// gitRepo), which count in its ephemeral storage; Persistent the others
// (PVCs, generic ephemeral and CSI inline volumes among them), which do
// not.
type PodVolumeStats struct {
	Ephemeral, Persistent []statsapi.VolumeStats
}

// PodVolumeStatsGetter gives a pod's latest volume stats (kubelet's
// ResourceAnalyzer.GetPodVolumeStats): false when there are none yet.
type PodVolumeStatsGetter interface {
	PodVolumeStats(uid types.UID) (PodVolumeStats, bool)
}

// WithVolumeStats adds each pod's volume stats to the Summary (Get, not
// CPUAndMemory, as kubelet): volumeStats is its ephemeral then its
// persistent volumes, and the ephemeral ones count in its
// ephemeralStorage (kubelet's makePodStorageStats).
func WithVolumeStats(g PodVolumeStatsGetter) Option { return func(p *Provider) { p.volumes = g } }

// VolumeAnalyzer is kubelet's fs resource analyzer with its volume stat
// calculators: Run looks for pods every period and starts, for each new
// one, a calculator that measures its mounted volumes at once and then
// every period to twice the period (kubelet's jitter factor 1.0),
// caching the result; a pod gone stops its calculator and drops its
// stats. PodVolumeStats only reads the cache. Safe for concurrent use.
type VolumeAnalyzer struct {
	src    VolumeSource
	period time.Duration
	clock  clock.Clock
	jitter func(time.Duration) time.Duration
	// waiting, for tests: called once a calculator or the pod loop waits.
	waiting func()

	mu    sync.Mutex
	calcs map[types.UID]*volumeCalc
}

type volumeCalc struct {
	pod    *corev1.Pod
	stop   chan struct{}
	mu     sync.Mutex
	latest *PodVolumeStats
}

// VolumeAnalyzerOption configures a VolumeAnalyzer.
type VolumeAnalyzerOption func(*VolumeAnalyzer)

// WithVolumeStatsPeriod sets kubelet's --volume-stats-agg-period (default
// DefaultVolumeStatsPeriod); 0 or less disables the collection, as
// kubelet.
func WithVolumeStatsPeriod(d time.Duration) VolumeAnalyzerOption {
	return func(a *VolumeAnalyzer) { a.period = d }
}

// WithVolumeClock sets the analyzer's clock (default the real one).
func WithVolumeClock(c clock.Clock) VolumeAnalyzerOption {
	return func(a *VolumeAnalyzer) { a.clock = c }
}

// NewVolumeAnalyzer measures the volumes src lists.
func NewVolumeAnalyzer(src VolumeSource, opts ...VolumeAnalyzerOption) *VolumeAnalyzer {
	a := &VolumeAnalyzer{src: src, period: DefaultVolumeStatsPeriod, clock: clock.RealClock{},
		jitter: func(d time.Duration) time.Duration { return d + time.Duration(rand.Float64()*float64(d)) },
		calcs:  map[types.UID]*volumeCalc{}}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Run updates the pods every period until ctx ends (kubelet's
// wait.Forever over updateCachedPodVolumeStats); the calculators it
// started stop with it. With a period of 0 or less it returns at once.
func (a *VolumeAnalyzer) Run(ctx context.Context) {
	if a.period <= 0 {
		logr.FromContextOrDiscard(ctx).Info("Volume stats collection disabled")
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer a.stopAll()
	for {
		a.update(ctx, &wg)
		t := a.clock.NewTimer(a.period)
		if a.waiting != nil {
			a.waiting()
		}
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

func (a *VolumeAnalyzer) update(ctx context.Context, wg *sync.WaitGroup) {
	a.mu.Lock()
	defer a.mu.Unlock()
	seen := map[types.UID]bool{}
	for _, pod := range a.src.VolumePods() {
		seen[pod.UID] = true
		if a.calcs[pod.UID] != nil {
			continue
		}
		c := &volumeCalc{pod: pod, stop: make(chan struct{})}
		a.calcs[pod.UID] = c
		wg.Go(func() { a.calculate(ctx, c) })
	}
	for uid, c := range a.calcs {
		if !seen[uid] {
			close(c.stop)
			delete(a.calcs, uid)
		}
	}
}

func (a *VolumeAnalyzer) stopAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for uid, c := range a.calcs {
		close(c.stop)
		delete(a.calcs, uid)
	}
}

// calculate is kubelet's volumeStatCalculator loop (wait.JitterUntil,
// sliding: the wait starts after each measurement).
func (a *VolumeAnalyzer) calculate(ctx context.Context, c *volumeCalc) {
	for {
		c.calcAndStore(ctx, a.src, a.clock)
		t := a.clock.NewTimer(a.jitter(a.period))
		if a.waiting != nil {
			a.waiting()
		}
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-c.stop:
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// calcAndStore is kubelet's calcAndStoreStats.
func (c *volumeCalc) calcAndStore(ctx context.Context, src VolumeSource, clk clock.PassiveClock) {
	volumes, found := src.MountedVolumes(c.pod.UID)
	if !found {
		return // kubelet keeps the last stats
	}
	specs := make(map[string]corev1.Volume, len(c.pod.Spec.Volumes))
	for _, v := range c.pod.Spec.Volumes {
		specs[v.Name] = v
	}
	var out PodVolumeStats
	for _, v := range volumes {
		now := metav1.NewTime(clk.Now())
		m, err := v.Metrics(ctx)
		if err != nil {
			if !errors.Is(err, ErrVolumeMetricsNotSupported) {
				logr.FromContextOrDiscard(ctx).V(4).Info("Failed to calculate volume metrics",
					"pod", c.pod.Namespace+"/"+c.pod.Name, "podUID", c.pod.UID, "volumeName", v.Name, "err", err)
			}
			continue
		}
		spec := specs[v.Name]
		vs := statsapi.VolumeStats{Name: v.Name, FsStats: statsapi.FsStats{Time: now,
			AvailableBytes: ptrTo(uint64(m.AvailableBytes)), CapacityBytes: ptrTo(uint64(m.CapacityBytes)),
			UsedBytes: ptrTo(uint64(m.UsedBytes)), Inodes: ptrTo(uint64(m.Inodes)),
			InodesFree: ptrTo(uint64(m.InodesFree)), InodesUsed: ptrTo(uint64(m.InodesUsed))}}
		switch {
		case spec.PersistentVolumeClaim != nil:
			vs.PVCRef = &statsapi.PVCReference{Name: spec.PersistentVolumeClaim.ClaimName, Namespace: c.pod.Namespace}
		case spec.Ephemeral != nil:
			vs.PVCRef = &statsapi.PVCReference{Name: c.pod.Name + "-" + spec.Name, Namespace: c.pod.Namespace}
		}
		if isLocalEphemeralVolume(spec) {
			out.Ephemeral = append(out.Ephemeral, vs)
		} else {
			out.Persistent = append(out.Persistent, vs)
		}
	}
	byName := func(x, y statsapi.VolumeStats) int { return strings.Compare(x.Name, y.Name) }
	slices.SortFunc(out.Ephemeral, byName)
	slices.SortFunc(out.Persistent, byName)
	c.mu.Lock()
	c.latest = &out
	c.mu.Unlock()
}

// isLocalEphemeralVolume is kubelet's volume util IsLocalEphemeralVolume.
func isLocalEphemeralVolume(v corev1.Volume) bool {
	return v.GitRepo != nil || (v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumDefault) || v.ConfigMap != nil
}

// PodVolumeStats returns the pod's latest volume stats from the cache,
// never measuring (kubelet's GetPodVolumeStats); false before the first
// measurement or for a pod the analyzer does not know.
func (a *VolumeAnalyzer) PodVolumeStats(uid types.UID) (PodVolumeStats, bool) {
	a.mu.Lock()
	c := a.calcs[uid]
	a.mu.Unlock()
	if c == nil {
		return PodVolumeStats{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.latest == nil {
		return PodVolumeStats{}, false
	}
	return *c.latest, true
}
