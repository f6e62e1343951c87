package podworker

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/cgroups"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/probes"
)

// Option configures Workers.
type Option func(*options)

type options struct {
	clock        clock.WithTicker
	relist       time.Duration
	quietRelist  time.Duration
	relistGap    time.Duration
	resync       time.Duration
	errorRetry   time.Duration
	gcPeriod     time.Duration
	gcPolicy     podsync.GCPolicy
	secrets      func(context.Context, *corev1.Pod) ([]corev1.Secret, error)
	onSync       []func(types.UID, PodState)
	onRelist     []func(Relisted)
	logger       logr.Logger
	syncDeadline time.Duration
	probes       *probes.Manager
	noEvents     bool
	runtimeName  string
	hostIPs      []string
	jitter       func(time.Duration) time.Duration
	cgroups      PodCgroups
	admit        AdmitFunc

	periodicRemount bool       // WithPeriodicRemount (refresh.go)
	volumes         PodVolumes // WithVolumeManager (volumes.go)

	claims ResourceUnpreparer // WithResourceClaims (claims.go)
}

// PodCgroups makes each pod's cgroup before its sandbox, removes it once
// the pod is killed, and sweeps the cgroups of pods the Workers no longer
// have (cgroups.Manager fits).
type PodCgroups interface {
	EnsurePod(ctx context.Context, pod *corev1.Pod) error
	RemovePod(ctx context.Context, pod *corev1.Pod) error
	RemoveOrphans(ctx context.Context, keep func(types.UID) bool, volumesExist func(types.UID) bool) ([]types.UID, error)
	// PodCgroupConfig reads back what the pod's cgroup holds.
	PodCgroupConfig(ctx context.Context, pod *corev1.Pod) (cgroups.ResourceConfig, error)
	// UpdatePod writes the pod's CPU and memory values to its cgroup when
	// they changed (an in-place resize of the pod or of its containers).
	UpdatePod(ctx context.Context, pod *corev1.Pod) error
}

// podCgroupGrower is a PodCgroups that raises a pod cgroup's limits that
// grow before the sync (cgroups.Manager's GrowPod); UpdatePod after it
// writes the exact values.
type podCgroupGrower interface {
	GrowPod(ctx context.Context, pod *corev1.Pod) error
}

// WithPodCgroups gives each pod a cgroup of its own, as kubelet with
// cgroupsPerQOS (its default) does: made before every sync that may start
// something (kubelet's EnsureExists in syncPod), removed after the kill,
// and swept by CollectGarbage once the sources are ready. In-place
// resizes follow kubelet's order when c also has a GrowPod method (as
// cgroups.Manager has): what grows is raised before the containers are
// synced, the exact values written after them. Give the Syncer
// the criconfig.Node the cgroups were made for, so sandboxes name them as
// their parent.
func WithPodCgroups(c PodCgroups) Option { return func(o *options) { o.cgroups = c } }

// WithProbes runs the pods' probes with m (give the Syncer
// podsync.WithProbes(m) too, so liveness and startup failures restart
// containers): the Workers feed it each pod's status, fold its results
// into the API status, and sync a pod when one of its results changes.
func WithProbes(m *probes.Manager) Option { return func(o *options) { o.probes = m } }

// WithContainerEvents turns the use of the runtime's container events on
// (the default, when the runtime streams them) or off (relists only).
func WithContainerEvents(on bool) Option { return func(o *options) { o.noEvents = !on } }

// WithRuntimeName sets the container ID prefix in API statuses
// ("containerd"; from the runtime's Version answer).
func WithRuntimeName(name string) Option { return func(o *options) { o.runtimeName = name } }

// WithHostIPs sets the node's IPs for API statuses (hostIP, and podIP of
// host-network pods).
func WithHostIPs(ips ...string) Option { return func(o *options) { o.hostIPs = ips } }

// WithClock sets the clock for timers and periods (tests use a fake one).
// Default: the syncer's (podsync.WithClock) when it has tickers (a
// k8s.io/utils/clock/testing FakeClock does), else the real one.
func WithClock(c clock.WithTicker) Option { return func(o *options) { o.clock = c } }

// WithRelistPeriod sets how often the node is relisted (0: never; only
// upserts, own work, back-off ends and runtime events wake pods).
func WithRelistPeriod(d time.Duration) Option { return func(o *options) { o.relist = d } }

// WithEventedRelistPeriod sets the relist period while the runtime's
// container events stream (the stream is open) and the node has not
// changed for QuietAfter: every change to a container comes with an
// event, which relists at once, so the relist every second is then only
// a safety net (kubelet's evented PLEG relists every 5 min). A relist
// that finds a change, an event, and the stream opening or ending go
// back to the relist period (WithRelistPeriod) for QuietAfter. Default
// DefaultEventedRelistPeriod; a period no longer than the relist period
// relists every relist period always, as kubelet's generic PLEG.
func WithEventedRelistPeriod(d time.Duration) Option { return func(o *options) { o.quietRelist = d } }

// WithRelistGap sets the shortest time from the end of a relist to the
// start of one asked for by a runtime event or by a pod whose sync ended
// (a periodic relist is not held back). During a burst of pod starts every
// sync's end and every container's events ask for a relist; the gap makes
// one relist (two list calls of the whole node) serve all that asked
// within it, where without it relists run back to back, each listing
// every pod. A pod's start waits for up to the gap more (kubelet's pod
// workers wait for their PLEG's relist every second). Default
// DefaultRelistGap; 0 relists at once when asked.
func WithRelistGap(d time.Duration) Option { return func(o *options) { o.relistGap = d } }

// WithResyncPeriod sets the period of kubelet's resync (0: none), for
// the pods whose last sync left something it could do (see the package
// doc: a steady pod is not resynced).
func WithResyncPeriod(d time.Duration) Option { return func(o *options) { o.resync = d } }

// WithErrorRetry sets the delay before a failed sync is retried.
func WithErrorRetry(d time.Duration) Option { return func(o *options) { o.errorRetry = d } }

// JitterFactor is kubelet's workerBackOffPeriodJitterFactor: a failed
// sync is retried after its delay plus up to half of it more.
const JitterFactor = 0.5

// Jitter is kubelet's wait.Jitter(d, JitterFactor): d plus a random part
// of up to JitterFactor times d.
func Jitter(d time.Duration) time.Duration {
	return d + time.Duration(rand.Float64()*JitterFactor*float64(d))
}

// WithJitter sets how the delay before a failed sync's retry is spread
// (default Jitter; func(d time.Duration) time.Duration { return d } for
// none, which retries a crash-looping container the moment its back-off
// ends, sooner than kubelet).
func WithJitter(f func(time.Duration) time.Duration) Option {
	return func(o *options) { o.jitter = f }
}

// WithGC sets the garbage collection period (0: none) and policy.
func WithGC(period time.Duration, policy podsync.GCPolicy) Option {
	return func(o *options) { o.gcPeriod, o.gcPolicy = period, policy }
}

// WithPullSecrets gives each sync its pod's pull secrets (the caller
// fetches them; podworker has no API client). An error fails the sync,
// which is retried.
func WithPullSecrets(f func(context.Context, *corev1.Pod) ([]corev1.Secret, error)) Option {
	return func(o *options) { o.secrets = f }
}

// WithOnSync adds f to the listeners called after each sync of a pod, and
// once more when a deleted pod is gone (PodState.Removed), from the pod's
// goroutine, in the order they were added (these first, then OnSync's):
// a listener must not block for long, nor call back into the Workers for
// that pod.
func WithOnSync(f func(types.UID, PodState)) Option {
	return func(o *options) { o.onSync = append(o.onSync, f) }
}

// WithOnRelist adds f to the listeners called after each node-wide
// relist (kubelet's PLEG relist), periodic or woken by a container
// event, from the relisting goroutine: f must not block for long nor
// change what it is given.
func WithOnRelist(f func(Relisted)) Option {
	return func(o *options) { o.onRelist = append(o.onRelist, f) }
}

// WithLogger sets the logger (default: discard).
func WithLogger(l logr.Logger) Option { return func(o *options) { o.logger = l } }

// WithSyncTimeout bounds each sync, kill and status read (default 4 min,
// kubelet's runtime request timeout is 2 min per call; 0: none).
func WithSyncTimeout(d time.Duration) Option { return func(o *options) { o.syncDeadline = d } }
