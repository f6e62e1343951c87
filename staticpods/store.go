package staticpods

import (
	"fmt"
	"maps"
	"reflect"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Op is the kind of an Update, kubelet's kubetypes.PodOperation.
type Op int

const (
	// OpAdd: pods new to the source (a new UID). Sent once with no pods when
	// the source's first snapshot changed nothing, so that the caller can
	// mark the source seen (kubelet's SourcesReady).
	OpAdd Op = iota
	// OpUpdate: pods whose spec, labels or annotations changed under the same
	// UID (a manifest that sets metadata.uid).
	OpUpdate
	// OpRemove: pods gone from the source; the caller kills them.
	OpRemove
)

func (o Op) String() string {
	switch o {
	case OpAdd:
		return "ADD"
	case OpUpdate:
		return "UPDATE"
	case OpRemove:
		return "REMOVE"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Update is one change of a source's pods, kubelet's kubetypes.PodUpdate.
// Pods are copies the caller owns.
type Update struct {
	Op     Op
	Source string
	Pods   []*corev1.Pod
}

// Refusal is a manifest (or a poll of the HTTP source) that was refused:
// Location names the file or URL, Err matches the package's sentinels.
type Refusal struct {
	Location string
	Err      error
}

func (r Refusal) Error() string { return r.Location + ": " + r.Err.Error() }
func (r Refusal) Unwrap() error { return r.Err }

// merger is kubelet's podStorage.merge for one source: snapshots in,
// ADD/UPDATE/REMOVE out, the config.source and config.seen annotations set.
type merger struct {
	source string
	now    func() time.Time
	seen   bool
	pods   map[types.UID]*corev1.Pod
}

func newMerger(source string, now func() time.Time) *merger {
	return &merger{source: source, now: now, pods: map[types.UID]*corev1.Pod{}}
}

// merge takes the source's full set of pods and returns the updates in
// kubelet's order (REMOVE, ADD, UPDATE), and the pods refused as
// duplicates of an earlier pod's namespace and name (kubelet's
// filterInvalidPods).
func (m *merger) merge(snapshot []*corev1.Pod) (updates []Update, dups []*corev1.Pod) {
	firstSet := !m.seen
	m.seen = true
	var adds, upds, removes []*corev1.Pod
	next := make(map[types.UID]*corev1.Pod, len(snapshot))
	names := map[string]bool{}
	for _, ref := range snapshot {
		full := FullName(ref)
		if names[full] {
			dups = append(dups, ref)
			continue
		}
		names[full] = true
		ref = ref.DeepCopy()
		if ref.Annotations == nil {
			ref.Annotations = map[string]string{}
		}
		ref.Annotations[ConfigSourceAnnotation] = m.source
		if existing, ok := m.pods[ref.UID]; ok {
			next[ref.UID] = existing
			if differ(existing, ref) {
				ref.Annotations[ConfigSeenAnnotation] = existing.Annotations[ConfigSeenAnnotation]
				existing.Spec = ref.Spec
				existing.Labels = ref.Labels
				existing.DeletionTimestamp = ref.DeletionTimestamp
				existing.DeletionGracePeriodSeconds = ref.DeletionGracePeriodSeconds
				existing.Generation = ref.Generation
				existing.Status = ref.Status
				ann := maps.Clone(ref.Annotations)
				for _, k := range localAnnotations {
					if v, ok := existing.Annotations[k]; ok {
						ann[k] = v
					}
				}
				existing.Annotations = ann
				upds = append(upds, existing)
			}
			continue
		}
		ref.Annotations[ConfigSeenAnnotation] = m.now().Format(seenLayout)
		next[ref.UID] = ref
		adds = append(adds, ref)
	}
	for uid, old := range m.pods {
		if _, ok := next[uid]; !ok {
			removes = append(removes, old)
		}
	}
	sortPods(removes)
	m.pods = next
	if len(removes) > 0 {
		updates = append(updates, Update{Op: OpRemove, Source: m.source, Pods: copies(removes)})
	}
	if len(adds) > 0 {
		updates = append(updates, Update{Op: OpAdd, Source: m.source, Pods: copies(adds)})
	}
	if len(upds) > 0 {
		updates = append(updates, Update{Op: OpUpdate, Source: m.source, Pods: copies(upds)})
	}
	if firstSet && len(adds) == 0 && len(upds) == 0 {
		updates = append(updates, Update{Op: OpAdd, Source: m.source})
	}
	return updates, dups
}

// seenLayout is kubelet's RFC3339NanoFixed, in which config.seen is written.
const seenLayout = "2006-01-02T15:04:05.000000000Z07:00"

// localAnnotations are kubelet's: set by the node, not by the manifest.
var localAnnotations = []string{ConfigSourceAnnotation, ConfigMirrorAnnotation, ConfigSeenAnnotation}

func isLocal(k string) bool {
	for _, l := range localAnnotations {
		if k == l {
			return true
		}
	}
	return false
}

// differ is kubelet's podsDifferSemantically.
func differ(existing, ref *corev1.Pod) bool {
	return !reflect.DeepEqual(existing.Spec, ref.Spec) ||
		!reflect.DeepEqual(existing.Labels, ref.Labels) ||
		!reflect.DeepEqual(existing.DeletionTimestamp, ref.DeletionTimestamp) ||
		!reflect.DeepEqual(existing.DeletionGracePeriodSeconds, ref.DeletionGracePeriodSeconds) ||
		!annotationsEqual(existing.Annotations, ref.Annotations)
}

func annotationsEqual(a, b map[string]string) bool {
	for k, v := range b {
		if isLocal(k) {
			continue
		}
		if w, ok := a[k]; !ok || w != v {
			return false
		}
	}
	for k := range a {
		if isLocal(k) {
			continue
		}
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// FullName is kubelet's pod full name, "<name>_<namespace>".
func FullName(pod *corev1.Pod) string { return pod.Name + "_" + pod.Namespace }

func copies(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		out[i] = p.DeepCopy()
	}
	return out
}

func sortPods(pods []*corev1.Pod) {
	sort.Slice(pods, func(i, j int) bool { return FullName(pods[i]) < FullName(pods[j]) })
}
