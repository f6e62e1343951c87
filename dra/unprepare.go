package dra

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/podstart/podstart/criconfig"
)

// UnprepareResources is kubelet's, called once the pod's containers have
// all stopped: the pod leaves each of its claims; a claim no other pod
// uses is sent to NodeUnprepareResources (one call per driver, bounded by
// its timeout) and, once every driver has answered, forgotten and the
// checkpoint written. It is idempotent. When the manager holds no claim
// for the pod (a checkpoint lost), the pod's spec and status name them.
// Its errors read "unprepare dynamic resources: ...".
func (m *Manager) UnprepareResources(ctx context.Context, pod *corev1.Pod) error {
	if err := validatePod(pod); err != nil {
		return err
	}
	if err := m.unprepareForPod(ctx, pod); err != nil {
		return fmt.Errorf("unprepare dynamic resources: %w", err)
	}
	return nil
}

func (m *Manager) unprepareForPod(ctx context.Context, pod *corev1.Pod) error {
	m.cache.RLock()
	names := m.cache.claimNamesForPod(pod.UID)
	m.cache.RUnlock()
	if len(names) == 0 {
		for _, pc := range podClaims(pod) {
			name, _, err := claimName(pod, &pc)
			if err != nil {
				return err
			}
			if name != nil {
				names = append(names, *name)
			}
		}
	}
	return m.unprepare(ctx, pod.UID, pod.Namespace, names)
}

// Reconcile is kubelet's reconcile loop, which kubelet runs each minute
// once its pod sources are ready: claims still listing a pod that active
// says is gone are unprepared for it (a pod deleted while the agent was
// down, a prepare that failed half-way for a pod that was then removed).
// The first error is returned after every pod was tried.
func (m *Manager) Reconcile(ctx context.Context, active func(types.UID) bool) error {
	type podClaims struct {
		namespace string
		names     []string
	}
	gone := map[types.UID]*podClaims{}
	m.cache.RLock()
	for _, ci := range m.cache.claims {
		for uid := range ci.PodUIDs {
			if active(types.UID(uid)) {
				continue
			}
			pc := gone[types.UID(uid)]
			if pc == nil {
				pc = &podClaims{namespace: ci.Namespace}
				gone[types.UID(uid)] = pc
			}
			pc.names = append(pc.names, ci.ClaimName)
		}
	}
	m.cache.RUnlock()
	var first error
	for uid, pc := range gone {
		if err := m.unprepare(ctx, uid, pc.namespace, pc.names); err != nil {
			m.log.Info("Unpreparing pod resources in reconcile loop failed, will retry", "podUID", uid, "err", err)
			if first == nil {
				first = fmt.Errorf("unprepare dynamic resources of pod %s: %w", uid, err)
			}
		}
	}
	return first
}

func (m *Manager) unprepare(ctx context.Context, podUID types.UID, namespace string, names []string) error {
	batches := map[string][]*drapb.Claim{}
	done := map[types.UID]string{}
	changed := false
	m.cache.Lock()
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		if seen[name] {
			continue // a claim named twice by the pod: once
		}
		seen[name] = true
		ci, ok := m.cache.get(name, namespace)
		if !ok || !ci.PodUIDs.Has(string(podUID)) {
			// Not cached, or PrepareResources never reached this pod:
			// nothing of it to unprepare (and another pod may use it).
			continue
		}
		changed = true
		if ci.PodUIDs.Len() > 1 {
			// Checkpointed with the unprepare's end; a restart before
			// that repeats this idempotent call.
			ci.PodUIDs.Delete(string(podUID))
			continue
		}
		done[ci.ClaimUID] = ci.ClaimName
		// New pods must not attach while the drivers unprepare.
		ci.unpreparing = true
		c := &drapb.Claim{Namespace: ci.Namespace, Uid: string(ci.ClaimUID), Name: ci.ClaimName}
		for driver := range ci.DriverState {
			batches[driver] = append(batches[driver], c)
		}
	}
	m.cache.Unlock()

	for _, driver := range sortedKeys(batches) {
		claims := batches[driver]
		p, err := m.plugins.get(driver)
		if err != nil {
			return err
		}
		resp, err := p.unprepare(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: claims})
		if err != nil {
			return &classErr{msg: fmt.Sprintf("NodeUnprepareResources: %v", err), class: ErrDriver, cause: err}
		}
		for _, uid := range sortedKeys(resp.GetClaims()) {
			req := lookupClaim(claims, uid)
			if req == nil {
				return &classErr{msg: fmt.Sprintf("NodeUnprepareResources returned result for unknown claim UID %s", sanitize(uid)), class: ErrDriver}
			}
			if e := resp.Claims[uid].GetError(); e != "" {
				return &classErr{msg: fmt.Sprintf("NodeUnprepareResources failed for ResourceClaim %s: %s", req.Name, sanitize(e)), class: ErrDriver}
			}
		}
		if unfinished := len(claims) - len(resp.GetClaims()); unfinished != 0 {
			return &classErr{msg: fmt.Sprintf("NodeUnprepareResources skipped %d ResourceClaims", unfinished), class: ErrDriver}
		}
	}

	if !changed {
		return nil // the pod was on none of them: nothing to write
	}
	m.cache.Lock()
	defer m.cache.Unlock()
	for _, name := range done {
		m.cache.delete(name, namespace)
	}
	if err := m.cache.sync(); err != nil {
		return fmt.Errorf("checkpoint ResourceClaim state: %w", err)
	}
	return nil
}

// DeviceOptions is kubelet's GetResources for DRA: the CDI device IDs of
// the claims the container lists in resources.claims (all of a claim's
// devices, or those of the named request), and of the scheduler's claim
// for the container's extended resources backed by DRA. Claims come in
// the pod's order, drivers in name order (kubelet's order varies). A
// claim the manager has not prepared is kubelet's internal error. It
// implements podsync.Devices; join it with a device manager's with
// podsync.JoinDevices(draManager, deviceManager), kubelet's order.
func (m *Manager) DeviceOptions(_ context.Context, pod *corev1.Pod, c *corev1.Container) (criconfig.DeviceOptions, error) {
	if err := validatePod(pod); err != nil {
		return criconfig.DeviceOptions{}, err
	}
	if c == nil {
		return criconfig.DeviceOptions{}, fmt.Errorf("dra: nil container")
	}
	requests := map[string][]string{}
	for _, cc := range c.Resources.Claims {
		requests[cc.Name] = append(requests[cc.Name], cc.Request)
	}
	var order []string
	byClaim := map[string][]string{}
	add := func(name string, reqs ...string) {
		if _, ok := byClaim[name]; !ok {
			order = append(order, name)
		}
		byClaim[name] = append(byClaim[name], reqs...)
	}
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		reqs, ok := requests[pc.Name]
		if !ok {
			continue
		}
		name, _, err := claimName(pod, pc)
		if err != nil {
			return criconfig.DeviceOptions{}, err
		}
		if name == nil {
			continue
		}
		add(*name, reqs...)
	}
	if st := pod.Status.ExtendedResourceClaimStatus; st != nil {
		wanted := map[string]bool{}
		for name, q := range c.Resources.Requests {
			if !q.IsZero() && isDRAExtendedResourceName(name) {
				wanted[string(name)] = true
			}
		}
		for _, rm := range st.RequestMappings {
			if rm.ContainerName == c.Name && wanted[rm.ResourceName] {
				add(st.ResourceClaimName, rm.RequestName)
			}
		}
	}
	var cdi []string
	m.cache.RLock()
	defer m.cache.RUnlock()
	for _, name := range order {
		ci, ok := m.cache.get(name, pod.Namespace)
		if !ok {
			return criconfig.DeviceOptions{}, fmt.Errorf("internal error: unable to get claim info for ResourceClaim %s in namespace %s", name, pod.Namespace)
		}
		for _, r := range byClaim[name] {
			cdi = ci.cdiDevices(r, cdi)
		}
	}
	return criconfig.DeviceOptions{CDIDevices: cdi}, nil
}
