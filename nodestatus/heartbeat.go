package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// Kubelet's heartbeat defaults.
const (
	// DefaultLeaseDuration is nodeLeaseDurationSeconds; the lease is
	// renewed every quarter of it (nodeLeaseRenewIntervalFraction).
	DefaultLeaseDuration = 40 * time.Second
	// DefaultStatusUpdateFrequency is nodeStatusUpdateFrequency: how often
	// the status is computed.
	DefaultStatusUpdateFrequency = 10 * time.Second
	// DefaultStatusReportFrequency is nodeStatusReportFrequency: how often
	// an unchanged status is patched anyway.
	DefaultStatusReportFrequency = 5 * time.Minute
	// StatusUpdateRetry is nodeStatusUpdateRetry, the tries of one status
	// update; LeaseUpdateRetry the lease controller's maxUpdateRetries.
	StatusUpdateRetry = 5
	LeaseUpdateRetry  = 5
	// RuntimeCheckPeriod is how often kubelet asks the runtime for its
	// status (updateRuntimeUp).
	RuntimeCheckPeriod = 5 * time.Second
	// jitterFactor is wait.JitterUntil's maxFactor in kubelet's loops.
	jitterFactor = 0.04
	// maxBackoff caps the waits between failed registrations and lease
	// creations.
	maxBackoff = 7 * time.Second
)

// Errors a caller can match with errors.Is.
var (
	// ErrStatusRetries: every try of a status update failed (the last
	// error is wrapped too).
	ErrStatusRetries = errors.New("update node status exceeds retry count")
	// ErrLeaseRetries: every try of a lease renewal failed.
	ErrLeaseRetries = fmt.Errorf("failed %d attempts to update lease", LeaseUpdateRetry)
)

// Client is the part of the API the heartbeat uses. Errors must be the
// API server's (apimachinery's StatusError), as client-go returns them,
// so NotFound, AlreadyExists and Conflict can be told apart. The
// examples/nodeagent adapter implements it over client-go.
type Client interface {
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
	CreateNode(ctx context.Context, node *corev1.Node) (*corev1.Node, error)
	// PatchNodeStatus applies a strategic merge patch to the node's
	// status subresource.
	PatchNodeStatus(ctx context.Context, name string, patch []byte) (*corev1.Node, error)
	GetLease(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error)
	CreateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
	UpdateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
}

// Option configures a Heartbeat.
type Option func(*Heartbeat)

// WithClock drives the renewals, the status updates and the times they
// carry (default: the real clock).
func WithClock(c clock.Clock) Option { return func(h *Heartbeat) { h.clock = c } }

// WithRuntime has the runtime asked for its CRI Status every
// RuntimeCheckPeriod, recorded in state (which ReadyCondition should read).
func WithRuntime(rs StatusReader, state *RuntimeState) Option {
	return func(h *Heartbeat) { h.runtime, h.state = rs, state }
}

// WithLeaseDuration sets nodeLeaseDurationSeconds (whole seconds).
func WithLeaseDuration(d time.Duration) Option { return func(h *Heartbeat) { h.leaseDuration = d } }

// WithStatusFrequency sets nodeStatusUpdateFrequency and
// nodeStatusReportFrequency.
func WithStatusFrequency(update, report time.Duration) Option {
	return func(h *Heartbeat) { h.updateFrequency, h.reportFrequency = update, report }
}

// WithReported calls f with the node as each status sync left it
// reported: the API server's answer to the patch, or, when nothing changed
// and no report was due, the status as computed. This is kubelet's
// markVolumesFromNode: a volume manager learns from it which volumes
// node.status.volumesInUse carries (volumemanager's
// MarkVolumesReportedInUse), so that attachable volumes are mounted only
// once the attach/detach controller can see them in use.
func WithReported(f func(*corev1.Node)) Option { return func(h *Heartbeat) { h.reported = f } }

// WithRand replaces the random source of the jitter (up to 4% of each
// period) and of the report delay (±50% of the report frequency after a
// change): a function returning values in [0, 1).
func WithRand(f func() float64) Option { return func(h *Heartbeat) { h.rand = f } }

// Heartbeat registers the node and keeps it alive as kubelet does: the
// Lease in kube-node-lease renewed every quarter of its duration, the
// status computed by the setters every update period and patched when it
// changed or the report period passed, the runtime's readiness polled.
type Heartbeat struct {
	client  Client
	reg     Registration
	setters []Setter
	clock   clock.Clock
	runtime StatusReader
	state   *RuntimeState
	rand    func() float64

	leaseDuration, updateFrequency, reportFrequency time.Duration

	mu         sync.Mutex // serialises registration and status updates
	registered bool
	node       *corev1.Node // the node as the last patch or read returned it
	lastReport time.Time
	delay      time.Duration // kubelet's delayAfterNodeStatusChange

	latestLease  *coordinationv1.Lease // only Run's goroutine
	leaseBackoff time.Duration

	reported func(*corev1.Node) // WithReported
}

// New returns a Heartbeat for the node reg names, its status computed by
// setters in order (DefaultSetters builds kubelet's set).
func New(client Client, reg Registration, setters []Setter, opts ...Option) *Heartbeat {
	h := &Heartbeat{client: client, reg: reg, setters: setters, clock: clock.RealClock{}, rand: rand.Float64,
		leaseDuration: DefaultLeaseDuration, updateFrequency: DefaultStatusUpdateFrequency, reportFrequency: DefaultStatusReportFrequency}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Node is the node as the last registration, patch or read returned it
// (nil before registration).
func (h *Heartbeat) Node() *corev1.Node {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.node == nil {
		return nil
	}
	return h.node.DeepCopy()
}

// Register makes one attempt at kubelet's registration: create the
// initial node with its status; if it exists (or creating is forbidden),
// reconcile the existing one (Reconcile) and patch it if needed. It
// returns the node as the API server has it.
func (h *Heartbeat) Register(ctx context.Context) (*corev1.Node, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.register(ctx)
}

func (h *Heartbeat) register(ctx context.Context) (*corev1.Node, error) {
	if h.runtime != nil && h.state != nil && h.node == nil {
		if err := h.state.Update(ctx, h.runtime); err != nil {
			logr.FromContextOrDiscard(ctx).Error(err, "Container runtime status")
		}
	}
	node := InitialNode(h.reg)
	h.setStatus(ctx, node)
	created, err := h.client.CreateNode(ctx, node)
	if err == nil {
		h.registered, h.node = true, created
		return created.DeepCopy(), nil
	}
	if !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("unable to register node %q with API server: %w", h.reg.Name, err)
	}
	existing, err := h.client.GetNode(ctx, h.reg.Name)
	if err != nil {
		return nil, fmt.Errorf("unable to register node %q with API server, error getting existing node: %w", h.reg.Name, err)
	}
	original := existing.DeepCopy()
	if Reconcile(node, existing) {
		patch, err := StatusPatch(original, existing)
		if err != nil {
			return nil, err
		}
		if existing, err = h.client.PatchNodeStatus(ctx, h.reg.Name, patch); err != nil {
			return nil, fmt.Errorf("unable to reconcile node %q with API server, error updating node: %w", h.reg.Name, err)
		}
	}
	h.registered, h.node = true, existing
	return existing.DeepCopy(), nil
}

// setStatus runs the setters; a failing setter is logged and the others
// still run, as in kubelet's setNodeStatus.
func (h *Heartbeat) setStatus(ctx context.Context, node *corev1.Node) {
	for _, s := range h.setters {
		if err := s(ctx, node); err != nil {
			logr.FromContextOrDiscard(ctx).Error(err, "Failed to set some node status fields", "node", node.Name)
		}
	}
}

// SyncStatus is kubelet's updateNodeStatus: up to StatusUpdateRetry tries
// of computing the status and patching it if it changed or the report
// period passed. The first try works from the node last seen (kubelet's
// from its informer's cache), the others read it from the API server.
func (h *Heartbeat) SyncStatus(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var last error
	for i := range StatusUpdateRetry {
		if last = h.tryUpdate(ctx, i); last == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		logr.FromContextOrDiscard(ctx).Error(last, "Error updating node status, will retry")
	}
	return fmt.Errorf("%w: %w", ErrStatusRetries, last)
}

func (h *Heartbeat) tryUpdate(ctx context.Context, try int) error {
	original := h.node
	if try > 0 || original == nil {
		n, err := h.client.GetNode(ctx, h.reg.Name)
		if err != nil {
			return fmt.Errorf("error getting node %q: %w", h.reg.Name, err)
		}
		original = n
	}
	node := original.DeepCopy()
	labelsFixed := false
	for k, v := range map[string]string{corev1.LabelOSStable: goruntime.GOOS, corev1.LabelArchStable: goruntime.GOARCH} {
		if node.Labels[k] != v {
			if node.Labels == nil {
				node.Labels = map[string]string{}
			}
			node.Labels[k] = v
			labelsFixed = true
		}
	}
	h.setStatus(ctx, node)
	changed := labelsFixed || StatusChanged(&original.Status, &node.Status)
	if !changed && h.clock.Since(h.lastReport) < h.reportFrequency+h.delay {
		h.node = original
		if h.reported != nil {
			h.reported(node)
		}
		return nil
	}
	if changed || h.lastReport.IsZero() {
		h.delay = time.Duration(float64(h.reportFrequency) * (-0.5 + h.rand()))
	} else {
		h.delay = 0
	}
	patch, err := StatusPatch(original, node)
	if err != nil {
		return err
	}
	updated, err := h.client.PatchNodeStatus(ctx, h.reg.Name, patch)
	if err != nil {
		return fmt.Errorf("failed to patch status for node %q: %w", h.reg.Name, err)
	}
	h.lastReport, h.node = h.clock.Now(), updated
	if h.reported != nil {
		h.reported(updated)
	}
	return nil
}

// Run registers the node if Register has not (retrying with kubelet's
// back-off, 200 ms doubling to 7 s), then renews the lease, updates the
// status and polls the runtime until ctx ends. Each loop runs right away,
// then again a jittered period after it finished (wait.JitterUntil, as
// kubelet's); they share one goroutine, so one waits while another
// talks to the API server. Errors are logged to ctx's logr logger.
func (h *Heartbeat) Run(ctx context.Context) {
	log := logr.FromContextOrDiscard(ctx)
	for step := 100 * time.Millisecond; ; {
		h.mu.Lock()
		done := h.registered
		var err error
		if !done {
			_, err = h.register(ctx)
			done = err == nil
		}
		h.mu.Unlock()
		if done {
			break
		}
		log.Error(err, "Unable to register node")
		step = min(2*step, maxBackoff)
		if !h.sleepUntil(ctx, h.clock.Now().Add(step)) {
			return
		}
	}
	renew := time.Duration(float64(h.leaseDuration) * 0.25)
	now := h.clock.Now()
	nextRuntime, nextLease, nextStatus := now.Add(RuntimeCheckPeriod), now, now
	for {
		if h.runtime != nil && h.state != nil && !h.clock.Now().Before(nextRuntime) {
			if err := h.state.Update(ctx, h.runtime); err != nil {
				log.Error(err, "Container runtime status")
			}
			nextRuntime = h.clock.Now().Add(RuntimeCheckPeriod)
			if !h.reportedReady() {
				nextStatus = h.clock.Now() // kubelet's fast status update
			}
		}
		if !h.clock.Now().Before(nextLease) {
			nextLease = h.clock.Now().Add(h.syncLease(ctx, renew))
		}
		if !h.clock.Now().Before(nextStatus) {
			if err := h.SyncStatus(ctx); err != nil && ctx.Err() == nil {
				log.Error(err, "Unable to update node status")
			}
			nextStatus = h.clock.Now().Add(h.jitter(h.updateFrequency))
		}
		next := earliest(nextLease, nextStatus)
		if h.runtime != nil && h.state != nil {
			next = earliest(next, nextRuntime)
		}
		if !h.sleepUntil(ctx, next) {
			return
		}
	}
}

// sleepUntil waits for the clock to reach t, false if ctx ended first. The
// clock is read again once the timer is armed: a fake clock stepped past t
// in between would otherwise never fire it (it fires timers only on a
// step, and their target is taken from the time of arming).
func (h *Heartbeat) sleepUntil(ctx context.Context, t time.Time) bool {
	timer := h.clock.NewTimer(t.Sub(h.clock.Now()))
	defer timer.Stop()
	if !h.clock.Now().Before(t) {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-timer.C():
		return true
	}
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func (h *Heartbeat) jitter(d time.Duration) time.Duration {
	return d + time.Duration(h.rand()*jitterFactor*float64(d))
}

// reportedReady: the node last seen has Ready True.
func (h *Heartbeat) reportedReady() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.node == nil {
		return false
	}
	for _, c := range h.node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// syncLease is the lease controller's sync: update from the lease last
// written, else get or create it and update it. It returns when to sync
// next: the renew interval (jittered), or the back-off after a failed
// get or create (200 ms doubling to 7 s, as backoffEnsureLease waits).
func (h *Heartbeat) syncLease(ctx context.Context, renew time.Duration) time.Duration {
	log := logr.FromContextOrDiscard(ctx)
	if h.latestLease != nil {
		err := h.updateLease(ctx, h.latestLease)
		if err == nil {
			return h.jitter(renew)
		}
		log.Info("Failed to update lease using latest lease, fallback to ensure lease", "err", err.Error())
	}
	lease, created, err := h.ensureLease(ctx)
	if err != nil {
		if h.leaseBackoff == 0 {
			h.leaseBackoff = 100 * time.Millisecond
		}
		h.leaseBackoff = min(2*h.leaseBackoff, maxBackoff)
		log.Error(err, "Failed to ensure lease exists, will retry", "interval", h.leaseBackoff)
		return h.leaseBackoff
	}
	h.leaseBackoff = 0
	h.latestLease = lease
	if !created && lease != nil {
		if err := h.updateLease(ctx, lease); err != nil {
			log.Error(err, "Will retry updating lease", "interval", renew)
		}
	}
	return h.jitter(renew)
}

// ensureLease gets the lease or creates it. A lease that cannot be built
// yet (the node's UID unknown) is not created: nil, false, nil.
func (h *Heartbeat) ensureLease(ctx context.Context) (*coordinationv1.Lease, bool, error) {
	lease, err := h.client.GetLease(ctx, corev1.NamespaceNodeLease, h.reg.Name)
	if apierrors.IsNotFound(err) {
		want, err := h.newLease(ctx, nil)
		if err != nil {
			return nil, false, nil
		}
		lease, err := h.client.CreateLease(ctx, want)
		if err != nil {
			return nil, false, err
		}
		return lease, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	return lease, false, nil
}

// updateLease is retryUpdateLease: up to LeaseUpdateRetry updates, a
// conflict fetching the lease anew.
func (h *Heartbeat) updateLease(ctx context.Context, base *coordinationv1.Lease) error {
	log := logr.FromContextOrDiscard(ctx)
	for range LeaseUpdateRetry {
		want, err := h.newLease(ctx, base)
		if err != nil {
			log.Error(err, "Failed to prepare lease")
			continue
		}
		lease, err := h.client.UpdateLease(ctx, want)
		if err == nil {
			h.latestLease = lease
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Error(err, "Failed to update lease")
		if apierrors.IsConflict(err) {
			if base, _, err = h.ensureLease(ctx); err != nil || base == nil {
				return fmt.Errorf("%w: %w", ErrLeaseRetries, err)
			}
		}
	}
	return ErrLeaseRetries
}

// newLease is the lease controller's newLease with kubelet's
// SetNodeOwnerFunc: holder the node's name, duration and renew time set
// on every write, owned by the Node (its UID read until known).
func (h *Heartbeat) newLease(ctx context.Context, base *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	var lease *coordinationv1.Lease
	if base == nil {
		holder := h.reg.Name
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: h.reg.Name, Namespace: corev1.NamespaceNodeLease},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
	} else {
		lease = base.DeepCopy()
	}
	secs := int32(h.leaseDuration / time.Second)
	lease.Spec.LeaseDurationSeconds = &secs
	lease.Spec.RenewTime = &metav1.MicroTime{Time: h.clock.Now()}
	if len(lease.OwnerReferences) == 0 {
		node, err := h.client.GetNode(ctx, h.reg.Name)
		if err != nil {
			return lease, fmt.Errorf("failed to get node %q to set owner ref to the node lease: %w", h.reg.Name, err)
		}
		lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: h.reg.Name, UID: node.UID}}
	}
	return lease, nil
}
