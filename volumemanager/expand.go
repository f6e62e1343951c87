package volumemanager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/podstart/podstart/csi"
)

// Kubelet's event reasons of node volume expansion.
const (
	EventVolumeResizeFailed         = "VolumeResizeFailed"
	EventFileSystemResizeFailed     = "FileSystemResizeFailed"
	EventFileSystemResizeSuccessful = "FileSystemResizeSuccessful"
)

// annNodeExpansionNotRequired is kubelet's volumetypes.NodeExpansionNotRequired.
const annNodeExpansionNotRequired = "volume.kubernetes.io/node-expansion-not-required"

// ExpandRequest is NodeExpandVolume's arguments (kubelet's
// csiResizeOptions for a filesystem volume).
type ExpandRequest struct {
	Driver, VolumeHandle, SpecName string
	Capability                     Capability
	// VolumePath is the pod's publish target; StagingPath the volume's
	// staging path.
	VolumePath, StagingPath string
	NewSize                 int64 // bytes
	// Secrets: the data of the PV's nodeExpandSecretRef Secret.
	Secrets map[string]string
}

// VolumeExpander is an optional ability of a NodeVolumes: NodeExpandVolume
// (kubelet's csiPlugin.NodeExpand). Errors matching csi.ErrNotSupported
// (no EXPAND_VOLUME capability), csi.ErrVolumeInUse (FailedPrecondition)
// and csi.ErrInfeasible are treated as kubelet treats them. CSI(plugin)
// has it; without it the manager expands nothing.
type VolumeExpander interface {
	Expand(ctx context.Context, r ExpandRequest) error
}

// ClaimStatusPatcher is an optional ability of the API: a strategic merge
// patch of a PersistentVolumeClaim's status subresource, as kubelet writes
// the claim's capacity, allocatedResourceStatuses and resize conditions
// after a node expansion. Without it an expansion the node has to do fails
// naming it (ErrUnsupported).
type ClaimStatusPatcher interface {
	PatchPersistentVolumeClaimStatus(ctx context.Context, namespace, name string, patch []byte) (*corev1.PersistentVolumeClaim, error)
}

// Expand is csi's Plugin.Expand (kubelet's nodeExpandWithClient).
func (c csiVolumes) Expand(ctx context.Context, r ExpandRequest) error {
	if err := c.samePath("staging", r.StagingPath, func(l csi.Layout) (string, error) { return l.StagingPath(r.Driver, r.VolumeHandle) }); err != nil {
		return err
	}
	_, err := c.p.Expand(ctx, csi.ExpandRequest{
		Volume:     csiVolume(r.Driver, r.VolumeHandle, r.SpecName, false, false, r.Capability, nil),
		VolumePath: r.VolumePath, StagingPath: r.StagingPath, NewSize: r.NewSize, Secrets: csi.Secrets(r.Secrets),
	})
	return err
}

// needsExpansionLocked is kubelet's volumeNeedsExpansion: the PV's
// capacity (the desired size) above the size the volume was last known
// to have (the claim's status capacity when mounted, or what the last
// expansion reached), for a NodeVolumes that expands.
func (m *Manager) needsExpansionLocked(dv *desiredVolume, av *actualVolume) bool {
	if _, ok := m.node.(VolumeExpander); !ok || dv.spec.pv == nil || av.inUseExpansionError {
		return false
	}
	if av.claimSize.IsZero() || dv.size.IsZero() {
		return false
	}
	return dv.size.Cmp(av.claimSize) > 0
}

// expansion is one node expansion of a mounted PV volume for a pod.
type expansion struct {
	s                       *spec
	av                      *actualVolume
	pod                     *corev1.Pod
	pvc                     *corev1.PersistentVolumeClaim
	volumePath, stagingPath string
	oldSize, newSize        resource.Quantity
}

// expandInUse is kubelet's ExpandInUseVolume (online expansion) of a
// volume published for ref's pod: NodeExpandVolume when the claim says
// the node has to, then the claim's status; the new size is remembered so
// that it runs once per resize. A failure is a VolumeResizeFailed event.
func (m *Manager) expandInUse(ctx context.Context, ref podVolumeRef) error {
	m.mu.Lock()
	dv, av := m.desired[ref.name], m.actual[ref.name]
	if dv == nil || dv.pods[ref.uid] == nil || av == nil || av.pods[ref.uid] == nil {
		m.mu.Unlock()
		return nil
	}
	s, dp := dv.spec, *dv.pods[ref.uid]
	current, desired := av.claimSize.DeepCopy(), dv.size.DeepCopy()
	target := av.pods[ref.uid].targetPath
	m.mu.Unlock()
	if current.IsZero() || desired.IsZero() {
		return m.resizeFailed(dp.pod, s, "NodeExpandvolume.expansion failed", errors.New("current or new size of the volume is not set"))
	}
	done, size, err := m.nodeExpand(ctx, s, av, dp, target, current, desired)
	if err != nil {
		return m.resizeFailed(dp.pod, s, "NodeExpandVolume.NodeExpandVolume failed", err)
	}
	if done {
		m.mu.Lock()
		av.claimSize = size
		m.mu.Unlock()
		return nil
	}
	logr.FromContextOrDiscard(ctx).Info("Waiting for volume to be expandable on the node", "volumeName", s.name)
	return nil
}

// nodeExpand is kubelet's operationGenerator.nodeExpandVolume.
func (m *Manager) nodeExpand(ctx context.Context, s *spec, av *actualVolume, dp desiredPod, target string, oldSize, newSize resource.Quantity) (bool, resource.Quantity, error) {
	if newSize.Cmp(oldSize) <= 0 {
		return true, oldSize, nil
	}
	ref := s.pv.Spec.ClaimRef
	pvc, err := m.api.GetPersistentVolumeClaim(ctx, ref.Namespace, ref.Name)
	if err != nil || pvc == nil {
		return false, resource.Quantity{}, fmt.Errorf("mountVolume.NodeExpandVolume get PVC failed : %w", err)
	}
	if dp.readOnly {
		m.readOnlyResize(dp.pod, pvc, s)
		return true, pvc.Status.Capacity.Storage().DeepCopy(), nil
	}
	e := expansion{s: s, av: av, pod: dp.pod, pvc: pvc, volumePath: target, stagingPath: StagingPath(m.rootDir, s.driver, s.handle),
		oldSize: oldSize, newSize: newSize}
	if recoveringResizer(pvc) {
		e.newSize = pvc.Status.AllocatedResources[corev1.ResourceStorage]
		return m.expandOnPlugin(ctx, e)
	}
	logr.FromContextOrDiscard(ctx).Info("MountVolume.NodeExpandVolume running with older external resize controller", "volume", s.specName, "pod", dp.pod.Namespace+"/"+dp.pod.Name)
	done, err := m.legacyExpand(ctx, e)
	return done, newSize, err
}

// expandDuringMount is kubelet's expandVolumeDuringMount, after a PV
// volume is published: a claim whose status capacity is below the PV's
// is expanded on the node before the pod may use the volume.
func (m *Manager) expandDuringMount(ctx context.Context, s *spec, av *actualVolume, dp desiredPod, target string) error {
	if _, ok := m.node.(VolumeExpander); !ok || s.pv == nil {
		return nil
	}
	ref := s.pv.Spec.ClaimRef
	pvc, err := m.api.GetPersistentVolumeClaim(ctx, ref.Namespace, ref.Name)
	if err != nil || pvc == nil {
		return fmt.Errorf("mountVolume.NodeExpandVolume get PVC failed : %v", err)
	}
	statusCap, pvCap := pvc.Status.Capacity[corev1.ResourceStorage], s.pv.Spec.Capacity[corev1.ResourceStorage]
	if statusCap.Cmp(pvCap) >= 0 {
		return nil
	}
	if dp.readOnly {
		m.readOnlyResize(dp.pod, pvc, s)
		return nil
	}
	e := expansion{s: s, av: av, pod: dp.pod, pvc: pvc, volumePath: target, stagingPath: StagingPath(m.rootDir, s.driver, s.handle),
		oldSize: statusCap, newSize: pvCap}
	if recoveringResizer(pvc) {
		e.newSize = pvc.Status.AllocatedResources[corev1.ResourceStorage]
		_, _, err := m.expandOnPlugin(ctx, e)
		return err
	}
	_, err = m.legacyExpand(ctx, e)
	return err
}

// recoveringResizer is kubelet's checkForRecoveryFromExpansion with
// RecoverVolumeExpansionFailure (GA, locked on in v1.37): a resizer that
// fills allocatedResources or allocatedResourceStatuses.
func recoveringResizer(pvc *corev1.PersistentVolumeClaim) bool {
	return pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != "" || pvc.Status.AllocatedResources != nil
}

func (m *Manager) readOnlyResize(pod *corev1.Pod, pvc *corev1.PersistentVolumeClaim, s *spec) {
	msg := fmt.Sprintf("MountVolume.NodeExpandVolume failed for volume %q requested read-only file system", s.specName)
	m.eventOn(pod, corev1.EventTypeWarning, EventFileSystemResizeFailed, msg)
	m.eventOn(pvc, corev1.EventTypeWarning, EventFileSystemResizeFailed, msg)
}

func (m *Manager) resizeSucceeded(e expansion) {
	msg := fmt.Sprintf("MountVolume.NodeExpandVolume succeeded for volume %q %s", e.s.specName, m.nodeName)
	m.eventOn(e.pod, corev1.EventTypeNormal, EventFileSystemResizeSuccessful, msg)
	m.eventOn(e.pvc, corev1.EventTypeNormal, EventFileSystemResizeSuccessful, msg)
}

// resizeFailed is kubelet's VolumeResizeFailed event of a failed
// expansion operation: `<op> for volume "<spec name>" : <cause>`.
func (m *Manager) resizeFailed(pod *corev1.Pod, s *spec, op string, err error) error {
	err = fmt.Errorf("%s for volume %q : %w", op, s.specName, err)
	m.eventOn(pod, corev1.EventTypeWarning, EventVolumeResizeFailed, err.Error())
	return err
}

// callExpand is the CSI plugin's NodeExpand: the nodeExpandSecretRef
// Secret, then the NodeVolumes' Expand.
func (m *Manager) callExpand(ctx context.Context, e expansion) error {
	src := e.s.pv.Spec.CSI
	secrets := map[string]string{}
	if ref := src.NodeExpandSecretRef; ref != nil {
		sec, err := m.api.GetSecret(ctx, ref.Namespace, ref.Name)
		if err != nil || sec == nil {
			return fmt.Errorf("expander.NodeExpand failed to get NodeExpandSecretRef %s/%s: %v", ref.Namespace, ref.Name, err)
		}
		for k, v := range sec.Data {
			secrets[k] = string(v)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, csiTimeout)
	defer cancel()
	return m.node.(VolumeExpander).Expand(cctx, ExpandRequest{
		Driver: e.s.driver, VolumeHandle: e.s.handle, SpecName: e.s.specName, Capability: capability(e.s),
		VolumePath: e.volumePath, StagingPath: e.stagingPath, NewSize: e.newSize.Value(), Secrets: secrets,
	})
}

// expandOnPlugin is kubelet's NodeExpander.expandOnPlugin, for a resizer
// that marks the claim NodeResizePending.
func (m *Manager) expandOnPlugin(ctx context.Context, e expansion) (bool, resource.Quantity, error) {
	pvc := e.pvc
	statusCap := pvc.Status.Capacity[corev1.ResourceStorage]
	resizeStatus := pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage]
	specCap := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	m.mu.Lock()
	markInfeasible := specCap.Cmp(e.newSize) != 0 && m.finalExpansionErrors[e.s.name]
	m.mu.Unlock()
	alreadyUpdated := statusCap.Cmp(e.newSize) >= 0 && resizeStatus == ""
	var allow bool
	switch {
	case alreadyUpdated && slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) && !metav1.HasAnnotation(pvc.ObjectMeta, annNodeExpansionNotRequired):
		allow = true
	case resizeStatus == "":
	default:
		allow = resizeStatus == corev1.PersistentVolumeClaimNodeResizePending || resizeStatus == corev1.PersistentVolumeClaimNodeResizeInProgress
	}
	if !allow {
		if alreadyUpdated {
			return true, e.newSize, nil
		}
		logr.FromContextOrDiscard(ctx).V(3).Info("NodeExpandVolume is not allowed to proceed", "volume", e.s.name, "resizeStatus", resizeStatus)
		return false, e.oldSize, nil
	}
	if !alreadyUpdated {
		next := pvc.DeepCopy()
		setResizeStatus(next, corev1.PersistentVolumeClaimNodeResizeInProgress)
		updated, err := m.patchClaimStatus(ctx, pvc, next, true)
		if err != nil {
			return false, e.oldSize, err
		}
		pvc, e.pvc = updated, updated
	}
	if err := m.callExpand(ctx, e); err != nil {
		if errors.Is(err, csi.ErrNotSupported) && alreadyUpdated {
			return true, e.newSize, nil
		}
		// Every error of the plugin's is final to kubelet (neither
		// uncertain nor transient).
		m.mu.Lock()
		if m.finalExpansionErrors == nil {
			m.finalExpansionErrors = map[corev1.UniqueVolumeName]bool{}
		}
		m.finalExpansionErrors[e.s.name] = true
		m.mu.Unlock()
		next := pvc.DeepCopy()
		if errors.Is(err, csi.ErrInfeasible) || markInfeasible {
			setResizeStatus(next, corev1.PersistentVolumeClaimNodeResizeInfeasible)
		}
		mergeResizeConditions(next, []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimNodeResizeError,
			Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(m.clock.Now()), Message: fmt.Sprintf("failed to expand pvc with %v", err)}}, true)
		if _, perr := m.patchClaimStatus(ctx, pvc, next, false); perr != nil {
			logr.FromContextOrDiscard(ctx).Error(perr, "MountVolume.NodeExpandVolume failed to mark node expansion as failed", "volume", e.s.name)
		}
		if errors.Is(err, csi.ErrVolumeInUse) {
			m.mu.Lock()
			e.av.inUseExpansionError = true
			m.mu.Unlock()
			logr.FromContextOrDiscard(ctx).Error(err, "MountVolume.NodeExpandVolume failed", "volume", e.s.name)
			return false, e.oldSize, nil
		}
		return false, e.oldSize, err
	}
	m.resizeSucceeded(e)
	if alreadyUpdated {
		return true, e.newSize, nil
	}
	// kubelet's MarkNodeExpansionFinishedWithRecovery.
	next := pvc.DeepCopy()
	if next.Status.Capacity == nil {
		next.Status.Capacity = corev1.ResourceList{}
	}
	next.Status.Capacity[corev1.ResourceStorage] = e.newSize
	clearResizeStatus(next)
	mergeResizeConditions(next, nil, false)
	if _, err := m.patchClaimStatus(ctx, pvc, next, true); err != nil {
		return true, e.newSize, fmt.Errorf("mountVolume.NodeExpandVolume update pvc status failed: %w", err)
	}
	return true, e.newSize, nil
}

// legacyExpand is kubelet's legacyCallNodeExpandOnPlugin, for a resizer
// that fills neither allocatedResources nor their statuses.
func (m *Manager) legacyExpand(ctx context.Context, e expansion) (bool, error) {
	if err := m.callExpand(ctx, e); err != nil {
		switch {
		case errors.Is(err, csi.ErrNotSupported):
			return true, nil
		case errors.Is(err, csi.ErrVolumeInUse):
			m.mu.Lock()
			e.av.inUseExpansionError = true
			m.mu.Unlock()
			logr.FromContextOrDiscard(ctx).Error(err, "MountVolume.NodeExpandVolume failed", "volume", e.s.name)
			return true, nil
		}
		return false, err
	}
	m.resizeSucceeded(e)
	statusCap := e.pvc.Status.Capacity[corev1.ResourceStorage]
	if statusCap.Cmp(e.newSize) >= 0 {
		return true, nil
	}
	// kubelet's MarkFSResizeFinished.
	next := e.pvc.DeepCopy()
	if next.Status.Capacity == nil {
		next.Status.Capacity = corev1.ResourceList{}
	}
	next.Status.Capacity[corev1.ResourceStorage] = e.newSize
	clearResizeStatus(next)
	mergeResizeConditions(next, nil, false)
	if _, err := m.patchClaimStatus(ctx, e.pvc, next, true); err != nil {
		return false, fmt.Errorf("mountVolume.NodeExpandVolume update PVC status failed : %v", err)
	}
	return true, nil
}

func setResizeStatus(pvc *corev1.PersistentVolumeClaim, st corev1.ClaimResourceStatus) {
	if pvc.Status.AllocatedResourceStatuses == nil {
		pvc.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{}
	}
	pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage] = st
}

func clearResizeStatus(pvc *corev1.PersistentVolumeClaim) {
	delete(pvc.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
	if len(pvc.Status.AllocatedResourceStatuses) == 0 {
		pvc.Status.AllocatedResourceStatuses = nil
	}
}

// resizeConditionTypes are kubelet's knownResizeConditions.
var resizeConditionTypes = []corev1.PersistentVolumeClaimConditionType{
	corev1.PersistentVolumeClaimFileSystemResizePending, corev1.PersistentVolumeClaimResizing,
	corev1.PersistentVolumeClaimControllerResizeError, corev1.PersistentVolumeClaimNodeResizeError,
}

// mergeResizeConditions is kubelet's MergeResizeConditionOnPVC.
func mergeResizeConditions(pvc *corev1.PersistentVolumeClaim, conds []corev1.PersistentVolumeClaimCondition, keepOld bool) {
	processed := make([]bool, len(conds))
	out := []corev1.PersistentVolumeClaimCondition{}
	for _, old := range pvc.Status.Conditions {
		if !slices.Contains(resizeConditionTypes, old.Type) {
			out = append(out, old)
			continue
		}
		i := slices.IndexFunc(conds, func(c corev1.PersistentVolumeClaimCondition) bool { return c.Type == old.Type })
		switch {
		case i >= 0:
			if conds[i].Status != old.Status {
				out = append(out, conds[i])
			} else {
				out = append(out, old)
			}
			processed[i] = true
		case keepOld:
			out = append(out, old)
		}
	}
	for i, c := range conds {
		if !processed[i] {
			out = append(out, c)
		}
	}
	pvc.Status.Conditions = out
}

// patchClaimStatus is kubelet's PatchPVCStatus (withVersion) or its
// unconditional patch: a two-way strategic merge patch from old to next,
// on the status subresource.
func (m *Manager) patchClaimStatus(ctx context.Context, old, next *corev1.PersistentVolumeClaim, withVersion bool) (*corev1.PersistentVolumeClaim, error) {
	p, ok := m.api.(ClaimStatusPatcher)
	if !ok {
		return old, fmt.Errorf("patchPVCStatus failed to patch PVC %q: the API cannot patch a claim's status: %w", old.Name, ErrUnsupported)
	}
	patch, err := claimPatch(old, next, withVersion)
	if err != nil {
		return old, fmt.Errorf("patchPVCStatus failed to patch PVC %q: %v", old.Name, err)
	}
	updated, err := p.PatchPersistentVolumeClaimStatus(ctx, old.Namespace, old.Name, patch)
	if err != nil || updated == nil {
		return old, fmt.Errorf("patchPVCStatus failed to patch PVC %q: %v", old.Name, err)
	}
	return updated, nil
}

// claimPatch is kubelet's createPVCPatch.
func claimPatch(old, next *corev1.PersistentVolumeClaim, withVersion bool) ([]byte, error) {
	a, err := json.Marshal(old)
	if err != nil {
		return nil, fmt.Errorf("failed to marshal old data: %v", err)
	}
	b, err := json.Marshal(next)
	if err != nil {
		return nil, fmt.Errorf("failed to marshal new data: %v", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(a, b, old)
	if err != nil {
		return nil, fmt.Errorf("failed to create 2 way merge patch: %v", err)
	}
	if !withVersion || old.ResourceVersion == "" {
		return patch, nil
	}
	var p map[string]any
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, fmt.Errorf("error unmarshalling patch: %v", err)
	}
	md, _ := p["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		p["metadata"] = md
	}
	md["resourceVersion"] = old.ResourceVersion
	return json.Marshal(p)
}

// eventOn records an event on a pod or a claim.
func (m *Manager) eventOn(obj apiruntime.Object, eventtype, reason, msg string) {
	if m.recorder != nil {
		m.recorder.Eventf(obj, eventtype, reason, "%s", msg)
	}
}
