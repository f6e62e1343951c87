package podsync

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/runtime"
)

// StatusCache builds PodStatus from the runtime as kubelet's generic PLEG
// and runtime cache do: it lists sandboxes and containers, and asks for an
// instance's details (ContainerStatus, PodSandboxStatus) only when the
// instance is new or its state changed since it last looked. A running
// instance changes only by leaving that state, so its cached details stay
// true; an instance in unknown state is asked about every time.
//
// An instance that exited with a non-zero code is asked about again on
// every read for ExitSettleTime after the cache first saw it exited,
// unless its reason is already OOMKilled: a runtime may report the exit
// before it has recorded
// why (containerd handles a container's exit and its OOM event
// separately, and until both are in says "Error" for a container its
// memory limit killed). Kubelet reads every container of a pod whose
// instances changed, so it catches the late reason; a cache that never
// re-read would keep "Error" for the pod's life. A changed answer counts
// as a change of the pod (Relist reports it). After ExitSettleTime the
// instance is not asked about again. A container that exited 0 is not
// asked again (kubelet would still catch an OOM kill of one of its
// processes that the runtime records late). It is safe for concurrent use.
//
// Returned statuses share ContainerStatus values and maps with the cache:
// read them, do not modify them.
type StatusCache struct {
	rt    runtime.RuntimeService
	clock clock.PassiveClock

	// actuated, when the cache is a Syncer's, fills ActuatedResources.
	actuated *actuatedStore

	mu         sync.Mutex
	containers map[string]cachedContainer
	sandboxes  map[string]cachedSandbox
	// ips are each pod's last IPs, kept once no sandbox is ready.
	ips map[types.UID][]string
	// ctrsOf and sbsOf are the IDs of each pod's cached instances: a
	// read of one pod looks for its vanished instances among its own, not
	// among the node's (which made starting N pods O(N²), issue 41).
	ctrsOf map[types.UID]map[string]struct{}
	sbsOf  map[types.UID]map[string]struct{}
}

// setContainer caches a container's entry; c.mu is held.
func (c *StatusCache) setContainer(id string, e cachedContainer) {
	c.containers[id] = e
	addID(c.ctrsOf, e.uid, id)
}

// setSandbox caches a sandbox's entry; c.mu is held.
func (c *StatusCache) setSandbox(id string, e cachedSandbox) {
	c.sandboxes[id] = e
	addID(c.sbsOf, e.uid, id)
}

func addID(m map[types.UID]map[string]struct{}, uid types.UID, id string) {
	set := m[uid]
	if set == nil {
		set = map[string]struct{}{}
		m[uid] = set
	}
	set[id] = struct{}{}
}

func dropID(m map[types.UID]map[string]struct{}, uid types.UID, id string) {
	if set := m[uid]; set != nil {
		delete(set, id)
		if len(set) == 0 {
			delete(m, uid)
		}
	}
}

type cachedContainer struct {
	uid    types.UID
	state  runtimeapi.ContainerState
	status *ContainerStatus
	// exitedSeen is when the cache first saw the instance exited.
	exitedSeen time.Time
}

// ExitSettleTime is how long after the StatusCache first sees an instance
// exited it keeps asking the runtime about it, for a reason (OOMKilled)
// the runtime records after the exit.
const ExitSettleTime = 10 * time.Second

// settling reports whether an exited instance's status may still change:
// it failed (a non-zero exit code) with a reason other than OOMKilled,
// less than ExitSettleTime ago.
func (e cachedContainer) settling(now time.Time) bool {
	return e.state == runtimeapi.ContainerState_CONTAINER_EXITED && e.status.ExitCode != 0 &&
		e.status.Reason != "OOMKilled" && now.Before(e.exitedSeen.Add(ExitSettleTime))
}

// sameExit reports whether two reads of an exited instance say the same.
func sameExit(a, b *ContainerStatus) bool {
	return a.Reason == b.Reason && a.Message == b.Message && a.ExitCode == b.ExitCode &&
		a.FinishedAt.Equal(b.FinishedAt) && a.State == b.State
}

type cachedSandbox struct {
	uid    types.UID
	state  runtimeapi.PodSandboxState
	status *runtimeapi.PodSandboxStatus
}

// NewStatusCache returns an empty cache over rt.
func NewStatusCache(rt runtime.RuntimeService) *StatusCache {
	return &StatusCache{rt: rt, clock: clock.RealClock{}, containers: map[string]cachedContainer{}, sandboxes: map[string]cachedSandbox{}, ips: map[types.UID][]string{},
		ctrsOf: map[types.UID]map[string]struct{}{}, sbsOf: map[types.UID]map[string]struct{}{}}
}

// PodStatus returns one pod's status: ListPodSandbox and ListContainers
// filtered by its UID, plus a status call for each changed instance.
func (c *StatusCache) PodStatus(ctx context.Context, pod *corev1.Pod) (*PodStatus, error) {
	sel := map[string]string{LabelPodUID: string(pod.UID)}
	sandboxes, err := c.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes of pod %s: %w", podName(pod), runtime.Classify(err))
	}
	containers, err := c.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %s: %w", podName(pod), runtime.Classify(err))
	}
	statuses, _, err := c.update(ctx, sandboxes, containers, pod.UID)
	if err != nil {
		return nil, err
	}
	st := statuses[pod.UID]
	if st == nil {
		return c.NoInstances(pod), nil
	}
	st.Name, st.Namespace = pod.Name, pod.Namespace
	return st, nil
}

// NoInstances is the status PodStatus returns for a pod of which the
// runtime has no sandbox and no container, for a caller that knows so from
// a relist (Relist leaves such pods out).
func (c *StatusCache) NoInstances(pod *corev1.Pod) *PodStatus {
	st := &PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	if c.actuated != nil {
		st.ActuatedResources = c.actuated.get(pod.UID)
	}
	return st
}

// Reflects reports whether the cache already holds what a runtime's
// container event says: the instance it names, in the state the event
// gives it or a later one (a container's states only move forward:
// created, running, exited), or no longer the instance it says was
// deleted. Such an event brings nothing a relist would find new; an event
// about an instance the cache does not know, or a sandbox that stopped,
// is never reflected.
func (c *StatusCache) Reflects(ev *runtimeapi.ContainerEventResponse) bool {
	id := ev.GetContainerId()
	if id == "" {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if sb, ok := c.sandboxes[id]; ok {
		switch ev.GetContainerEventType() {
		case runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT:
			return true
		case runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT:
			// NOTREADY is both before the start and after a stop.
			return sb.state == runtimeapi.PodSandboxState_SANDBOX_READY
		}
		return false
	}
	ct, ok := c.containers[id]
	switch ev.GetContainerEventType() {
	case runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT:
		return ok
	case runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT:
		return ok && (ct.state == runtimeapi.ContainerState_CONTAINER_RUNNING || ct.state == runtimeapi.ContainerState_CONTAINER_EXITED)
	case runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT:
		return ok && ct.state == runtimeapi.ContainerState_CONTAINER_EXITED
	case runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT:
		return !ok
	}
	return false
}

// Relist is one generic PLEG relist for the whole node: one
// ListPodSandbox, one ListContainers, and a status call only for
// instances that are new or changed. It returns every pod that carries
// kubelet's labels, by UID, and the UIDs of the pods that changed since
// the last relist (new pods, new or changed instances, instances gone).
func (c *StatusCache) Relist(ctx context.Context) (map[types.UID]*PodStatus, []types.UID, error) {
	sandboxes, err := c.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("list sandboxes: %w", runtime.Classify(err))
	}
	containers, err := c.rt.ListContainers(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("list containers: %w", runtime.Classify(err))
	}
	return c.update(ctx, sandboxes, containers, "")
}

// update refreshes the cache from listed instances; only is the pod the
// lists covered ("": every pod), so entries of those pods that were not
// listed are gone.
func (c *StatusCache) update(ctx context.Context, sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container, only types.UID) (map[types.UID]*PodStatus, []types.UID, error) {
	changed := map[types.UID]bool{}
	pods := map[types.UID]*PodStatus{}
	pod := func(labels map[string]string) *PodStatus {
		uid := types.UID(labels[LabelPodUID])
		if uid == "" {
			return nil
		}
		p := pods[uid]
		if p == nil {
			p = &PodStatus{UID: uid, Name: labels[LabelPodName], Namespace: labels[LabelPodNamespace]}
			pods[uid] = p
		}
		return p
	}
	seen := map[string]bool{}
	for _, sb := range sandboxes {
		p := pod(sb.Labels)
		if p == nil {
			continue
		}
		seen[sb.Id] = true
		c.mu.Lock()
		e, ok := c.sandboxes[sb.Id]
		c.mu.Unlock()
		if !ok || e.state != sb.State {
			resp, err := c.rt.PodSandboxStatus(ctx, sb.Id, false)
			if errors.Is(runtime.Classify(err), runtime.ErrNotFound) {
				continue // removed meanwhile
			}
			if err != nil {
				return nil, nil, fmt.Errorf("status of sandbox %s: %w", sb.Id, runtime.Classify(err))
			}
			if resp.GetStatus() == nil {
				return nil, nil, fmt.Errorf("status of sandbox %s: runtime returned none", sb.Id)
			}
			e = cachedSandbox{uid: p.UID, state: resp.Status.State, status: resp.Status}
			c.mu.Lock()
			c.setSandbox(sb.Id, e)
			c.mu.Unlock()
			changed[p.UID] = true
		}
		p.SandboxStatuses = append(p.SandboxStatuses, e.status)
	}
	for _, ct := range containers {
		p := pod(ct.Labels)
		if p == nil {
			continue
		}
		seen[ct.Id] = true
		c.mu.Lock()
		e, ok := c.containers[ct.Id]
		c.mu.Unlock()
		now := c.clock.Now()
		reread := ok && e.state == ct.State && e.settling(now)
		if !ok || e.state != ct.State || ct.State == runtimeapi.ContainerState_CONTAINER_UNKNOWN || reread {
			resp, err := c.rt.ContainerStatus(ctx, ct.Id, false)
			if errors.Is(runtime.Classify(err), runtime.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, nil, fmt.Errorf("status of container %s: %w", ct.Id, runtime.Classify(err))
			}
			if resp.GetStatus() == nil {
				return nil, nil, fmt.Errorf("status of container %s: runtime returned none", ct.Id)
			}
			// The listed state is the key: a later status may already say
			// more, and the next list will say so too.
			fresh := cachedContainer{uid: p.UID, state: ct.State, status: toContainerStatus(ct, resp.Status)}
			if ct.State == runtimeapi.ContainerState_CONTAINER_EXITED {
				fresh.exitedSeen = now
				if reread {
					fresh.exitedSeen = e.exitedSeen
				}
			}
			if !reread || !sameExit(e.status, fresh.status) {
				changed[p.UID] = true
			} else {
				fresh.status = e.status // unchanged: keep the value callers hold
			}
			e = fresh
			c.mu.Lock()
			c.setContainer(ct.Id, e)
			c.mu.Unlock()
		}
		p.ContainerStatuses = append(p.ContainerStatuses, e.status)
	}
	c.mu.Lock()
	ctrs, sbs := c.containers, c.sandboxes
	if only != "" {
		ctrs, sbs = nil, nil
		for id := range c.ctrsOf[only] {
			if e, ok := c.containers[id]; ok {
				if ctrs == nil {
					ctrs = map[string]cachedContainer{}
				}
				ctrs[id] = e
			}
		}
		for id := range c.sbsOf[only] {
			if e, ok := c.sandboxes[id]; ok {
				if sbs == nil {
					sbs = map[string]cachedSandbox{}
				}
				sbs[id] = e
			}
		}
	}
	for id, e := range ctrs {
		if !seen[id] {
			delete(c.containers, id)
			dropID(c.ctrsOf, e.uid, id)
			changed[e.uid] = true
		}
	}
	for id, e := range sbs {
		if !seen[id] {
			delete(c.sandboxes, id)
			dropID(c.sbsOf, e.uid, id)
			changed[e.uid] = true
		}
	}
	if only != "" {
		if pods[only] == nil {
			delete(c.ips, only) // nothing of the pod is left
		}
	} else {
		for uid := range c.ips {
			if pods[uid] == nil {
				delete(c.ips, uid)
			}
		}
	}
	c.mu.Unlock()
	for _, p := range pods {
		finish(p)
		c.keepIPs(p)
		if c.actuated != nil {
			p.ActuatedResources = c.actuated.get(p.UID)
		}
	}
	uids := make([]types.UID, 0, len(changed))
	for uid := range changed {
		uids = append(uids, uid)
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	return pods, uids, nil
}

// finish orders instances newest first and takes the pod IPs from the
// newest sandbox when it is ready, as kubelet's GetPodStatus does.
func finish(st *PodStatus) {
	sort.SliceStable(st.SandboxStatuses, func(i, j int) bool {
		return st.SandboxStatuses[i].CreatedAt > st.SandboxStatuses[j].CreatedAt
	})
	sort.SliceStable(st.ContainerStatuses, func(i, j int) bool {
		return st.ContainerStatuses[i].CreatedAt.After(st.ContainerStatuses[j].CreatedAt)
	})
	st.IPs = nil
	if len(st.SandboxStatuses) > 0 {
		if sb := st.SandboxStatuses[0]; sb.State == runtimeapi.PodSandboxState_SANDBOX_READY && sb.GetNetwork().GetIp() != "" {
			st.IPs = append([]string{sb.Network.Ip}, ipsOf(sb.Network.AdditionalIps)...)
		}
	}
}

// keepIPs is kubelet's generic PLEG getPodIPs: a pod none of whose
// sandboxes is ready keeps the IPs it last had, so that an exited or
// killed pod's API status still shows them (kubelet keeps them for the
// API server after the network is torn down).
func (c *StatusCache) keepIPs(p *PodStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(p.IPs) > 0 {
		c.ips[p.UID] = p.IPs
		return
	}
	for _, sb := range p.SandboxStatuses {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			return
		}
	}
	p.IPs = append([]string(nil), c.ips[p.UID]...)
	if len(p.IPs) == 0 {
		p.IPs = nil
	}
}

// forget drops what the cache knows of a container, so that the next read
// asks the runtime again (after its resources changed in place).
func (c *StatusCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.containers[id]; ok {
		delete(c.containers, id)
		dropID(c.ctrsOf, e.uid, id)
	}
}
