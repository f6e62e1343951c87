package volumemanager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/mounts"
)

// Reconcile runs one reconciler pass (kubelet's reconcile): when the
// sources are ready, unpublish what no pod wants; then, for each desired
// pod volume not yet published, wait for its VolumeAttachment, stage the
// volume once and publish it for the pod; when the sources are ready,
// unstage the volumes no pod uses. The first pass reconstructs the actual
// state from the disk (Reconstruct). A failed operation is retried after
// kubelet's exponential back-off (500 ms doubling to 2m2s), on the
// Manager's clock. The error joins the operations that failed in this
// pass; they are also FailedMount events and pod errors where kubelet has
// them.
func (m *Manager) Reconcile(ctx context.Context) error {
	m.passMu.Lock()
	defer m.passMu.Unlock()
	m.mu.Lock()
	first := !m.reconstructed
	m.reconstructed = true
	m.mu.Unlock()
	var errs []error
	if first {
		errs = append(errs, m.reconstruct(ctx))
		m.mu.Lock()
		m.synced = true
		m.mu.Unlock()
	}
	m.mu.Lock()
	ready := m.sourcesReady
	m.mu.Unlock()
	if ready {
		errs = append(errs, m.unpublishUnwanted(ctx)...)
	}
	errs = append(errs, m.mountWanted(ctx)...)
	if ready {
		errs = append(errs, m.unstageUnused(ctx)...)
	}
	m.mu.Lock()
	m.broadcastLocked()
	m.mu.Unlock()
	return errors.Join(errs...)
}

// podVolumeRef names one pod's use of one volume.
type podVolumeRef struct {
	name corev1.UniqueVolumeName
	uid  types.UID
}

func sortRefs(refs []podVolumeRef) {
	slices.SortFunc(refs, func(a, b podVolumeRef) int {
		if a.name != b.name {
			if a.name < b.name {
				return -1
			}
			return 1
		}
		if a.uid < b.uid {
			return -1
		} else if a.uid > b.uid {
			return 1
		}
		return 0
	})
}

// inBackoff says whether the operation key failed recently.
func (m *Manager) inBackoff(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.backoff[key]
	return ok && m.clock.Now().Before(r.next)
}

// result records an operation's outcome for its back-off.
func (m *Manager) result(key string, err error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil {
		delete(m.backoff, key)
		return nil
	}
	r := m.backoff[key]
	switch {
	case r.delay == 0:
		r.delay = initialRetryDelay
	case r.delay*2 > maxRetryDelay:
		r.delay = maxRetryDelay
	default:
		r.delay *= 2
	}
	r.next = m.clock.Now().Add(r.delay)
	m.backoff[key] = r
	return err
}

func (m *Manager) unpublishUnwanted(ctx context.Context) []error {
	m.mu.Lock()
	var refs []podVolumeRef
	for name, av := range m.actual {
		for uid := range av.pods {
			if dv := m.desired[name]; dv == nil || dv.pods[uid] == nil {
				refs = append(refs, podVolumeRef{name, uid})
			}
		}
	}
	m.mu.Unlock()
	sortRefs(refs)
	var errs []error
	for _, ref := range refs {
		key := "unpublish/" + string(ref.name) + "/" + string(ref.uid)
		if m.inBackoff(key) {
			continue
		}
		if err := m.result(key, m.unpublish(ctx, ref)); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// unpublish is kubelet's UnmountVolume: the NodeVolumes' Unpublish (the
// CSI plugin's TearDownAt: NodeUnpublishVolume, then the target, its
// vol_data.json and the volume directory removed unless still mounted);
// the pod volume leaves the actual state only once its target is no
// longer a mount point.
func (m *Manager) unpublish(ctx context.Context, ref podVolumeRef) error {
	m.mu.Lock()
	av := m.actual[ref.name]
	var ap actualPod
	if av != nil && av.pods[ref.uid] != nil {
		ap = *av.pods[ref.uid]
	}
	driver, handle, block := "", "", false
	if av != nil {
		driver, handle, block = av.driver, av.handle, av.block
	}
	m.mu.Unlock()
	if ap.targetPath == "" {
		return nil
	}
	if block {
		if err := m.unmapBlock(ctx, ref, driver, handle, ap); err != nil {
			logr.FromContextOrDiscard(ctx).Error(err, "UnmapVolume failed")
			return err
		}
		m.mu.Lock()
		if av := m.actual[ref.name]; av != nil {
			delete(av.pods, ref.uid)
		}
		m.mu.Unlock()
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, csiTimeout)
	err := m.node.Unpublish(cctx, UnpublishRequest{Driver: driver, VolumeHandle: handle, TargetPath: ap.targetPath, PodUID: ref.uid, SpecName: ap.specName})
	cancel()
	if err != nil {
		err = fmt.Errorf("UnmountVolume.TearDown failed for volume %q (UniqueName: %q) pod %q: %w", ap.specName, ref.name, ref.uid, err)
		logr.FromContextOrDiscard(ctx).Error(err, "Unpublish failed")
		return err
	}
	if err := m.checkUnmounted(ap.targetPath); err != nil {
		return fmt.Errorf("UnmountVolume.TearDown failed for volume %q (UniqueName: %q) pod %q: %w", ap.specName, ref.name, ref.uid, err)
	}
	m.mu.Lock()
	if av := m.actual[ref.name]; av != nil {
		delete(av.pods, ref.uid)
	}
	m.mu.Unlock()
	logr.FromContextOrDiscard(ctx).V(2).Info("UnmountVolume.TearDown succeeded", "volume", ap.specName, "uniqueName", ref.name, "podUID", ref.uid)
	return nil
}

// checkUnmounted fails while dir is still a mount point: the NodeVolumes
// leaves a directory that is still mounted (as kubelet's CSI plugin), and
// the manager then keeps the volume in its actual state and retries
// rather than forget a mount.
func (m *Manager) checkUnmounted(dir string) error {
	_, isMnt, err := m.mounter.MountPoint(dir)
	if err != nil {
		return err
	}
	if isMnt {
		return fmt.Errorf("%s is still a mount point", dir)
	}
	return nil
}

func (m *Manager) mountWanted(ctx context.Context) []error {
	m.mu.Lock()
	var refs, expand []podVolumeRef
	for name, dv := range m.desired {
		av := m.actual[name]
		var mounted []types.UID
		for uid := range dv.pods {
			if av == nil || !av.mountedFor(uid) {
				refs = append(refs, podVolumeRef{name, uid})
			} else {
				mounted = append(mounted, uid)
			}
		}
		if len(mounted) > 0 && m.needsExpansionLocked(dv, av) {
			// kubelet's FsResizeRequired for a pod with the volume
			// mounted: one expansion per volume.
			expand = append(expand, podVolumeRef{name, slices.Min(mounted)})
		}
	}
	m.mu.Unlock()
	sortRefs(refs)
	sortRefs(expand)
	var errs []error
	for _, ref := range refs {
		key := "mount/" + string(ref.name) + "/" + string(ref.uid)
		if m.inBackoff(key) {
			continue
		}
		if err := m.result(key, m.mount(ctx, ref)); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ref := range expand {
		key := "expand/" + string(ref.name)
		if m.inBackoff(key) {
			continue
		}
		if err := m.result(key, m.expandInUse(ctx, ref)); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// errNotAttached: waiting for the attach/detach controller (no event, no
// back-off beyond kubelet's).
var errNotAttached = errors.New("not attached yet")

// attachedInNodeStatus is kubelet's check of node.status.volumesAttached
// before it mounts an attachable volume, with an API that is a
// NodeGetter (without one, the VolumeAttachment alone says attached): not
// listed yet is errNotAttached (kubelet's "volume ... is not yet in
// node's status", no event); a failed read is kubelet's error, retried
// after the back-off.
func (m *Manager) attachedInNodeStatus(ctx context.Context, s *spec) error {
	ng, ok := m.api.(NodeGetter)
	if !ok {
		return nil
	}
	node, err := ng.GetNode(ctx, m.nodeName)
	if err != nil || node == nil {
		return fmt.Errorf("VerifyControllerAttachedVolume failed fetching node from API server for volume %q : %v", s.specName, err)
	}
	for _, v := range node.Status.VolumesAttached {
		if v.Name == s.name {
			return nil
		}
	}
	return errNotAttached
}

// mount is kubelet's VerifyControllerAttachedVolume and MountVolume for
// one pod volume: the attachment, the stage (once per volume) and the
// publish.
func (m *Manager) mount(ctx context.Context, ref podVolumeRef) error {
	m.mu.Lock()
	dv := m.desired[ref.name]
	if dv == nil || dv.pods[ref.uid] == nil {
		m.mu.Unlock()
		return nil
	}
	s, dp, inUse := dv.spec, *dv.pods[ref.uid], dv.reportedInUse
	av := m.actual[ref.name]
	if av == nil {
		av = &actualVolume{name: s.name, driver: s.driver, handle: s.handle, inline: s.inline != nil, block: s.block, attachable: s.attachable, pods: map[types.UID]*actualPod{}}
		m.actual[ref.name] = av
	}
	av.attachable = s.attachable
	if s.pv != nil && av.claimSize.IsZero() {
		// kubelet's InitializeClaimSize when the attachment is verified.
		av.claimSize = s.claimCapacity.DeepCopy()
	}
	attached, device := av.attached, av.device
	// A volume reconstructed after a restart counts as attached (as
	// kubelet's); its publish context is read again from the
	// VolumeAttachment, as the CSI plugin reads it at each MountDevice.
	refetch := attached && s.attachable && av.publishContext == nil
	m.mu.Unlock()

	if !attached || refetch {
		if s.attachable && !refetch {
			// kubelet's VerifyControllerAttachedVolume: the volume in
			// node.status.volumesAttached (the attach/detach
			// controller's word), and in volumesInUse; then the
			// VolumeAttachment (the CSI attacher's WaitForAttach).
			if err := m.attachedInNodeStatus(ctx, s); errors.Is(err, errNotAttached) {
				return nil
			} else if err != nil {
				return err
			}
			if !inUse {
				return nil // kubelet: "volume not marked in-use"
			}
		}
		publishContext, err := m.attachment(ctx, s)
		if errors.Is(err, errNotAttached) {
			return nil
		}
		if err != nil {
			m.event(dp.pod, "%s", fmt.Sprintf("MountVolume.WaitForAttach failed for volume %q : %v", s.specName, err))
			return err
		}
		m.mu.Lock()
		av.attached, av.publishContext = true, publishContext
		m.mu.Unlock()
	}
	drv, err := m.csiDriver(ctx, s.driver)
	if err != nil {
		return m.failed(dp.pod, s, "MountVolume.SetUp failed", err)
	}
	cctx, cancel := context.WithTimeout(ctx, csiTimeout)
	defer cancel()
	caps, err := m.node.Capabilities(cctx, s.driver)
	if err != nil {
		return m.failed(dp.pod, s, "MountVolume.MountDevice failed", err)
	}
	if s.block {
		return m.mapBlock(cctx, s, av, ref.uid, dp, drv, caps, device)
	}
	fsGroup := podFSGroup(dp.pod)
	stagingPath := "" // what Publish gets: only from a driver that stages
	if s.inline == nil {
		if device != deviceStaged {
			if err := m.stage(cctx, s, av, StagingPath(m.rootDir, s.driver, s.handle), drv, caps, fsGroup); err != nil {
				return m.failed(dp.pod, s, "MountVolume.MountDevice failed", err)
			}
		}
		if caps.StageUnstage || caps.Plugin {
			stagingPath = StagingPath(m.rootDir, s.driver, s.handle)
		}
	}
	if err := m.publish(cctx, s, av, ref.uid, dp, drv, stagingPath, caps, fsGroup); err != nil {
		return m.failed(dp.pod, s, "MountVolume.SetUp failed", err)
	}
	if err := m.expandDuringMount(ctx, s, av, dp, TargetPath(m.rootDir, ref.uid, s.specName)); err != nil {
		// Published, but not for the pod's use: maybe published, so
		// unpublished when abandoned and published again when wanted.
		m.mu.Lock()
		if ap := av.pods[ref.uid]; ap != nil {
			ap.uncertain = true
		}
		m.mu.Unlock()
		return m.failed(dp.pod, s, "MountVolume.Setup failed while expanding volume", err)
	}
	logr.FromContextOrDiscard(ctx).V(2).Info("MountVolume.SetUp succeeded", "volume", s.specName, "uniqueName", s.name, "pod", dp.pod.Namespace+"/"+dp.pod.Name)
	return nil
}

// failed is kubelet's volumeToMount.GenerateError and its FailedMount
// event: `<op> for volume "<spec name>" : <cause>`.
func (m *Manager) failed(pod *corev1.Pod, s *spec, op string, err error) error {
	err = fmt.Errorf("%s for volume %q : %w", op, s.specName, err)
	m.event(pod, "%s", err.Error())
	return err
}

// attachment is the CSI attacher's WaitForAttach: the VolumeAttachment
// csi-<sha256(handle+driver+node)> must say attached; its
// attachmentMetadata is the publish context. A volume that needs no
// attaching has an empty one.
func (m *Manager) attachment(ctx context.Context, s *spec) (map[string]string, error) {
	if !s.attachable {
		return nil, nil
	}
	name := AttachmentName(s.handle, s.driver, m.nodeName)
	va, err := m.api.GetVolumeAttachment(ctx, name)
	if apierrors.IsNotFound(err) {
		return nil, errNotAttached
	}
	if err != nil {
		return nil, fmt.Errorf("volume %v has GET error for volume attachment %v: %v", s.handle, name, err)
	}
	switch {
	case va == nil:
		return nil, errNotAttached
	case va.DeletionTimestamp != nil:
		return nil, errors.New("volume attachment is being deleted")
	case va.Status.Attached:
		pc := maps.Clone(va.Status.AttachmentMetadata)
		if pc == nil {
			pc = map[string]string{}
		}
		return pc, nil
	case va.Status.AttachError != nil:
		// kubelet's verifyAttachmentStatus.
		return nil, errors.New(va.Status.AttachError.Message)
	}
	return nil, errNotAttached
}

// stage is the CSI attacher's MountDevice, for drivers that stage: the
// NodeVolumes makes the staging directory and its vol_data.json.
func (m *Manager) stage(ctx context.Context, s *spec, av *actualVolume, stagingPath string, drv *storagev1.CSIDriver, caps NodeCapabilities, fsGroup *int64) error {
	src := s.pv.Spec.CSI
	secrets := map[string]string{}
	if src.NodeStageSecretRef != nil && (caps.StageUnstage || caps.Plugin) {
		var err error
		if secrets, err = m.secret(ctx, src.NodeStageSecretRef.Namespace, src.NodeStageSecretRef.Name, "NodeStageSecretRef"); err != nil {
			return err
		}
	}
	if !caps.StageUnstage && !caps.Plugin {
		// kubelet: "STAGE_UNSTAGE_VOLUME capability not set. Skipping
		// MountDevice..." and the device counts as mounted.
		m.mu.Lock()
		av.device, av.stagingPath = deviceStaged, stagingPath
		m.mu.Unlock()
		return nil
	}
	req := StageRequest{
		Driver: s.driver, VolumeHandle: s.handle, SpecName: s.specName, StagingPath: stagingPath, CSIDriver: drv,
		PublishContext: maps.Clone(av.publishContext), Capability: capability(s),
		VolumeContext: maps.Clone(src.VolumeAttributes), Secrets: secrets, Block: s.block,
	}
	if caps.VolumeMountGroup || caps.Plugin {
		req.FSGroup = fsGroup
	}
	m.mu.Lock()
	av.stagingPath = stagingPath
	m.mu.Unlock()
	if err := m.node.Stage(ctx, req); err != nil {
		m.mu.Lock()
		av.device = deviceUncertain // maybe staged: unstaged if abandoned
		m.mu.Unlock()
		return err
	}
	m.mu.Lock()
	av.device = deviceStaged
	m.mu.Unlock()
	return nil
}

// publish is the CSI mounter's SetUpAt.
func (m *Manager) publish(ctx context.Context, s *spec, av *actualVolume, uid types.UID, dp desiredPod, drv *storagev1.CSIDriver, stagingPath string, caps NodeCapabilities, fsGroup *int64) error {
	if err := lifecycleModeError(drv, s.driver, s.inline != nil); err != nil && !s.block {
		return fmt.Errorf("%s: mounter.SetupAt failed to check volume lifecycle mode: %v", PluginName, err)
	}
	policy := storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
	if drv != nil && !s.block { // kubelet's block mapper reads no fsGroupPolicy
		if drv.Spec.FSGroupPolicy == nil || *drv.Spec.FSGroupPolicy == "" {
			return fmt.Errorf("%s: mounter.SetupAt failed to check fsGroup policy: %s: expected valid fsGroupPolicy, received nil value or empty string", PluginName, PluginName)
		}
		policy = *drv.Spec.FSGroupPolicy
	}
	pod := dp.pod
	req := PublishRequest{
		Driver: s.driver, VolumeHandle: s.handle, StagingPath: stagingPath,
		TargetPath: TargetPath(m.rootDir, uid, s.specName), ReadOnly: dp.readOnly,
		Capability: capability(s), Ephemeral: s.inline != nil,
		SpecName: s.specName, Pod: pod, CSIDriver: drv, Block: s.block,
	}
	if s.block {
		req.TargetPath = BlockPublishPath(m.rootDir, uid, s.specName)
	}
	var secretNS, secretName string
	if s.inline != nil {
		req.VolumeContext = maps.Clone(s.inline.VolumeAttributes)
		if ref := s.inline.NodePublishSecretRef; ref != nil {
			secretNS, secretName = pod.Namespace, ref.Name
		}
	} else {
		src := s.pv.Spec.CSI
		req.VolumeContext = maps.Clone(src.VolumeAttributes)
		m.mu.Lock()
		req.PublishContext = maps.Clone(av.publishContext)
		m.mu.Unlock()
		if ref := src.NodePublishSecretRef; ref != nil {
			secretNS, secretName = ref.Namespace, ref.Name
		}
	}
	req.Secrets = map[string]string{}
	if secretName != "" {
		var err error
		if req.Secrets, err = m.secret(ctx, secretNS, secretName, "NodePublishSecretRef"); err != nil {
			return err
		}
	}
	if drv != nil && drv.Spec.PodInfoOnMount != nil && *drv.Spec.PodInfoOnMount {
		if req.VolumeContext == nil {
			req.VolumeContext = map[string]string{}
		}
		maps.Copy(req.VolumeContext, map[string]string{
			"csi.storage.k8s.io/pod.name":            pod.Name,
			"csi.storage.k8s.io/pod.namespace":       pod.Namespace,
			"csi.storage.k8s.io/pod.uid":             string(pod.UID),
			"csi.storage.k8s.io/serviceAccount.name": pod.Spec.ServiceAccountName,
			"csi.storage.k8s.io/ephemeral":           strconv.FormatBool(s.inline != nil),
		})
	}
	if caps.VolumeMountGroup || caps.Plugin {
		req.FSGroup = fsGroup
	}
	m.mu.Lock()
	ap := av.pods[uid]
	if ap == nil {
		// Maybe published from here on: unpublished if abandoned.
		ap = &actualPod{specName: s.specName, targetPath: req.TargetPath, uncertain: true}
		av.pods[uid] = ap
	}
	m.mu.Unlock()
	if err := m.node.Publish(ctx, req); err != nil {
		m.mu.Lock()
		ap.uncertain = true
		m.mu.Unlock()
		return err
	}
	if !s.block && !caps.VolumeMountGroup && !caps.Plugin && supportsFSGroup(s, dp.readOnly, fsGroup, policy) && !skipOwnership(pod, req.TargetPath, *fsGroup) {
		if err := mounts.SetVolumeOwnership(req.TargetPath, *fsGroup, false); err != nil {
			m.mu.Lock()
			ap.uncertain = true
			m.mu.Unlock()
			return fmt.Errorf("applyFSGroup failed for vol %s: %v", s.handle, err)
		}
	}
	m.mu.Lock()
	ap.uncertain = false
	m.mu.Unlock()
	return nil
}

// supportsFSGroup is the CSI mounter's rule for applying the fsGroup
// itself.
func supportsFSGroup(s *spec, readOnly bool, fsGroup *int64, policy storagev1.FSGroupPolicy) bool {
	if fsGroup == nil || policy == storagev1.NoneFSGroupPolicy || readOnly {
		return false
	}
	if policy == storagev1.FileFSGroupPolicy {
		return true
	}
	c := capability(s)
	if c.FSType == "" {
		return false
	}
	if s.pv != nil {
		return slices.ContainsFunc(s.pv.Spec.AccessModes, func(m corev1.PersistentVolumeAccessMode) bool {
			return m == corev1.ReadWriteOnce || m == corev1.ReadWriteOncePod
		})
	}
	return true
}

// skipOwnership is kubelet's skipPermissionChange for fsGroupChangePolicy
// OnRootMismatch: the volume's root already has the group, setgid and
// group read-write.
func skipOwnership(pod *corev1.Pod, dir string, fsGroup int64) bool {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.FSGroupChangePolicy == nil || *sc.FSGroupChangePolicy != corev1.FSGroupChangeOnRootMismatch {
		return false
	}
	info, err := os.Stat(dir)
	if err != nil {
		return false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || int64(st.Gid) != fsGroup {
		return false
	}
	return info.Mode()&os.ModeSetgid != 0 && info.Mode().Perm()&0o660 == 0o660
}

func capability(s *spec) Capability {
	c := Capability{AccessMode: corev1.ReadWriteOnce}
	if s.inline != nil {
		if s.inline.FSType != nil {
			c.FSType = *s.inline.FSType
		}
		return c
	}
	if len(s.pv.Spec.AccessModes) > 0 {
		c.AccessMode = s.pv.Spec.AccessModes[0]
	}
	if s.block {
		return c // kubelet's block mapper: fsType "block", no mount options
	}
	c.FSType = s.pv.Spec.CSI.FSType
	c.MountFlags = slices.Clone(s.pv.Spec.MountOptions)
	return c
}

func podFSGroup(pod *corev1.Pod) *int64 {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup
	}
	return nil
}

// secret fetches a stage or publish secret; its content never reaches an
// error.
func (m *Manager) secret(ctx context.Context, namespace, name, what string) (map[string]string, error) {
	sec, err := m.api.GetSecret(ctx, namespace, name)
	if err != nil || sec == nil {
		return nil, fmt.Errorf("fetching %s %s/%s failed: %s: failed to find the secret %s in the namespace %s with error: %v", what, namespace, name, PluginName, name, namespace, err)
	}
	out := make(map[string]string, len(sec.Data))
	for k, v := range sec.Data {
		out[k] = string(v)
	}
	return out, nil
}

func (m *Manager) unstageUnused(ctx context.Context) []error {
	m.mu.Lock()
	var names []corev1.UniqueVolumeName
	for name, av := range m.actual {
		if len(av.pods) == 0 && m.desired[name] == nil {
			names = append(names, name)
		}
	}
	m.mu.Unlock()
	slices.Sort(names)
	var errs []error
	for _, name := range names {
		key := "unstage/" + string(name)
		if m.inBackoff(key) {
			continue
		}
		if err := m.result(key, m.unstage(ctx, name)); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// unstage is kubelet's UnmountDevice (the NodeVolumes' Unstage, the CSI
// attacher's UnmountDevice: NodeUnstageVolume, then the staging directory
// and its vol_data.json removed unless still mounted), for drivers that
// stage; the volume then leaves the actual state once its staging path is
// no longer a mount point (with the attach/detach controller, kubelet
// marks it detached).
func (m *Manager) unstage(ctx context.Context, name corev1.UniqueVolumeName) error {
	m.mu.Lock()
	av := m.actual[name]
	if av == nil || len(av.pods) > 0 || m.desired[name] != nil {
		m.mu.Unlock()
		return nil
	}
	driver, handle, device, stagingPath, inline, block := av.driver, av.handle, av.device, av.stagingPath, av.inline, av.block
	m.mu.Unlock()
	if block {
		if device != deviceNone && stagingPath != "" {
			if err := m.unmapDevice(ctx, name, driver, handle, filepath.Base(stagingPath)); err != nil {
				return err
			}
		}
	} else if !inline && device != deviceNone && stagingPath != "" {
		cctx, cancel := context.WithTimeout(ctx, csiTimeout)
		defer cancel()
		caps, err := m.node.Capabilities(cctx, driver)
		if err != nil {
			return fmt.Errorf("UnmountDevice failed for volume %q: %w", name, err)
		}
		if caps.StageUnstage || caps.Plugin {
			if err := m.node.Unstage(cctx, UnstageRequest{Driver: driver, VolumeHandle: handle, StagingPath: stagingPath}); err != nil {
				return fmt.Errorf("UnmountDevice failed for volume %q: %w", name, err)
			}
			if err := m.checkUnmounted(stagingPath); err != nil {
				return fmt.Errorf("UnmountDevice failed for volume %q: %w", name, err)
			}
		}
	}
	m.mu.Lock()
	if av := m.actual[name]; av != nil && len(av.pods) == 0 && m.desired[name] == nil {
		delete(m.actual, name)
	}
	m.mu.Unlock()
	logr.FromContextOrDiscard(ctx).V(2).Info("UnmountDevice succeeded", "uniqueName", name)
	return nil
}
