package eviction

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal is a measurement of the node that can trigger eviction, spelled
// as in kubelet's --eviction-hard flag.
type Signal string

// The signals kubelet v1.37.2 understands (pkg/kubelet/eviction/api).
const (
	// SignalMemoryAvailable is the node's memory available: capacity minus
	// working set.
	SignalMemoryAvailable Signal = "memory.available"
	// SignalNodeFsAvailable is the bytes available on the filesystem of the
	// kubelet's root directory (volumes, logs).
	SignalNodeFsAvailable Signal = "nodefs.available"
	// SignalNodeFsInodesFree is the inodes free on that filesystem.
	SignalNodeFsInodesFree Signal = "nodefs.inodesFree"
	// SignalImageFsAvailable is the bytes available on the runtime's image
	// filesystem.
	SignalImageFsAvailable Signal = "imagefs.available"
	// SignalImageFsInodesFree is the inodes free on the image filesystem.
	SignalImageFsInodesFree Signal = "imagefs.inodesFree"
	// SignalContainerFsAvailable is the bytes available on the filesystem
	// of containers' writable layers. Its thresholds are always derived from
	// nodefs's or imagefs's (UpdateContainerFsThresholds).
	SignalContainerFsAvailable Signal = "containerfs.available"
	// SignalContainerFsInodesFree is the inodes free on that filesystem.
	SignalContainerFsInodesFree Signal = "containerfs.inodesFree"
	// SignalAllocatableMemoryAvailable is the memory available to pods:
	// the pods cgroup's available bytes.
	SignalAllocatableMemoryAvailable Signal = "allocatableMemory.available"
	// SignalPIDAvailable is the node's maximum PID minus running processes.
	SignalPIDAvailable Signal = "pid.available"
)

// Resources kubelet's eviction manager reclaims besides memory and
// ephemeral-storage. They are not API resources: they name what a
// threshold's signal measures, in messages and annotations.
const (
	ResourceInodes corev1.ResourceName = "inodes"
	ResourcePIDs   corev1.ResourceName = "pids"
)

// signalResource maps each supported signal to the resource it measures;
// a signal absent here is not supported.
var signalResource = map[Signal]corev1.ResourceName{
	SignalMemoryAvailable:            corev1.ResourceMemory,
	SignalAllocatableMemoryAvailable: corev1.ResourceMemory,
	SignalNodeFsAvailable:            corev1.ResourceEphemeralStorage,
	SignalImageFsAvailable:           corev1.ResourceEphemeralStorage,
	SignalContainerFsAvailable:       corev1.ResourceEphemeralStorage,
	SignalNodeFsInodesFree:           ResourceInodes,
	SignalImageFsInodesFree:          ResourceInodes,
	SignalContainerFsInodesFree:      ResourceInodes,
	SignalPIDAvailable:               ResourcePIDs,
}

// signalCondition maps each signal to the node condition its met
// threshold reports.
var signalCondition = map[Signal]corev1.NodeConditionType{
	SignalMemoryAvailable:            corev1.NodeMemoryPressure,
	SignalAllocatableMemoryAvailable: corev1.NodeMemoryPressure,
	SignalNodeFsAvailable:            corev1.NodeDiskPressure,
	SignalImageFsAvailable:           corev1.NodeDiskPressure,
	SignalContainerFsAvailable:       corev1.NodeDiskPressure,
	SignalNodeFsInodesFree:           corev1.NodeDiskPressure,
	SignalImageFsInodesFree:          corev1.NodeDiskPressure,
	SignalContainerFsInodesFree:      corev1.NodeDiskPressure,
	SignalPIDAvailable:               corev1.NodePIDPressure,
}

// Resource is the resource a signal measures (memory, ephemeral-storage,
// inodes or pids), and false for a signal kubelet does not support.
func (s Signal) Resource() (corev1.ResourceName, bool) {
	r, ok := signalResource[s]
	return r, ok
}

// Condition is the node condition a met threshold on s reports.
func (s Signal) Condition() (corev1.NodeConditionType, bool) {
	c, ok := signalCondition[s]
	return c, ok
}

// ThresholdValue is a quantity or a fraction of the signal's capacity.
// Quantity, when set, wins.
type ThresholdValue struct {
	Quantity *resource.Quantity
	// Percentage is a fraction in [0, 1] (kubelet's name for it).
	Percentage float32
}

// QuantityOf is the value against a capacity: the quantity itself, or
// capacity × percentage truncated to an integer (kubelet's
// GetThresholdQuantity).
func (v ThresholdValue) QuantityOf(capacity resource.Quantity) resource.Quantity {
	if v.Quantity != nil {
		return v.Quantity.DeepCopy()
	}
	return *resource.NewQuantity(int64(float64(capacity.Value())*float64(v.Percentage)), resource.BinarySI)
}

func (v ThresholdValue) String() string {
	if v.Quantity != nil {
		return v.Quantity.String()
	}
	return strconv.FormatFloat(float64(v.Percentage)*100, 'g', 6, 64) + "%"
}

// equal is kubelet's compareThresholdValue.
func (v ThresholdValue) equal(o ThresholdValue) bool {
	if v.Quantity != nil {
		return o.Quantity != nil && v.Quantity.Cmp(*o.Quantity) == 0
	}
	return o.Quantity == nil && v.Percentage == o.Percentage
}

// Threshold is met when the signal's available amount is less than Value.
// Every signal's operator is "less than"; it is implicit.
type Threshold struct {
	Signal Signal
	Value  ThresholdValue
	// GracePeriod is how long the threshold must hold before pods are
	// evicted; zero makes it a hard threshold.
	GracePeriod time.Duration
	// MinReclaim, when set, keeps the threshold met until the signal is
	// that much above Value.
	MinReclaim *ThresholdValue
}

// Hard reports whether t evicts without waiting (no grace period).
func (t Threshold) Hard() bool { return t.GracePeriod == 0 }

func (t Threshold) String() string {
	return fmt.Sprintf("%s<%s", t.Signal, t.Value)
}

// same is kubelet's hasThreshold comparison: MinReclaim is not compared.
func (t Threshold) same(o Threshold) bool {
	return t.GracePeriod == o.GracePeriod && t.Signal == o.Signal && t.Value.equal(o.Value)
}

// Errors of ParseThresholds, matchable with errors.Is. Their text is
// kubelet's.
var (
	// ErrUnsupportedSignal: a signal kubelet does not know.
	ErrUnsupportedSignal = errors.New("unsupported eviction signal")
	// ErrInvalidThreshold: a value that is not a quantity or a
	// percentage, or out of range.
	ErrInvalidThreshold = errors.New("invalid eviction threshold")
	// ErrMissingGracePeriod: a soft threshold without a grace period.
	ErrMissingGracePeriod = errors.New("missing eviction grace period")
)

type parseError struct {
	msg   string
	kind  error
	cause error
}

func (e *parseError) Error() string { return e.msg }
func (e *parseError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.kind, e.cause}
	}
	return []error{e.kind}
}

func invalid(cause error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if format == "" {
		msg = cause.Error()
	}
	return &parseError{msg: msg, kind: ErrInvalidThreshold, cause: cause}
}

func unsupported(s Signal) error {
	return &parseError{msg: fmt.Sprintf("unsupported eviction signal %v", s), kind: ErrUnsupportedSignal}
}

// DefaultEvictionHard is kubelet v1.37.2's evictionHard on Linux. The
// containerfs signals are not in it: they are derived from nodefs's or
// imagefs's by UpdateContainerFsThresholds.
func DefaultEvictionHard() map[string]string {
	return map[string]string{
		"memory.available":   "100Mi",
		"nodefs.available":   "10%",
		"nodefs.inodesFree":  "5%",
		"imagefs.available":  "15%",
		"imagefs.inodesFree": "5%",
	}
}

// DefaultPressureTransitionPeriod is kubelet's evictionPressureTransitionPeriod.
const DefaultPressureTransitionPeriod = 5 * time.Minute

// DefaultThresholds is kubelet's default configuration parsed: the hard
// thresholds of DefaultEvictionHard, with allocatableMemory.available
// added because kubelet enforces node allocatable on pods by default
// (enforceNodeAllocatable: [pods]). The order is the signals' order.
func DefaultThresholds() []Threshold {
	t, err := ParseThresholds(Config{Hard: DefaultEvictionHard(), EnforceNodeAllocatable: true})
	if err != nil {
		panic(err) // the defaults are constants
	}
	return t
}

// Config is kubelet's eviction flags: maps from signal to value, as in
// --eviction-hard=memory.available<100Mi written as
// {"memory.available": "100Mi"}.
type Config struct {
	Hard            map[string]string
	Soft            map[string]string
	SoftGracePeriod map[string]string
	MinimumReclaim  map[string]string
	// EnforceNodeAllocatable is enforceNodeAllocatable holding "pods": a
	// hard memory.available threshold is copied to
	// allocatableMemory.available.
	EnforceNodeAllocatable bool
}

// ParseThresholds is kubelet's ParseThresholdConfig: the hard thresholds,
// then the soft ones with their grace periods, minimum reclaims applied to
// both, then allocatableMemory.available copies of hard memory.available
// thresholds. "0%" and "100%" are ignored as kubelet ignores them; a zero
// or negative quantity, a percentage outside [0%, 100%], a soft threshold
// with no grace period and an unknown signal are errors. Within hard and
// within soft, kubelet's order follows Go's map iteration; here it is by
// signal name.
func ParseThresholds(c Config) ([]Threshold, error) {
	results := []Threshold{}
	hard, err := parseStatements(c.Hard)
	if err != nil {
		return nil, err
	}
	results = append(results, hard...)
	soft, err := parseStatements(c.Soft)
	if err != nil {
		return nil, err
	}
	grace, err := parseGracePeriods(c.SoftGracePeriod)
	if err != nil {
		return nil, err
	}
	minReclaims, err := parseMinimumReclaims(c.MinimumReclaim)
	if err != nil {
		return nil, err
	}
	for i := range soft {
		period, ok := grace[soft[i].Signal]
		if !ok {
			return nil, &parseError{msg: fmt.Sprintf("grace period must be specified for the soft eviction threshold %v", soft[i].Signal), kind: ErrMissingGracePeriod}
		}
		soft[i].GracePeriod = period
	}
	results = append(results, soft...)
	for i := range results {
		if mr, ok := minReclaims[results[i].Signal]; ok {
			mr := mr
			results[i].MinReclaim = &mr
		}
	}
	if c.EnforceNodeAllocatable {
		var extra []Threshold
		for _, t := range results {
			if t.Signal == SignalMemoryAvailable && t.Hard() {
				extra = append(extra, Threshold{Signal: SignalAllocatableMemoryAvailable, Value: t.Value, MinReclaim: t.MinReclaim})
			}
		}
		results = append(results, extra...)
	}
	return results, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func parseStatements(statements map[string]string) ([]Threshold, error) {
	var out []Threshold
	for _, k := range sortedKeys(statements) {
		t, err := ParseThreshold(Signal(k), statements[k])
		if err != nil {
			return nil, err
		}
		if t != nil {
			out = append(out, *t)
		}
	}
	return out, nil
}

// ParseThreshold parses one statement's value for a signal ("100Mi",
// "10%"). It returns nil, nil for "0%" and "100%", which kubelet ignores.
func ParseThreshold(signal Signal, val string) (*Threshold, error) {
	if _, ok := signalResource[signal]; !ok {
		return nil, unsupported(signal)
	}
	if strings.HasSuffix(val, "%") {
		if val == "0%" || val == "100%" {
			return nil, nil
		}
		p, err := parsePercentage(val)
		if err != nil {
			return nil, err
		}
		if p < 0 {
			return nil, invalid(nil, "eviction percentage threshold %v must be >= 0%%: %s", signal, val)
		}
		if p > 1 {
			return nil, invalid(nil, "eviction percentage threshold %v must be <= 100%%: %s", signal, val)
		}
		return &Threshold{Signal: signal, Value: ThresholdValue{Percentage: p}}, nil
	}
	q, err := resource.ParseQuantity(val)
	if err != nil {
		return nil, invalid(err, "")
	}
	if q.Sign() <= 0 {
		return nil, invalid(nil, "eviction threshold %v must be positive: %s", signal, &q)
	}
	return &Threshold{Signal: signal, Value: ThresholdValue{Quantity: &q}}, nil
}

func parsePercentage(input string) (float32, error) {
	v, err := strconv.ParseFloat(strings.TrimRight(input, "%"), 32)
	if err != nil {
		return 0, invalid(err, "")
	}
	return float32(v) / 100, nil
}

func parseGracePeriods(statements map[string]string) (map[Signal]time.Duration, error) {
	out := map[Signal]time.Duration{}
	for _, k := range sortedKeys(statements) {
		s := Signal(k)
		if _, ok := signalResource[s]; !ok {
			return nil, unsupported(s)
		}
		d, err := time.ParseDuration(statements[k])
		if err != nil {
			return nil, invalid(err, "")
		}
		if d < 0 {
			return nil, invalid(nil, "invalid eviction grace period specified: %v, must be a positive value", statements[k])
		}
		out[s] = d
	}
	return out, nil
}

func parseMinimumReclaims(statements map[string]string) (map[Signal]ThresholdValue, error) {
	out := map[Signal]ThresholdValue{}
	for _, k := range sortedKeys(statements) {
		s, val := Signal(k), statements[k]
		if _, ok := signalResource[s]; !ok {
			return nil, unsupported(s)
		}
		if strings.HasSuffix(val, "%") {
			p, err := parsePercentage(val)
			if err != nil {
				return nil, err
			}
			if p <= 0 {
				return nil, invalid(nil, "eviction percentage minimum reclaim %v must be positive: %s", s, val)
			}
			out[s] = ThresholdValue{Percentage: p}
			continue
		}
		q, err := resource.ParseQuantity(val)
		if err != nil {
			return nil, invalid(err, "")
		}
		if q.Sign() < 0 {
			return nil, invalid(nil, "negative eviction minimum reclaim specified for %v", s)
		}
		out[s] = ThresholdValue{Quantity: &q}
	}
	return out, nil
}

// ErrContainerFsThreshold is returned (joined, as a warning) by
// UpdateContainerFsThresholds for a containerfs threshold that was set
// explicitly: kubelet overrides it with nodefs's or imagefs's.
var ErrContainerFsThreshold = errors.New("containerfs thresholds are derived and were overridden")

// UpdateContainerFsThresholds is kubelet's: containerfs thresholds (hard
// and soft, bytes and inodes) copied from nodefs's when the node has one
// filesystem or a split where containers live on nodefs
// (imageFs && splitContainerFs), or from imagefs's when images and
// containers share a dedicated image filesystem. Any containerfs threshold
// given is overwritten in place, with an error saying so; missing ones are
// appended, zero-valued when the source threshold is missing too, as in
// kubelet. It returns a new slice; the input is not changed.
func UpdateContainerFsThresholds(thresholds []Threshold, imageFs, splitContainerFs bool) ([]Threshold, error) {
	out := append([]Threshold(nil), thresholds...)
	var src [2][2][2]Threshold           // [nodefs=0/imagefs=1][bytes=0/inodes=1][hard=0/soft=1]
	idx := [2][2]int{{-1, -1}, {-1, -1}} // containerfs [bytes/inodes][hard/soft]
	var errs []error
	kind := func(h bool) int {
		if h {
			return 0
		}
		return 1
	}
	for i, t := range out {
		k := kind(t.Hard())
		switch t.Signal {
		case SignalNodeFsAvailable:
			src[0][0][k] = t
		case SignalNodeFsInodesFree:
			src[0][1][k] = t
		case SignalImageFsAvailable:
			src[1][0][k] = t
		case SignalImageFsInodesFree:
			src[1][1][k] = t
		case SignalContainerFsAvailable:
			errs = append(errs, fmt.Errorf("found containerfs.available for %s eviction. ignoring: %w", [2]string{"hard", "soft"}[k], ErrContainerFsThreshold))
			idx[0][k] = i
		case SignalContainerFsInodesFree:
			errs = append(errs, fmt.Errorf("found containerfs.inodesFree for %s eviction. ignoring: %w", [2]string{"hard", "soft"}[k], ErrContainerFsThreshold))
			idx[1][k] = i
		}
	}
	from := -1
	switch {
	case imageFs == splitContainerFs:
		from = 0
	case imageFs && !splitContainerFs:
		from = 1
	}
	if from < 0 {
		return out, errors.Join(errs...)
	}
	signals := [2]Signal{SignalContainerFsAvailable, SignalContainerFsInodesFree}
	for res := 0; res < 2; res++ {
		for k := 0; k < 2; k++ {
			s := src[from][res][k]
			t := Threshold{Signal: signals[res], Value: s.Value, MinReclaim: s.MinReclaim, GracePeriod: s.GracePeriod}
			if idx[res][k] >= 0 {
				out[idx[res][k]] = t
			} else {
				out = append(out, t)
			}
		}
	}
	return out, errors.Join(errs...)
}
