package podsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/internal/statefile"
	"github.com/podstart/podstart/runtime"
)

// ResourceValues are the values an in-place resize compares (kubelet's
// resourceRequirements): memory in bytes, CPU in millicores, limits with
// the pod-level limit where the container sets none.
type ResourceValues struct {
	MemoryLimit   int64 `json:"memoryLimit,omitempty"`
	MemoryRequest int64 `json:"memoryRequest,omitempty"`
	CPULimit      int64 `json:"cpuLimit,omitempty"`
	CPURequest    int64 `json:"cpuRequest,omitempty"`
}

// ContainerToUpdate is a running container whose CPU or memory changes in
// place (UpdateContainerResources) rather than by a restart.
type ContainerToUpdate struct {
	Name      string
	ID        string
	Container *corev1.Container
	// Desired is what the spec asks for; Current what was last applied.
	Desired, Current ResourceValues
}

// ResourceValuesOf is kubelet's containerResourcesFromRequirements with
// pod-level resources (InPlacePodLevelResourcesVerticalScaling, on in
// v1.36): a limit the container does not set is the pod's.
func ResourceValuesOf(podResources, c *corev1.ResourceRequirements) ResourceValues {
	v := ResourceValues{}
	// Looked up in place, without building kubelet's merged limits: this
	// runs for every running container on every sync.
	if q, ok := c.Limits[corev1.ResourceMemory]; ok {
		v.MemoryLimit = q.Value()
	}
	if q, ok := c.Limits[corev1.ResourceCPU]; ok {
		v.CPULimit = q.MilliValue()
	}
	if q, ok := c.Requests[corev1.ResourceMemory]; ok {
		v.MemoryRequest = q.Value()
	}
	if q, ok := c.Requests[corev1.ResourceCPU]; ok {
		v.CPURequest = q.MilliValue()
	}
	if podResources != nil {
		if q, ok := podResources.Limits[corev1.ResourceMemory]; ok && v.MemoryLimit == 0 {
			v.MemoryLimit = q.Value()
		}
		if q, ok := podResources.Limits[corev1.ResourceCPU]; ok && v.CPULimit == 0 {
			v.CPULimit = q.MilliValue()
		}
	}
	return v
}

// computeResize is kubelet's computePodResizeAction for the running
// container c at index idx: it queues in-place updates in a (decreases
// before increases, per resource) or, when c's resize policy says
// RestartContainer for a resource that changed, a kill and a restart. It
// reports whether c keeps running; when not, the caller starts it again. Nothing is computed without a record
// of what was applied (status.ActuatedResources nil).
func computeResize(pod *corev1.Pod, c *corev1.Container, s *ContainerStatus, status *PodStatus, a *Actions) (keep bool) {
	if s.State != ContainerStateRunning || status.ActuatedResources == nil {
		return true
	}
	// A missing record counts as zero, as in kubelet: an idempotent update
	// for NotRequired, a restart for RestartContainer.
	current := status.ActuatedResources[c.Name]
	desired := ResourceValuesOf(pod.Spec.Resources, &c.Resources)
	if desired == current {
		return true
	}
	policy := func(name corev1.ResourceName, want, have int64) (resize, restart bool) {
		if want == have {
			return false, false
		}
		for _, p := range c.ResizePolicy {
			if p.ResourceName == name {
				return true, p.RestartPolicy == corev1.RestartContainer
			}
		}
		return true, false // the default policy is NotRequired
	}
	memLim, rMemLim := policy(corev1.ResourceMemory, desired.MemoryLimit, current.MemoryLimit)
	memReq, rMemReq := policy(corev1.ResourceMemory, desired.MemoryRequest, current.MemoryRequest)
	cpuLim, rCPULim := policy(corev1.ResourceCPU, desired.CPULimit, current.CPULimit)
	cpuReq, rCPUReq := policy(corev1.ResourceCPU, desired.CPURequest, current.CPURequest)
	if rMemLim || rMemReq || rCPULim || rCPUReq {
		a.ContainersToKill[s.ID] = ContainerToKill{Name: c.Name, Container: c,
			Message: fmt.Sprintf("Container %s resize requires restart", c.Name)}
		a.UpdatePodResources = true
		return false
	}
	u := ContainerToUpdate{Name: c.Name, ID: s.ID, Container: c, Desired: desired, Current: current}
	queue := func(name corev1.ResourceName, want, have int64) {
		if a.ContainersToUpdate == nil {
			a.ContainersToUpdate = map[corev1.ResourceName][]ContainerToUpdate{}
		}
		if want < have {
			a.ContainersToUpdate[name] = append([]ContainerToUpdate{u}, a.ContainersToUpdate[name]...)
		} else {
			a.ContainersToUpdate[name] = append(a.ContainersToUpdate[name], u)
		}
	}
	if memLim {
		queue(corev1.ResourceMemory, desired.MemoryLimit, current.MemoryLimit)
	} else if memReq {
		queue(corev1.ResourceMemory, desired.MemoryRequest, current.MemoryRequest)
	}
	if cpuLim {
		queue(corev1.ResourceCPU, desired.CPULimit, current.CPULimit)
	} else if cpuReq {
		queue(corev1.ResourceCPU, desired.CPURequest, current.CPURequest)
	}
	return true
}

// ResizeInProgress is kubelet's IsPodResizeInProgress: a running app
// container or sidecar does not yet run with what its spec asks for
// (status.ActuatedResources differ). With no records (nil) it is false.
func ResizeInProgress(pod *corev1.Pod, status *PodStatus) bool {
	if status == nil || status.ActuatedResources == nil {
		return false
	}
	differs := func(c *corev1.Container) bool {
		s := status.FindContainerStatusByName(c.Name)
		if s == nil || s.State != ContainerStateRunning {
			return false
		}
		return ResourceValuesOf(pod.Spec.Resources, &c.Resources) != status.ActuatedResources[c.Name]
	}
	for i := range pod.Spec.InitContainers {
		if IsRestartableInitContainer(&pod.Spec.InitContainers[i]) && differs(&pod.Spec.InitContainers[i]) {
			return true
		}
	}
	for i := range pod.Spec.Containers {
		if differs(&pod.Spec.Containers[i]) {
			return true
		}
	}
	return false
}

// resize is kubelet's doPodResizeAction for the containers: memory first,
// then CPU; in each, the queued updates in order (decreases first). It
// stops at the first failure: the next sync retries what is left.
func (s *Syncer) resize(ctx context.Context, pod *corev1.Pod, a Actions, sr *SyncResult) {
	fail := func(err error) {
		sr.Err, sr.Message = stepError(ErrResizePodInPlace, err), err.Error()
	}
	ru, ok := s.rt.(runtime.ResourceUpdater)
	if !ok {
		fail(fmt.Errorf("the runtime cannot update container resources (UpdateContainerResources): %w", runtime.ErrUnimplemented))
		return
	}
	if err := s.checkMemoryDecrease(ctx, a.ContainersToUpdate[corev1.ResourceMemory]); err != nil {
		fail(err)
		return
	}
	// One current value per container across both resources, as kubelet's
	// shared pointer: the CPU update carries the memory just applied.
	current := map[string]*ResourceValues{}
	for _, name := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceCPU} {
		for _, u := range a.ContainersToUpdate[name] {
			cur := current[u.Name]
			if cur == nil {
				v := u.Current
				cur = &v
				current[u.Name] = cur
			}
			next := *cur
			if name == corev1.ResourceMemory {
				next.MemoryLimit, next.MemoryRequest = u.Desired.MemoryLimit, u.Desired.MemoryRequest
			} else {
				next.CPULimit, next.CPURequest = u.Desired.CPULimit, u.Desired.CPURequest
			}
			c := withResources(u.Container, next)
			res, err := criconfig.ContainerResources(pod, c, s.o.node)
			if err != nil {
				fail(fmt.Errorf("update %s of container %q: %w", name, u.Name, err))
				return
			}
			if err := runtime.Classify(ru.UpdateContainerResources(ctx, u.ID, res)); err != nil {
				fail(fmt.Errorf("update %s of container %q: %w", name, u.Name, err))
				return
			}
			*cur = next
			s.cache.forget(u.ID)
			if err := s.actuated.set(pod.UID, u.Name, next); err != nil {
				fail(err)
				return
			}
		}
	}
}

// resizeEvent is kubelet's podResizeMessage: prefix, then the spec's
// container resources, the generation and any error as JSON.
func resizeEvent(pod *corev1.Pod, prefix, errMsg string) string {
	type alloc struct {
		Name      string                      `json:"name"`
		Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	}
	summary := struct {
		InitContainers []alloc `json:"initContainers,omitempty"`
		Containers     []alloc `json:"containers,omitempty"`
		Generation     int64   `json:"generation"`
		Error          string  `json:"error,omitempty"`
	}{Generation: pod.Generation, Error: errMsg}
	for _, c := range pod.Spec.InitContainers {
		summary.InitContainers = append(summary.InitContainers, alloc{c.Name, c.Resources})
	}
	for _, c := range pod.Spec.Containers {
		summary.Containers = append(summary.Containers, alloc{c.Name, c.Resources})
	}
	b, err := json.Marshal(summary)
	if err != nil {
		return prefix
	}
	return prefix + ": " + string(b)
}

// withResources is c with CPU and memory set to v (kubelet's
// updatePodContainerResources); other resources, such as huge pages, stay
// as the spec has them, where kubelet's copy drops them.
func withResources(c *corev1.Container, v ResourceValues) *corev1.Container {
	c = c.DeepCopy()
	lim, req := corev1.ResourceList{}, corev1.ResourceList{}
	for k, q := range c.Resources.Limits {
		lim[k] = q
	}
	for k, q := range c.Resources.Requests {
		req[k] = q
	}
	lim[corev1.ResourceCPU] = *resource.NewMilliQuantity(v.CPULimit, resource.DecimalSI)
	lim[corev1.ResourceMemory] = *resource.NewQuantity(v.MemoryLimit, resource.BinarySI)
	req[corev1.ResourceCPU] = *resource.NewMilliQuantity(v.CPURequest, resource.DecimalSI)
	req[corev1.ResourceMemory] = *resource.NewQuantity(v.MemoryRequest, resource.BinarySI)
	c.Resources.Limits, c.Resources.Requests = lim, req
	return c
}

// checkMemoryDecrease is kubelet's validateMemoryResizeAction for
// containers: a memory limit added or lowered must stay above the
// container's current use.
func (s *Syncer) checkMemoryDecrease(ctx context.Context, updates []ContainerToUpdate) error {
	var lowering []ContainerToUpdate
	for _, u := range updates {
		if u.Desired.MemoryLimit != 0 && (u.Current.MemoryLimit == 0 || u.Desired.MemoryLimit < u.Current.MemoryLimit) {
			lowering = append(lowering, u)
		}
	}
	if len(lowering) == 0 {
		return nil
	}
	stats, ok := s.rt.(runtime.ContainerStatsReader)
	if !ok {
		return fmt.Errorf("cannot decrease memory limits: the runtime does not report memory usage: %w", runtime.ErrUnimplemented)
	}
	var errs []error
	for _, u := range lowering {
		st, err := stats.ContainerStats(ctx, u.ID)
		usage := st.GetMemory().GetUsageBytes()
		if err != nil {
			errs = append(errs, fmt.Errorf("missing container %q memory usage: %w", u.Name, runtime.Classify(err)))
		} else if usage == nil {
			errs = append(errs, fmt.Errorf("missing container %q memory usage", u.Name))
		} else if usage.Value >= uint64(u.Desired.MemoryLimit) {
			errs = append(errs, fmt.Errorf("attempting to set container %q memory limit (%d) below current usage (%d)", u.Name, u.Desired.MemoryLimit, usage.Value))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cannot decrease memory limits: %w", errors.Join(errs...))
	}
	return nil
}

// actuatedStore is kubelet's actuated state: the resources podsync last
// applied to each container, kept in <root>/pods/<uid>/actuated-resources
// so that a restarted agent neither resizes nor restarts for nothing.
type actuatedStore struct {
	root string // <root>/pods

	mu   sync.Mutex
	pods map[types.UID]map[string]ResourceValues
	// unrecorded: pods whose record file was absent or damaged when read,
	// with why a damaged one was ignored (nil once reported, or absent).
	unrecorded map[types.UID]error
}

// actuatedFile is the record's name; maxActuatedSize caps what is read of
// it. An entry is a container name (at most 63 bytes) and four integers,
// under 250 bytes of JSON, so 1 MiB holds thousands of containers, more
// than a pod object of the API server's 1.5 MiB limit realistically
// carries. A larger file is refused unread, as a damaged one.
const (
	actuatedFile    = "actuated-resources"
	maxActuatedSize = 1 << 20
)

func newActuatedStore(root string) *actuatedStore {
	return &actuatedStore{root: filepath.Join(root, "pods"), pods: map[types.UID]map[string]ResourceValues{}, unrecorded: map[types.UID]error{}}
}

// get returns a copy of the pod's records, read from disk on first use.
func (st *actuatedStore) get(uid types.UID) map[string]ResourceValues {
	st.mu.Lock()
	defer st.mu.Unlock()
	m := st.load(uid)
	out := make(map[string]ResourceValues, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (st *actuatedStore) load(uid types.UID) map[string]ResourceValues {
	if m, ok := st.pods[uid]; ok {
		return m
	}
	m := map[string]ResourceValues{}
	// A regular file of at most maxActuatedSize, opened without following
	// a symlink or waiting on a FIFO (statefile); one read, so no ctx.
	name := filepath.Join(st.root, string(uid), actuatedFile)
	b, err := statefile.Read(context.Background(), name, maxActuatedSize)
	if err == nil {
		if jerr := json.Unmarshal(b, &m); jerr != nil {
			err = fmt.Errorf("%s: %w", name, jerr)
		}
	}
	if err != nil {
		m = map[string]ResourceValues{}
		st.unrecorded[uid] = nil
		if !errors.Is(err, fs.ErrNotExist) {
			st.unrecorded[uid] = err
		}
	}
	st.pods[uid] = m
	return m
}

// seed gives the running containers of a pod without a record (made by a
// podstart before records, or a damaged file) the spec's values as
// applied, as kubelet's actuated state starts from what it allocated:
// otherwise every one would count as zero and be resized, or restarted
// under RestartContainer, for nothing. It reports whether it recorded any.
// A damaged record (not JSON, not a regular file, over its cap) is
// reported once in the error, and seeding goes on.
func (st *actuatedStore) seed(pod *corev1.Pod, status *PodStatus) (bool, error) {
	st.mu.Lock()
	st.load(pod.UID)
	damaged, unrecorded := st.unrecorded[pod.UID]
	if damaged != nil {
		st.unrecorded[pod.UID] = nil
		damaged = fmt.Errorf("ignored a damaged record of applied resources, running containers taken as running their spec: %w", damaged)
	}
	st.mu.Unlock()
	if !unrecorded {
		return false, nil
	}
	seeded := false
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			if cs := status.FindContainerStatusByName(c.Name); cs == nil || cs.State != ContainerStateRunning {
				continue
			}
			if err := st.set(pod.UID, c.Name, ResourceValuesOf(pod.Spec.Resources, &c.Resources)); err != nil {
				return seeded, errors.Join(damaged, err)
			}
			seeded = true
		}
	}
	return seeded, damaged
}

// set records what container name of pod uid now runs with, on disk
// (written to a temporary file and renamed, so a crash leaves the old
// record or the new one). A record that would not change is not written,
// and neither is a zero one where none exists: a missing record counts as
// zero (computeResize), so a pod without resources (BestEffort, whose QoS
// class a resize cannot change) never writes one, and a restart of an
// unchanged container costs no file.
func (st *actuatedStore) set(uid types.UID, name string, r ResourceValues) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	m := st.load(uid)
	if m[name] == r {
		return nil
	}
	m[name] = r
	delete(st.unrecorded, uid)
	b, err := json.Marshal(m)
	if err == nil {
		err = writeRecord(filepath.Join(st.root, string(uid)), actuatedFile, b, false)
	}
	if err != nil {
		return fmt.Errorf("record applied resources of container %q: %w", name, err)
	}
	return nil
}

// writeRecord writes a pod directory's record file through a temporary
// file and a rename, so a crash leaves the old content or the new; durable
// also fsyncs the file and the directory, as kubelet does for what must
// survive a power loss (user-namespace ranges).
func writeRecord(dir, name string, data []byte, durable bool) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	var serr error
	if durable {
		serr = tmp.Sync()
	}
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if !durable {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// forget drops the pod's records from memory (RemovePod removes the file
// with the pod directory).
func (st *actuatedStore) forget(uid types.UID) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.pods, uid)
	delete(st.unrecorded, uid)
}
