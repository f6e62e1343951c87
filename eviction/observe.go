package eviction

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Observation is one signal's measurement: what is available of what
// capacity, and when the stats were taken (zero when unknown).
type Observation struct {
	Available resource.Quantity
	Capacity  resource.Quantity
	Time      time.Time
}

// Observations holds the signals a summary could measure.
type Observations map[Signal]Observation

// PodsContainerName is the system container of the summary whose memory
// is the pods' (kubelet's statsapi.SystemContainerPods): the source of
// allocatableMemory.available.
const PodsContainerName = statsapi.SystemContainerPods

// Observe derives the signals from a stats summary as kubelet's
// makeSignalObservations on Linux:
//   - memory.available: Node.Memory's AvailableBytes, capacity
//     AvailableBytes + WorkingSetBytes;
//   - allocatableMemory.available: likewise from the "pods" system
//     container;
//   - nodefs.*: Node.Fs; imagefs.*: Node.Runtime.ImageFs;
//     containerfs.*: Node.Runtime.ContainerFs (bytes and inodes each only
//     when both of their values are present);
//   - pid.available: Node.Rlimit's MaxPID − NumOfRunningProcesses.
//
// A signal whose stats are missing is absent, and its thresholds are not
// met.
func Observe(summary *statsapi.Summary) Observations {
	out := Observations{}
	if summary == nil {
		return out
	}
	node := &summary.Node
	memory := func(s Signal, m *statsapi.MemoryStats) {
		if m != nil && m.AvailableBytes != nil && m.WorkingSetBytes != nil {
			out[s] = Observation{
				Available: *resource.NewQuantity(int64(*m.AvailableBytes), resource.BinarySI),
				Capacity:  *resource.NewQuantity(int64(*m.AvailableBytes+*m.WorkingSetBytes), resource.BinarySI),
				Time:      m.Time.Time,
			}
		}
	}
	memory(SignalMemoryAvailable, node.Memory)
	for i := range node.SystemContainers {
		if node.SystemContainers[i].Name == PodsContainerName {
			memory(SignalAllocatableMemoryAvailable, node.SystemContainers[i].Memory)
			break
		}
	}
	fs := func(bytes, inodes Signal, f *statsapi.FsStats) {
		if f == nil {
			return
		}
		if f.AvailableBytes != nil && f.CapacityBytes != nil {
			out[bytes] = Observation{
				Available: *resource.NewQuantity(int64(*f.AvailableBytes), resource.BinarySI),
				Capacity:  *resource.NewQuantity(int64(*f.CapacityBytes), resource.BinarySI),
				Time:      f.Time.Time,
			}
		}
		if f.InodesFree != nil && f.Inodes != nil {
			out[inodes] = Observation{
				Available: *resource.NewQuantity(int64(*f.InodesFree), resource.DecimalSI),
				Capacity:  *resource.NewQuantity(int64(*f.Inodes), resource.DecimalSI),
				Time:      f.Time.Time,
			}
		}
	}
	fs(SignalNodeFsAvailable, SignalNodeFsInodesFree, node.Fs)
	if node.Runtime != nil {
		fs(SignalImageFsAvailable, SignalImageFsInodesFree, node.Runtime.ImageFs)
		fs(SignalContainerFsAvailable, SignalContainerFsInodesFree, node.Runtime.ContainerFs)
	}
	if r := node.Rlimit; r != nil && r.NumOfRunningProcesses != nil && r.MaxPID != nil {
		out[SignalPIDAvailable] = Observation{
			Available: *resource.NewQuantity(int64(*r.MaxPID)-int64(*r.NumOfRunningProcesses), resource.DecimalSI),
			Capacity:  *resource.NewQuantity(int64(*r.MaxPID), resource.DecimalSI),
			Time:      r.Time.Time,
		}
	}
	return out
}

// ThresholdsMet is kubelet's thresholdsMet: the thresholds, in order,
// whose signal's available amount is below their value — or, with
// enforceMinReclaim, below value + MinReclaim. A threshold with no
// observation is not met.
func ThresholdsMet(thresholds []Threshold, obs Observations, enforceMinReclaim bool) []Threshold {
	out := []Threshold{}
	for _, t := range thresholds {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		q := t.Value.QuantityOf(o.Capacity)
		if enforceMinReclaim && t.MinReclaim != nil {
			q.Add(t.MinReclaim.QuantityOf(o.Capacity))
		}
		if q.Cmp(o.Available) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// NodeConditions is the set of pressure conditions the thresholds report,
// in the order first reported.
func NodeConditions(thresholds []Threshold) []corev1.NodeConditionType {
	out := []corev1.NodeConditionType{}
	for _, t := range thresholds {
		if c, ok := signalCondition[t.Signal]; ok && !hasCondition(out, c) {
			out = append(out, c)
		}
	}
	return out
}

func hasCondition(list []corev1.NodeConditionType, c corev1.NodeConditionType) bool {
	for _, x := range list {
		if x == c {
			return true
		}
	}
	return false
}

// mergeThresholds appends b's thresholds not already in a.
func mergeThresholds(a, b []Threshold) []Threshold {
	out := a
	for _, t := range b {
		found := false
		for _, x := range out {
			if x.same(t) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, t)
		}
	}
	return out
}

// sortByEvictionPriority is kubelet's byEvictionPriority, applied with the
// same sort: memory signals first, thresholds of signals with no resource
// last.
type byEvictionPriority []Threshold

func (a byEvictionPriority) Len() int      { return len(a) }
func (a byEvictionPriority) Swap(i, j int) { a[i], a[j] = a[j], a[i] }
func (a byEvictionPriority) Less(i, j int) bool {
	_, jHas := signalResource[a[j].Signal]
	return a[i].Signal == SignalMemoryAvailable || a[i].Signal == SignalAllocatableMemoryAvailable || !jHas
}

// thresholdMetInfo is kubelet's getThresholdMetInfo: the value and
// available amount of the first threshold measuring resource.
func thresholdMetInfo(res corev1.ResourceName, thresholds []Threshold, obs Observations) (q, available *resource.Quantity) {
	for _, t := range thresholds {
		if signalResource[t.Signal] != res {
			continue
		}
		if o, ok := obs[t.Signal]; ok {
			v := t.Value.QuantityOf(o.Capacity)
			a := o.Available.DeepCopy()
			return &v, &a
		}
	}
	return nil, nil
}
