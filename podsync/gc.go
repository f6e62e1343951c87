package podsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/runtime"
)

// ErrPodDirInUse: a pod directory still has a file system mounted under
// it, so removing it would delete what the mount shows. Nothing is removed.
var ErrPodDirInUse = errors.New("pod directory has mounts under it")

// RuntimePod is one pod as the runtime holds it: the sandboxes and
// container instances that carry its UID label.
type RuntimePod struct {
	UID       types.UID
	Name      string
	Namespace string
	// Sandboxes and Containers, newest first.
	Sandboxes  []*runtimeapi.PodSandbox
	Containers []*runtimeapi.Container
}

// ListPods returns every pod on the runtime that carries kubelet's pod
// labels, grouped by UID and sorted by namespace, name and UID, with one
// ListPodSandbox and one ListContainers call. An agent that restarts finds
// its pods, and the orphans it no longer wants, here.
func ListPods(ctx context.Context, rt runtime.RuntimeService) ([]*RuntimePod, error) {
	sandboxes, err := rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", runtime.Classify(err))
	}
	containers, err := rt.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", runtime.Classify(err))
	}
	return groupPods(sandboxes, containers), nil
}

func groupPods(sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container) []*RuntimePod {
	pods := map[types.UID]*RuntimePod{}
	get := func(labels map[string]string) *RuntimePod {
		uid := types.UID(labels[LabelPodUID])
		if uid == "" {
			return nil
		}
		p := pods[uid]
		if p == nil {
			p = &RuntimePod{UID: uid, Name: labels[LabelPodName], Namespace: labels[LabelPodNamespace]}
			pods[uid] = p
		}
		return p
	}
	for _, sb := range sandboxes {
		if p := get(sb.Labels); p != nil {
			p.Sandboxes = append(p.Sandboxes, sb)
		}
	}
	for _, c := range containers {
		if p := get(c.Labels); p != nil {
			p.Containers = append(p.Containers, c)
		}
	}
	out := make([]*RuntimePod, 0, len(pods))
	for _, p := range pods {
		sort.SliceStable(p.Sandboxes, func(i, j int) bool { return p.Sandboxes[i].CreatedAt > p.Sandboxes[j].CreatedAt })
		sort.SliceStable(p.Containers, func(i, j int) bool { return p.Containers[i].CreatedAt > p.Containers[j].CreatedAt })
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.UID < b.UID
	})
	return out
}

// GCPolicy is kubelet's container garbage collection policy.
type GCPolicy struct {
	// MinAge: a dead instance younger than this is kept.
	MinAge time.Duration
	// MaxPerPodContainer: dead instances kept per container of a pod
	// (negative: no limit).
	MaxPerPodContainer int
	// MaxContainers: dead instances kept on the node (negative: no limit).
	MaxContainers int
}

// DefaultGCPolicy is kubelet's default: any age, one dead instance per
// container, no node-wide limit.
var DefaultGCPolicy = GCPolicy{MinAge: 0, MaxPerPodContainer: 1, MaxContainers: -1}

// GarbageCollect is kubelet's container garbage collection as one call.
// wanted says which pods the caller still runs (nil: all of them, as when
// the caller does not yet know all its pods). It removes:
//   - every pod not wanted: killed if anything still runs, then its
//     containers, sandboxes, pod directory and log directory (RemovePod),
//     including directories left on disk by pods the runtime no longer
//     knows;
//   - for wanted pods, dead container instances older than MinAge beyond
//     MaxPerPodContainer per container, oldest first, then beyond
//     MaxContainers on the node, each with its log file; an instance that
//     never started and has a newer instance is removed whatever its age;
//   - sandboxes that are not ready, hold no container and are not their
//     pod's newest.
//
// Errors are gathered; one failure does not stop the rest.
func (s *Syncer) GarbageCollect(ctx context.Context, policy GCPolicy, wanted func(types.UID) bool) error {
	var errs []error
	sandboxes, err := s.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return fmt.Errorf("list sandboxes: %w", runtime.Classify(err))
	}
	containers, err := s.rt.ListContainers(ctx, nil)
	if err != nil {
		return fmt.Errorf("list containers: %w", runtime.Classify(err))
	}
	keep := map[types.UID]bool{}
	for _, p := range groupPods(sandboxes, containers) {
		if wanted == nil || wanted(p.UID) {
			keep[p.UID] = true
			continue
		}
		if err := s.removePod(ctx, p); err != nil {
			errs = append(errs, err)
		}
	}
	if wanted != nil {
		errs = append(errs, s.removeOrphanDirs(wanted)...)
	}

	// Dead instances of wanted pods, grouped per pod and container.
	type unit struct {
		uid  types.UID
		name string
	}
	units := map[unit][]*runtimeapi.Container{}
	now := s.o.clock.Now()
	removed := map[string]bool{}
	// The newest instance of each container of each pod, for the
	// superseded instances that never started (one pass: asking, for each
	// such instance, every other one cost O(N²) on a node of N pods that
	// fail to start, issue 41).
	newest := map[unit]int64{}
	for _, c := range containers {
		u := unit{types.UID(c.Labels[LabelPodUID]), c.Labels[LabelContainerName]}
		if at, ok := newest[u]; !ok || c.CreatedAt > at {
			newest[u] = c.CreatedAt
		}
	}
	for _, c := range containers {
		uid := types.UID(c.Labels[LabelPodUID])
		if !keep[uid] || c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		u := unit{uid, c.Labels[LabelContainerName]}
		units[u] = append(units[u], c)
	}
	remove := func(c *runtimeapi.Container) {
		if err := s.removeContainer(ctx, c); err != nil {
			errs = append(errs, err)
			return
		}
		removed[c.Id] = true
	}
	for u, list := range units {
		sort.SliceStable(list, func(i, j int) bool { return list[i].CreatedAt > list[j].CreatedAt })
		// A superseded instance that never started is no history: drop it.
		var dead []*runtimeapi.Container
		for _, c := range list {
			// Listed as created means never started: a started instance is
			// running or exited.
			if c.State == runtimeapi.ContainerState_CONTAINER_CREATED && newest[u] > c.CreatedAt {
				remove(c)
				continue
			}
			if now.Sub(time.Unix(0, c.CreatedAt)) < policy.MinAge {
				continue
			}
			dead = append(dead, c)
		}
		if policy.MaxPerPodContainer >= 0 && len(dead) > policy.MaxPerPodContainer {
			for _, c := range dead[policy.MaxPerPodContainer:] {
				remove(c)
			}
			dead = dead[:policy.MaxPerPodContainer]
		}
		units[u] = dead
	}
	if policy.MaxContainers >= 0 {
		var all []*runtimeapi.Container
		for _, list := range units {
			all = append(all, list...)
		}
		if len(all) > policy.MaxContainers {
			sort.SliceStable(all, func(i, j int) bool { return all[i].CreatedAt > all[j].CreatedAt })
			for _, c := range all[policy.MaxContainers:] {
				remove(c)
			}
		}
	}

	// Sandboxes: keep the newest of each pod and every one still ready or
	// still holding a container.
	used := map[string]bool{}
	for _, c := range containers {
		if !removed[c.Id] {
			used[c.PodSandboxId] = true
		}
	}
	newestSandbox := map[types.UID]*runtimeapi.PodSandbox{}
	for _, sb := range sandboxes {
		uid := types.UID(sb.GetMetadata().GetUid())
		if n := newestSandbox[uid]; n == nil || sb.CreatedAt > n.CreatedAt {
			newestSandbox[uid] = sb
		}
	}
	for _, sb := range sandboxes {
		uid := types.UID(sb.GetMetadata().GetUid())
		if !keep[uid] || newestSandbox[uid] == sb || used[sb.Id] || sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		if err := s.removeSandbox(ctx, sb.Id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RemovePod removes everything of a pod from the node: it stops what
// still runs (with the grace periods and pre-stop hooks its containers'
// annotations hold), then removes its containers with their log files,
// its sandboxes, its pod directory (hosts file, emptyDir data,
// termination files) and its log directory. The pod directory is left,
// with ErrPodDirInUse, while anything is mounted under it. Callers that
// still have the pod's spec kill it with KillPod first.
func (s *Syncer) RemovePod(ctx context.Context, uid types.UID) error {
	sel := &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{LabelPodUID: string(uid)}}
	sandboxes, err := s.rt.ListPodSandbox(ctx, sel)
	if err != nil {
		return fmt.Errorf("list sandboxes of pod %s: %w", uid, runtime.Classify(err))
	}
	containers, err := s.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel.LabelSelector})
	if err != nil {
		return fmt.Errorf("list containers of pod %s: %w", uid, runtime.Classify(err))
	}
	p := &RuntimePod{UID: uid}
	if pods := groupPods(sandboxes, containers); len(pods) == 1 {
		p = pods[0]
	}
	return s.removePod(ctx, p)
}

func (s *Syncer) removePod(ctx context.Context, p *RuntimePod) error {
	var errs []error
	live := false
	for _, c := range p.Containers {
		live = live || c.State == runtimeapi.ContainerState_CONTAINER_RUNNING || c.State == runtimeapi.ContainerState_CONTAINER_UNKNOWN
	}
	for _, sb := range p.Sandboxes {
		live = live || sb.State == runtimeapi.PodSandboxState_SANDBOX_READY
	}
	if live {
		st := &PodStatus{UID: p.UID, Name: p.Name, Namespace: p.Namespace}
		for _, c := range p.Containers {
			if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING && c.State != runtimeapi.ContainerState_CONTAINER_UNKNOWN {
				continue
			}
			resp, err := s.rt.ContainerStatus(ctx, c.Id, false)
			if err != nil {
				if !errors.Is(runtime.Classify(err), runtime.ErrNotFound) {
					errs = append(errs, fmt.Errorf("status of container %s: %w", c.Id, runtime.Classify(err)))
				}
				continue
			}
			st.ContainerStatuses = append(st.ContainerStatuses, toContainerStatus(c, resp.Status))
		}
		for _, sb := range p.Sandboxes {
			st.SandboxStatuses = append(st.SandboxStatuses, &runtimeapi.PodSandboxStatus{Id: sb.Id, State: sb.State, Metadata: sb.Metadata, CreatedAt: sb.CreatedAt})
		}
		if err := s.KillPod(ctx, nil, st, nil).Error(); err != nil {
			return errors.Join(append(errs, fmt.Errorf("kill pod %s: %w", p.UID, err))...)
		}
	}
	for _, c := range p.Containers {
		if err := s.removeContainer(ctx, c); err != nil {
			errs = append(errs, err)
		}
	}
	for _, sb := range p.Sandboxes {
		if err := s.removeSandbox(ctx, sb.Id); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// Keep the directories while the runtime may still use them.
		return errors.Join(errs...)
	}
	return s.removePodDirs(p.UID)
}

// removeContainer is kubelet's: the instance's log file, then the
// instance.
func (s *Syncer) removeContainer(ctx context.Context, c *runtimeapi.Container) error {
	resp, err := s.rt.ContainerStatus(ctx, c.Id, false)
	if err == nil && resp.GetStatus().GetLogPath() != "" {
		if err := s.removeUnder(s.o.node.PodLogsDir, resp.Status.LogPath); err != nil {
			return err
		}
	}
	if err := runtime.Classify(s.rt.RemoveContainer(ctx, c.Id)); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		return fmt.Errorf("remove container %s (%s): %w", c.Id, c.Labels[LabelContainerName], err)
	}
	return nil
}

// removeSandbox is kubelet's: stop, then remove.
func (s *Syncer) removeSandbox(ctx context.Context, id string) error {
	if err := runtime.Classify(s.rt.StopPodSandbox(ctx, id)); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		return fmt.Errorf("stop sandbox %s: %w", id, err)
	}
	if err := runtime.Classify(s.rt.RemovePodSandbox(ctx, id)); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		return fmt.Errorf("remove sandbox %s: %w", id, err)
	}
	s.stopped.forget(id)
	return nil
}

// removeUnder removes a file only if it lies inside dir: a log path comes
// from the runtime, which is not trusted to name host files.
func (s *Syncer) removeUnder(dir, path string) error {
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove log file: %w", err)
	}
	return nil
}

// removePodDirs removes <root>/pods/<uid> and <logs>/<ns>_<name>_<uid>.
func (s *Syncer) removePodDirs(uid types.UID) error {
	var errs []error
	podDir := filepath.Join(s.o.node.RootDir, "pods", string(uid))
	if string(uid) == "" || strings.ContainsAny(string(uid), "/\\") || uid == "." || uid == ".." {
		return fmt.Errorf("pod UID %q cannot name a directory", uid)
	}
	if err := s.removeDir(podDir); err != nil {
		errs = append(errs, err)
	} else {
		// What was recorded in the directory goes with it.
		s.actuated.forget(uid)
		if u, ok := s.o.node.UserNamespaceMapper.(*UserNamespaces); ok {
			u.Release(uid)
		}
	}
	entries, err := os.ReadDir(s.o.node.PodLogsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, e := range entries {
		if e.IsDir() && podUIDFromLogDir(e.Name()) == uid {
			if err := os.RemoveAll(filepath.Join(s.o.node.PodLogsDir, e.Name())); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeOrphanDirs removes pod and log directories of pods not wanted.
func (s *Syncer) removeOrphanDirs(wanted func(types.UID) bool) []error {
	var errs []error
	seen := map[types.UID]bool{}
	podsDir := filepath.Join(s.o.node.RootDir, "pods")
	entries, _ := os.ReadDir(podsDir)
	for _, e := range entries {
		seen[types.UID(e.Name())] = true
	}
	logs, _ := os.ReadDir(s.o.node.PodLogsDir)
	for _, e := range logs {
		if uid := podUIDFromLogDir(e.Name()); uid != "" && e.IsDir() {
			seen[uid] = true
		}
	}
	for uid := range seen {
		if !wanted(uid) {
			if err := s.removePodDirs(uid); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// podUIDFromLogDir is kubelet's parsePodUIDFromLogsDirectory: the part
// after the last "_" of <namespace>_<name>_<uid>.
func podUIDFromLogDir(name string) types.UID {
	i := strings.LastIndex(name, "_")
	if i < 0 {
		return ""
	}
	return types.UID(name[i+1:])
}

// removeDir removes a pod directory: its memory-backed volumes are
// unmounted first (UnmountMemoryVolumes); anything else still mounted
// under it keeps it (ErrPodDirInUse).
func (s *Syncer) removeDir(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := UnmountMemoryVolumes(s.o.mounter, dir); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// Kubelet's plugins whose volumes are a tmpfs under <pod dir>/volumes:
// emptyDir (medium Memory) and the three that wrap a Memory emptyDir
// (Secret, downward API, projected; apiobjects).
var memoryVolumePlugins = map[string]bool{
	emptyDirPluginDir:            true,
	"kubernetes.io~secret":       true,
	"kubernetes.io~downward-api": true,
	"kubernetes.io~projected":    true,
}

// UnmountMemoryVolumes is kubelet's TearDown of a pod's memory-backed
// volumes: every tmpfs mounted at <podDir>/volumes/<plugin>/<name> of the
// emptyDir, Secret, downward API and projected plugins is unmounted
// (stacked mounts each once, deepest paths first), so a pod that crashed
// mid-setup leaves nothing mounted. Anything else mounted under podDir
// (a CSI volume, a bind mount, a file system of another type at a volume's
// path) is left, and reported with ErrPodDirInUse, as are failed
// unmounts; the caller then keeps the directory. nil means nothing is
// mounted under podDir any more.
func UnmountMemoryVolumes(m mounts.Mounter, podDir string) error {
	podDir = filepath.Clean(podDir)
	table, err := m.List()
	if err != nil {
		return fmt.Errorf("cannot tell whether %s has mounts, so it is kept: %w", podDir, err)
	}
	var errs []error
	for _, mp := range mounts.Under(table, podDir) {
		if !isMemoryVolume(podDir, mp) {
			continue
		}
		if err := m.Unmount(mp.Path); err != nil {
			errs = append(errs, fmt.Errorf("tear down volume %s: %w", mp.Path, err))
		}
	}
	if table, err = m.List(); err != nil {
		return fmt.Errorf("cannot tell whether %s has mounts, so it is kept: %w", podDir, err)
	}
	if left := mounts.Under(table, podDir); len(left) > 0 {
		// The shallowest, as before: the mount that holds the rest.
		errs = append(errs, fmt.Errorf("%w: %s is mounted", ErrPodDirInUse, left[len(left)-1].Path))
	}
	return errors.Join(errs...)
}

// isMemoryVolume says whether mp is a tmpfs at a memory-backed volume's
// own path under podDir.
func isMemoryVolume(podDir string, mp mounts.MountPoint) bool {
	if mp.FSType != mounts.FSTypeTmpfs {
		return false
	}
	rel, err := filepath.Rel(podDir, mp.Path)
	if err != nil {
		return false
	}
	parts := strings.Split(rel, "/")
	return len(parts) == 3 && parts[0] == "volumes" && memoryVolumePlugins[parts[1]] && parts[2] != "." && parts[2] != ".."
}
