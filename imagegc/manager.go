package imagegc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/bits"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/distribution/reference"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/runtime"
)

// Kubelet's defaults (KubeletConfiguration imageGCHighThresholdPercent,
// imageGCLowThresholdPercent, imageMinimumGCAge, imageMaximumGCAge) and
// its ImageGCPeriod.
const (
	DefaultHighThresholdPercent = 85
	DefaultLowThresholdPercent  = 80
	DefaultMinAge               = 2 * time.Minute
	DefaultMaxAge               = 0
	Period                      = 5 * time.Minute
)

// Event reasons kubelet's image GC uses (pkg/kubelet/events).
const (
	EventInvalidDiskCapacity = "InvalidDiskCapacity"
	EventFreeDiskSpaceFailed = "FreeDiskSpaceFailed"
	EventImageGCFailed       = "ImageGCFailed"
)

// Reasons a RemovedImage was removed (kubelet's image_garbage_collected_total
// metric labels).
const (
	ReasonAge   = "age"
	ReasonSpace = "space"
)

// Runtime is the part of CRI a Manager calls. runtime.Client and
// runtime/fake's Runtime have all of it (ImageFsInfo is their
// runtime.ImageFsInfoReader).
type Runtime interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// EventRecorder has the method of client-go's record.EventRecorder a
// Manager calls, so an operator's recorder fits unchanged.
type EventRecorder = images.EventRecorder

// RecordPruner forgets the pulled records (KEP-2535) of images no longer on
// the node; *pullrecords.Manager is one.
type RecordPruner interface {
	PruneUnknownRecords(ctx context.Context, inUse []string, until time.Time)
}

// Policy is kubelet's ImageGCPolicy.
type Policy struct {
	// Usage at or above HighThresholdPercent of the image filesystem
	// starts removal; removal aims for LowThresholdPercent.
	HighThresholdPercent, LowThresholdPercent int
	// MinAge: an image first seen less than MinAge ago is not removed for
	// space (it may have just been pulled for a container about to start).
	MinAge time.Duration
	// MaxAge, when not 0, removes images unused for longer than MaxAge
	// whatever the usage, once the Manager is older than MaxAge.
	MaxAge time.Duration
}

// DefaultPolicy is kubelet's default configuration.
func DefaultPolicy() Policy {
	return Policy{HighThresholdPercent: DefaultHighThresholdPercent, LowThresholdPercent: DefaultLowThresholdPercent,
		MinAge: DefaultMinAge, MaxAge: DefaultMaxAge}
}

// Validate applies kubelet's NewImageGCManager checks, with its messages.
func (p Policy) Validate() error {
	switch {
	case p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100:
		return &passError{fmt.Sprintf("invalid HighThresholdPercent %d, must be in range [0-100]", p.HighThresholdPercent), []error{ErrInvalidPolicy}}
	case p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100:
		return &passError{fmt.Sprintf("invalid LowThresholdPercent %d, must be in range [0-100]", p.LowThresholdPercent), []error{ErrInvalidPolicy}}
	case p.LowThresholdPercent > p.HighThresholdPercent:
		return &passError{fmt.Sprintf("LowThresholdPercent %d can not be higher than HighThresholdPercent %d", p.LowThresholdPercent, p.HighThresholdPercent), []error{ErrInvalidPolicy}}
	}
	return nil
}

// Disabled reports kubelet's rule for not running periodic image GC at all:
// a high threshold of 100% and no maximum age.
func (p Policy) Disabled() bool { return p.HighThresholdPercent == 100 && p.MaxAge == 0 }

// RemovedImage is one image a pass removed.
type RemovedImage struct {
	ID     string
	Size   int64
	Reason string // ReasonAge or ReasonSpace
}

// Pass is what one pass did, given to the WithOnPass observer.
type Pass struct {
	// Kind is "GarbageCollect", "DeleteUnusedImages" or "Detect" (Run's
	// pass while periodic GC is disabled).
	Kind string
	// Time is when the pass began (kubelet's freeTime).
	Time    time.Time
	Removed []RemovedImage
	// UsagePercent, Capacity and Available describe the image filesystem
	// as a GarbageCollect pass read it (0 when it did not get that far).
	UsagePercent        int
	Capacity, Available int64
	Err                 error
}

// Option configures a Manager.
type Option func(*Manager)

// WithPolicy sets the thresholds and ages (default DefaultPolicy()).
func WithPolicy(p Policy) Option { return func(m *Manager) { m.policy = p } }

// WithClock sets the clock for first-seen and last-used times, ages and
// Run's period.
func WithClock(c clock.Clock) Option { return func(m *Manager) { m.clock = c } }

// WithRecorder sends kubelet's events to rec, about the object nodeRef
// returns (NodeRef gives kubelet's reference for a node name).
func WithRecorder(rec EventRecorder, nodeRef func() *corev1.ObjectReference) Option {
	return func(m *Manager) { m.recorder, m.nodeRef = rec, nodeRef }
}

// NodeRef is the reference kubelet attaches its image GC events to.
func NodeRef(nodeName string) func() *corev1.ObjectReference {
	return func() *corev1.ObjectReference {
		return &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: nodeName}
	}
}

// WithFilesystem sets how the image filesystem's capacity and available
// bytes are read (default Statfs).
func WithFilesystem(f Filesystem) Option { return func(m *Manager) { m.fs = f } }

// WithPullRecords prunes the pulled records of images no longer on the
// node after each pass (kubelet's post-GC hook for KEP-2535).
func WithPullRecords(p RecordPruner) Option { return func(m *Manager) { m.records = p } }

// WithSandboxImages names images never removed, whatever the runtime says
// of them: the pod sandbox image, which containerd 1.7+ and CRI-O report
// as pinned but containerd 1.6 does not. A name matches an image's ID, one
// of its tags or digests, as written or normalised ("pause:3.10" is
// "docker.io/library/pause:3.10").
func WithSandboxImages(refs ...string) Option {
	return func(m *Manager) { m.sandboxImages = append(m.sandboxImages, refs...) }
}

// WithOnPass calls f after every pass with what it did.
func WithOnPass(f func(Pass)) Option { return func(m *Manager) { m.onPass = f } }

// Manager is kubelet's image garbage collector. Its methods are safe for
// concurrent use; passes run one at a time.
type Manager struct {
	rt            Runtime
	policy        Policy
	clock         clock.Clock
	recorder      EventRecorder
	nodeRef       func() *corev1.ObjectReference
	fs            Filesystem
	records       RecordPruner
	sandboxImages []string
	onPass        func(Pass)
	began         time.Time

	passMu sync.Mutex // one pass at a time
	mu     sync.Mutex // guards seen
	seen   map[string]*record
}

// record is what the manager knows of one image, by ID.
type record struct {
	firstDetected, lastUsed time.Time
	size                    int64
	pinned                  bool
}

// New returns a Manager over rt. The time New is called is kubelet's
// beganGC: no image is removed for its maximum age before MaxAge has
// passed since.
func New(rt Runtime, opts ...Option) (*Manager, error) {
	m := &Manager{rt: rt, policy: DefaultPolicy(), clock: clock.RealClock{}, fs: Statfs{}, seen: map[string]*record{}}
	for _, o := range opts {
		o(m)
	}
	if err := m.policy.Validate(); err != nil {
		return nil, err
	}
	m.sandboxImages = sandboxNames(m.sandboxImages)
	if m.nodeRef == nil {
		m.nodeRef = NodeRef("")
	}
	m.began = m.clock.Now()
	return m, nil
}

func (m *Manager) event(reason, msg string) {
	if m.recorder != nil {
		m.recorder.Eventf(m.nodeRef(), corev1.EventTypeWarning, reason, "%s", msg)
	}
}

// candidate is an image that may be removed, in removal order.
type candidate struct {
	id string
	record
}

// listing is one detection: the images listed, and those not in use nor
// pinned in kubelet's eviction order.
type listing struct {
	images     []*runtimeapi.Image
	candidates []candidate
}

// detect lists images and containers, updates first-seen and last-used
// times and returns the candidates for removal, least recently used first.
func (m *Manager) detect(ctx context.Context, now time.Time) (*listing, error) {
	imgs, err := m.rt.ListImages(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	inUse, err := m.imagesInUse(ctx, imgs)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	current := make(map[string]bool, len(imgs))
	for _, img := range imgs {
		id := img.GetId()
		current[id] = true
		r, ok := m.seen[id]
		if !ok {
			r = &record{firstDetected: now}
			m.seen[id] = r
		}
		if inUse[id] {
			r.lastUsed = now
		}
		r.size = clampInt64(img.GetSize()) // a size of 2^63 or more is no negative one
		r.pinned = img.GetPinned() || m.isSandboxImage(img)
	}
	for id := range m.seen {
		if !current[id] {
			delete(m.seen, id)
		}
	}
	l := &listing{images: imgs, candidates: make([]candidate, 0, len(m.seen))}
	for id, r := range m.seen {
		if inUse[id] || r.pinned {
			continue
		}
		l.candidates = append(l.candidates, candidate{id: id, record: *r})
	}
	sortCandidates(l.candidates)
	return l, nil
}

// sortCandidates orders by last use, then first detection (kubelet's
// byLastUsedAndDetected), then ID where kubelet leaves the order to its
// map's iteration.
func sortCandidates(c []candidate) {
	sort.Slice(c, func(i, j int) bool {
		a, b := &c[i], &c[j]
		if !a.lastUsed.Equal(b.lastUsed) {
			return a.lastUsed.Before(b.lastUsed)
		}
		if !a.firstDetected.Equal(b.firstDetected) {
			return a.firstDetected.Before(b.firstDetected)
		}
		return a.id < b.id
	})
}

// imagesInUse is the set of image IDs a container on the node (in any
// state) runs from or mounts as an image volume, as kubelet's GetPods(all)
// and handleImageVolumes see them.
func (m *Manager) imagesInUse(ctx context.Context, imgs []*runtimeapi.Image) (map[string]bool, error) {
	ctrs, err := m.rt.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	ids := make(map[string]bool, len(imgs))
	for _, img := range imgs {
		ids[img.GetId()] = true
	}
	inUse := map[string]bool{}
	for _, c := range ctrs {
		if c.GetId() == "" || c.GetImage() == nil || c.GetMetadata() == nil {
			continue // kubelet cannot convert such a container and skips it
		}
		st, err := m.rt.ContainerStatus(ctx, c.GetId(), false)
		if errors.Is(runtime.Classify(err), runtime.ErrNotFound) {
			st, err = nil, nil // gone since listed: it uses nothing now
		}
		if err != nil {
			return nil, fmt.Errorf("get container status: runtime container status: %w", err)
		}
		for _, mnt := range st.GetStatus().GetMounts() {
			if ref := mnt.GetImage().GetImage(); ref != "" && ids[ref] {
				inUse[ref] = true
			}
		}
		id := c.GetImageRef()
		if c.GetImageId() != "" {
			id = c.GetImageId()
		}
		inUse[id] = true
	}
	return inUse, nil
}

func (m *Manager) isSandboxImage(img *runtimeapi.Image) bool {
	for _, name := range m.sandboxImages {
		if img.GetId() == name || slices.Contains(img.GetRepoTags(), name) || slices.Contains(img.GetRepoDigests(), name) {
			return true
		}
	}
	return false
}

// sandboxNames adds each reference's normalised form.
func sandboxNames(refs []string) []string {
	out := slices.Clone(refs)
	for _, ref := range refs {
		if n, err := reference.ParseNormalizedNamed(ref); err == nil {
			out = append(out, reference.TagNameOnly(n).String())
		}
	}
	return out
}

// remove removes one image through CRI and forgets it.
func (m *Manager) remove(ctx context.Context, c candidate, reason string, p *Pass) error {
	logr.FromContextOrDiscard(ctx).Info("Removing image to free bytes", "imageID", c.id, "size", c.size)
	if err := m.rt.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: c.id}); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.seen, c.id)
	m.mu.Unlock()
	p.Removed = append(p.Removed, RemovedImage{ID: c.id, Size: c.size, Reason: reason})
	return nil
}

// freeOld removes the candidates unused for longer than MaxAge, once the
// manager itself is older than MaxAge, and returns the others.
func (m *Manager) freeOld(ctx context.Context, cands []candidate, now time.Time, p *Pass) ([]candidate, error) {
	if m.policy.MaxAge == 0 || now.Sub(m.began) <= m.policy.MaxAge {
		return cands, nil
	}
	var errs []error
	left := make([]candidate, 0, len(cands))
	for _, c := range cands {
		if now.Sub(c.lastUsed) <= m.policy.MaxAge {
			left = append(left, c)
			continue
		}
		if err := m.remove(ctx, c, ReasonAge, p); err != nil {
			errs = append(errs, err)
			left = append(left, c)
		}
	}
	if len(errs) > 0 {
		return left, &passError{
			fmt.Sprintf("wanted to free images older than %v, encountered errors in image deletion: %s", m.policy.MaxAge, aggregate(errs)),
			append([]error{ErrRemoveFailed}, errs...)}
	}
	return left, nil
}

// freeSpace removes candidates in order until toFree bytes are freed,
// skipping those used at now or later and those younger than MinAge.
func (m *Manager) freeSpace(ctx context.Context, toFree int64, now time.Time, cands []candidate, p *Pass) (int64, error) {
	log := logr.FromContextOrDiscard(ctx)
	var freed int64
	var errs []error
	for _, c := range cands {
		if !c.lastUsed.Before(now) {
			continue
		}
		if now.Sub(c.firstDetected) < m.policy.MinAge {
			log.V(5).Info("Image ID's age is less than the policy's minAge, not eligible for garbage collection", "imageID", c.id)
			continue
		}
		if err := m.remove(ctx, c, ReasonSpace, p); err != nil {
			errs = append(errs, err)
			continue
		}
		freed = addSaturated(freed, c.size)
		if freed >= toFree {
			break
		}
	}
	if len(errs) > 0 {
		return freed, &passError{
			fmt.Sprintf("wanted to free %d bytes, but freed %d bytes space with errors in image deletion: %s", toFree, freed, aggregate(errs)),
			append([]error{ErrRemoveFailed}, errs...)}
	}
	return freed, nil
}

// prune forgets the pulled records of the images l listed that are gone,
// and of images not listed at all, last updated before the pass began.
func (m *Manager) prune(ctx context.Context, l *listing, p *Pass) {
	if m.records == nil || l == nil {
		return
	}
	removed := make(map[string]bool, len(p.Removed))
	for _, r := range p.Removed {
		removed[r.ID] = true
	}
	var keep []string
	for _, img := range l.images {
		if removed[img.GetId()] {
			continue
		}
		keep = append(keep, img.GetId())
		keep = append(keep, img.GetRepoDigests()...)
	}
	m.records.PruneUnknownRecords(ctx, keep, p.Time)
}

func (m *Manager) finish(ctx context.Context, l *listing, p *Pass, err error) error {
	m.prune(ctx, l, p)
	p.Err = err
	if m.onPass != nil {
		m.onPass(*p)
	}
	return err
}

// GarbageCollect is one pass of kubelet's image GC: images unused for
// longer than MaxAge go first; then, if the image filesystem's usage is at
// or above the high threshold, unused images old enough are removed,
// least recently used first, until the low threshold's worth is freed.
func (m *Manager) GarbageCollect(ctx context.Context) error {
	m.passMu.Lock()
	defer m.passMu.Unlock()
	now := m.clock.Now()
	p := &Pass{Kind: "GarbageCollect", Time: now}
	l, err := m.detect(ctx, now)
	if err != nil {
		return m.finish(ctx, nil, p, err)
	}
	cands, err := m.freeOld(ctx, l.candidates, now, p)
	if err != nil {
		return m.finish(ctx, l, p, err)
	}
	capacity, available, err := m.imageFsUsage(ctx)
	if err != nil {
		return m.finish(ctx, l, p, err)
	}
	if available > capacity {
		available = capacity
	}
	if capacity == 0 {
		m.event(EventInvalidDiskCapacity, ErrInvalidCapacity.Error())
		return m.finish(ctx, l, p, ErrInvalidCapacity)
	}
	usage := 100 - percentOf(available, capacity)
	p.UsagePercent, p.Capacity, p.Available = usage, capacity, available
	if usage < m.policy.HighThresholdPercent {
		return m.finish(ctx, l, p, nil)
	}
	toFree := share(capacity, 100-m.policy.LowThresholdPercent) - available
	logr.FromContextOrDiscard(ctx).Info("Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold",
		"usage", usage, "highThreshold", m.policy.HighThresholdPercent, "amountToFree", toFree, "lowThreshold", m.policy.LowThresholdPercent)
	freed, err := m.freeSpace(ctx, toFree, now, cands, p)
	if err != nil {
		return m.finish(ctx, l, p, err)
	}
	if freed < toFree {
		msg := fmt.Sprintf("Insufficient free disk space on the node's image filesystem (%d%% of %s used). "+
			"Failed to free sufficient space by deleting unused images (freed %d bytes). "+
			"Investigate disk usage, as it could be used by active images, logs, volumes, or other data.",
			usage, formatSize(capacity), freed)
		m.event(EventFreeDiskSpaceFailed, msg)
		return m.finish(ctx, l, p, &passError{msg, []error{ErrInsufficientSpace}})
	}
	return m.finish(ctx, l, p, nil)
}

// DeleteUnusedImages removes every image not in use, not pinned and not
// younger than MinAge, whatever the usage (kubelet's, which eviction calls
// to reclaim the image filesystem).
func (m *Manager) DeleteUnusedImages(ctx context.Context) error {
	m.passMu.Lock()
	defer m.passMu.Unlock()
	logr.FromContextOrDiscard(ctx).Info("Attempting to delete unused images")
	now := m.clock.Now()
	p := &Pass{Kind: "DeleteUnusedImages", Time: now}
	l, err := m.detect(ctx, now)
	if err != nil {
		return m.finish(ctx, nil, p, err)
	}
	_, err = m.freeSpace(ctx, math.MaxInt64, now, l.candidates, p)
	return m.finish(ctx, l, p, err)
}

// imageFsUsage reads the first image filesystem the runtime reports and
// measures it.
func (m *Manager) imageFsUsage(ctx context.Context) (capacity, available int64, err error) {
	resp, err := m.rt.ImageFsInfo(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("image filesystem info: %w", err)
	}
	if len(resp.GetImageFilesystems()) == 0 {
		return 0, 0, ErrNoImageFs
	}
	mp := resp.GetImageFilesystems()[0].GetFsId().GetMountpoint()
	if mp == "" {
		return 0, 0, nil // kubelet: no filesystem identifier, no capacity
	}
	c, a, err := m.fs.Usage(ctx, mp)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil // kubelet: a device cAdvisor does not know, no capacity
	}
	if err != nil {
		return 0, 0, fmt.Errorf("image filesystem %s: %w", mp, err)
	}
	return clampInt64(c), clampInt64(a), nil
}

// percentOf is a×100/b (integer division) for 0 ≤ a ≤ b, b > 0, as
// kubelet computes it, without overflowing for filesystems over 92 PB.
func percentOf(a, b int64) int {
	hi, lo := bits.Mul64(uint64(a), 100)
	q, _ := bits.Div64(hi, lo, uint64(b))
	return int(q)
}

// share is c×pct/100 (integer division), without overflow.
func share(c int64, pct int) int64 {
	return c/100*int64(pct) + c%100*int64(pct)/100
}

// addSaturated is a+b for a, b ≥ 0, math.MaxInt64 where it would overflow.
func addSaturated(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

func clampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// Run calls GarbageCollect now and every Period after the previous pass
// ends, until ctx is done, as kubelet's StartGarbageCollection does: a
// failure is logged, and a failure following a failure is also an
// ImageGCFailed event. With Policy.Disabled, Run only keeps first-seen and
// last-used times current (kubelet's image detection loop), so that
// DeleteUnusedImages still respects MinAge.
func (m *Manager) Run(ctx context.Context) {
	log := logr.FromContextOrDiscard(ctx)
	prevFailed := false
	for {
		if m.policy.Disabled() {
			m.detectOnly(ctx)
		} else if err := m.GarbageCollect(ctx); err != nil {
			if prevFailed {
				log.Error(err, "Image garbage collection failed multiple times in a row")
				m.event(EventImageGCFailed, err.Error())
			} else {
				log.Error(err, "Image garbage collection failed once. Stats initialization may not have completed yet")
			}
			prevFailed = true
		} else {
			prevFailed = false
		}
		t := m.clock.NewTimer(Period)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

func (m *Manager) detectOnly(ctx context.Context) {
	m.passMu.Lock()
	defer m.passMu.Unlock()
	now := m.clock.Now()
	p := &Pass{Kind: "Detect", Time: now}
	_, err := m.detect(ctx, now)
	if err != nil {
		logr.FromContextOrDiscard(ctx).Info("Failed to monitor images", "err", err.Error())
	}
	_ = m.finish(ctx, nil, p, err)
}

// formatSize is kubelet's human-readable size for the FreeDiskSpaceFailed
// message.
func formatSize(b int64) string {
	const (
		kib = 1024
		mib = 1024 * kib
		gib = 1024 * mib
		tib = 1024 * gib
	)
	s := float64(b)
	switch {
	case s < kib:
		return fmt.Sprintf("%d B", b)
	case s < mib:
		return fmt.Sprintf("%.1f KiB", s/kib)
	case s < gib:
		return fmt.Sprintf("%.1f MiB", s/mib)
	case s < tib:
		return fmt.Sprintf("%.1f GiB", s/gib)
	default:
		return fmt.Sprintf("%.1f TiB", s/tib)
	}
}
