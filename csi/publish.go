package csi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Volume context keys kubelet adds (podInfoOnMount, tokenRequests).
const (
	KeyPodName            = "csi.storage.k8s.io/pod.name"
	KeyPodNamespace       = "csi.storage.k8s.io/pod.namespace"
	KeyPodUID             = "csi.storage.k8s.io/pod.uid"
	KeyServiceAccountName = "csi.storage.k8s.io/serviceAccount.name"
	KeyEphemeral          = "csi.storage.k8s.io/ephemeral"
	KeyTokens             = "csi.storage.k8s.io/serviceAccount.tokens"
)

// TokenGetter requests a service account token, as kubelet's
// serviceAccountTokenGetter (apiobjects' token manager fits).
type TokenGetter func(ctx context.Context, namespace, serviceAccount string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)

// PublishRequest publishes a volume for a pod (kubelet's SetUpAt;
// MapPodDevice for a block volume).
type PublishRequest struct {
	Volume
	// Pod: the pod the volume is published for (name, namespace, UID,
	// service account).
	Pod *corev1.Pod
	// PublishContext: the VolumeAttachment's status.attachmentMetadata;
	// nil when the driver needs no attach.
	PublishContext map[string]string
	// Secrets: the data of Volume.NodePublishSecretRef's Secret.
	Secrets Secrets
	// FSGroup: the pod's fsGroup.
	FSGroup *int64
	// SELinuxLabel: see StageRequest.
	SELinuxLabel string
	// CSIDriver: the driver's CSIDriver object, nil when none exists
	// (podInfoOnMount, tokenRequests, fsGroupPolicy, volumeLifecycleModes,
	// seLinuxMount are read from it).
	CSIDriver *storagev1.CSIDriver
	// Tokens is required when CSIDriver asks for tokenRequests.
	Tokens TokenGetter
	// Remount: a republish (requiresRepublish) or a reconstructed volume;
	// the target directory is kept on error, as kubelet's.
	Remount bool
}

// PublishResult says what was published and what is left to the caller.
type PublishResult struct {
	// TargetPath: where the volume is published (a filesystem volume's
	// mount directory, a block volume's publish path).
	TargetPath string
	// StagingPath passed to NodePublishVolume ("" when not staged).
	StagingPath string
	// ApplyFSGroup: kubelet would now give the volume to FSGroup (the
	// driver lacks VOLUME_MOUNT_GROUP, and fsGroupPolicy, fsType, access
	// modes and readOnly allow it); the caller applies the ownership,
	// with the pod's fsGroupChangePolicy.
	ApplyFSGroup bool
}

// Publish publishes a volume for a pod as kubelet v1.37.2's SetUpAt:
// lifecycle mode and fsGroupPolicy checked against CSIDriver,
// NodeGetCapabilities (STAGE_UNSTAGE, persistent volumes only), the
// parent directory (0750), pod info and tokens in the volume context,
// NodeGetCapabilities (VOLUME_MOUNT_GROUP), vol_data.json, NodePublishVolume
// (after NodeGetCapabilities for SINGLE_NODE_MULTI_WRITER). On a final
// error the directory is removed (unless Remount); on ErrUncertain it is
// kept.
func (p *Plugin) Publish(ctx context.Context, req PublishRequest) (PublishResult, error) {
	if err := req.Volume.validate(); err != nil {
		return PublishResult{}, err
	}
	if req.Pod == nil {
		return PublishResult{}, fmt.Errorf("%w: no pod", ErrInvalidRequest)
	}
	if err := ValidatePodUID(string(req.Pod.UID)); err != nil {
		return PublishResult{}, err
	}
	if req.Ephemeral && req.VolumeHandle != EphemeralVolumeHandle(string(req.Pod.UID), req.SpecName) {
		return PublishResult{}, fmt.Errorf("%w: inline CSI volume %s: handle is not kubelet's for pod %s", ErrInvalidRequest, req.SpecName, req.Pod.UID)
	}
	c, err := p.Client(req.Driver)
	if err != nil {
		return PublishResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if req.Block {
		return p.publishBlock(ctx, c, req)
	}
	log := logr.FromContextOrDiscard(ctx)
	dir, err := p.layout.PublishPath(string(req.Pod.UID), req.SpecName)
	if err != nil {
		return PublishResult{}, err
	}
	res := PublishResult{TargetPath: dir}
	if err := supportsLifecycleMode(req.CSIDriver, req.Driver, req.lifecycleMode()); err != nil {
		return res, err
	}
	policy, err := fsGroupPolicy(req.CSIDriver)
	if err != nil {
		return res, err
	}
	var publishContext map[string]string
	if !req.Ephemeral {
		stageSet, err := c.Supports(ctx, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
		if err != nil {
			return res, settled(csiLog("mounter.SetUpAt failed to check for STAGE_UNSTAGE_VOLUME capability"), err)
		}
		if stageSet {
			if res.StagingPath, err = p.layout.StagingPath(req.Driver, req.VolumeHandle); err != nil {
				return res, err
			}
		}
		publishContext = req.PublishContext
	}
	parent := filepath.Dir(dir)
	if err := mkdirAllDir(parent); err != nil {
		return res, errors.New(csiLog("mounter.SetUpAt failed to create dir %#v:  %v", parent, err))
	}
	secrets := req.Secrets.orEmpty()
	attrs := maps(req.VolumeAttributes)
	if podInfoOnMount(req.CSIDriver) {
		attrs = merge(attrs, podInfo(req.Pod, req.Ephemeral))
	}
	tokens, rawTokens, inSecrets, err := serviceAccountTokens(ctx, req)
	if err != nil {
		return res, fmt.Errorf("%s: %w", csiLog("mounter.SetUpAt failed to get service accoount token attributes"), err)
	}
	if inSecrets {
		secrets = merge(maps(secrets), tokens)
	} else {
		attrs = merge(attrs, tokens)
	}
	mountGroup, err := c.Supports(ctx, csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP)
	if err != nil {
		return res, settled(csiLog("mounter.SetUpAt failed to determine if the node service has VOLUME_MOUNT_GROUP capability"), err)
	}
	var fsGroup *int64
	if mountGroup {
		fsGroup = req.FSGroup
	}
	mountOptions := req.MountOptions
	if req.Ephemeral {
		mountOptions = nil
	}
	mountOptions, seLinux := seLinuxMountOptions(mountOptions, req.SELinuxLabel, req.CSIDriver)
	data := VolumeData{
		SpecVolID:           req.SpecName,
		VolumeHandle:        req.VolumeHandle,
		DriverName:          req.Driver,
		NodeName:            p.nodeName,
		VolumeLifecycleMode: string(req.lifecycleMode()),
		AttachmentID:        AttachmentName(req.VolumeHandle, req.Driver, p.nodeName),
	}
	if seLinux {
		data.SELinuxMountContext = req.SELinuxLabel
	}
	if err := writeVolumeData(parent, data); err != nil {
		if rerr := p.removeMountDir(dir); rerr != nil {
			log.Error(rerr, csiLog("mounter.SetUpAt failed to remove mount dir after error [%s]", dir))
		}
		return res, err
	}
	err = c.NodePublishVolume(ctx, NodePublishRequest{
		VolumeHandle:   req.VolumeHandle,
		ReadOnly:       req.ReadOnly,
		StagingPath:    res.StagingPath,
		TargetPath:     dir,
		AccessMode:     req.accessMode(),
		PublishContext: publishContext,
		VolumeContext:  attrs,
		Secrets:        secrets,
		FSType:         req.FSType,
		MountOptions:   mountOptions,
		FSGroup:        fsGroup,
		redact:         []map[string]string{tokens, rawTokens},
	})
	if err != nil {
		log.Error(err, csiLog("mounter.SetUpAt NodePublishVolume failed"), "volID", req.VolumeHandle)
		if !errors.Is(err, ErrUncertain) && !req.Remount {
			if rerr := p.removeMountDir(dir); rerr != nil {
				log.Error(rerr, csiLog("mounter.SetupAt failed to remove mount dir after a NodePublish() error [%s]", dir))
			}
		}
		return res, err
	}
	res.ApplyFSGroup = !mountGroup && req.supportsFSGroup(policy)
	log.V(4).Info(csiLog("mounter.SetUp successfully requested NodePublish [%s]", dir))
	return res, nil
}

// publishBlock is NewBlockVolumeMapper then MapPodDevice.
func (p *Plugin) publishBlock(ctx context.Context, c *Client, req PublishRequest) (PublishResult, error) {
	paths, err := p.layout.BlockPaths(string(req.Pod.UID), req.SpecName)
	if err != nil {
		return PublishResult{}, err
	}
	if err := p.writeBlockData(paths, req.Volume); err != nil {
		return PublishResult{}, err
	}
	publishContext := req.PublishContext
	if publishContext == nil {
		publishContext = map[string]string{}
	}
	attrs := maps(req.VolumeAttributes)
	if podInfoOnMount(req.CSIDriver) {
		attrs = merge(attrs, podInfo(req.Pod, false))
	}
	if err := mkdirAllDir(filepath.Dir(paths.Publish)); err != nil {
		return PublishResult{}, errors.New(csiLog("blockMapper.publishVolumeForBlock failed to create dir %s:  %v", filepath.Dir(paths.Publish), err))
	}
	err = c.NodePublishVolume(ctx, NodePublishRequest{
		VolumeHandle:   req.VolumeHandle,
		ReadOnly:       req.ReadOnly,
		StagingPath:    paths.Staging,
		TargetPath:     paths.Publish,
		AccessMode:     req.accessMode(),
		PublishContext: publishContext,
		VolumeContext:  attrs,
		Secrets:        req.Secrets.orEmpty(),
		FSType:         fsTypeBlock,
		MountOptions:   []string{},
	})
	if err != nil {
		return PublishResult{}, err
	}
	return PublishResult{TargetPath: paths.Publish, StagingPath: paths.Staging}, nil
}

// UnpublishRequest unpublishes a pod's volume.
type UnpublishRequest struct {
	Driver, VolumeHandle string
	PodUID, SpecName     string
	Block                bool
}

// Unpublish is kubelet's TearDownAt: NodeUnpublishVolume, then the mount
// directory, vol_data.json and their parent removed unless still
// mounted. For a block volume (UnmapPodDevice) only NodeUnpublishVolume.
func (p *Plugin) Unpublish(ctx context.Context, req UnpublishRequest) error {
	if err := ValidateDriverName(req.Driver); err != nil {
		return err
	}
	if err := ValidateVolumeHandle(req.VolumeHandle); err != nil {
		return err
	}
	var target string
	if req.Block {
		paths, err := p.layout.BlockPaths(req.PodUID, req.SpecName)
		if err != nil {
			return err
		}
		target = paths.Publish
	} else {
		dir, err := p.layout.PublishPath(req.PodUID, req.SpecName)
		if err != nil {
			return err
		}
		target = dir
	}
	c, err := p.Client(req.Driver)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if err := c.NodeUnpublishVolume(ctx, req.VolumeHandle, target); err != nil {
		if req.Block {
			return settled(csiLog("blockMapper.unpublishVolumeForBlock failed"), err)
		}
		return settled(csiLog("Unmounter.TearDownAt failed"), err)
	}
	if req.Block {
		return nil
	}
	if err := p.removeMountDir(target); err != nil {
		return errors.New(csiLog("Unmounter.TearDownAt failed to clean mount dir [%s]: %v", target, err))
	}
	return nil
}

func (v Volume) lifecycleMode() storagev1.VolumeLifecycleMode {
	if v.Ephemeral {
		return storagev1.VolumeLifecycleEphemeral
	}
	return storagev1.VolumeLifecyclePersistent
}

// supportsLifecycleMode is kubelet's supportsVolumeLifecycleMode.
func supportsLifecycleMode(d *storagev1.CSIDriver, name string, mode storagev1.VolumeLifecycleMode) error {
	switch {
	case d == nil && mode == storagev1.VolumeLifecyclePersistent:
		return nil
	case d == nil:
		return fmt.Errorf("%w: %s", ErrNotSupported, csiLog("mounter.SetupAt failed to check volume lifecycle mode: volume mode %q not supported by driver %s (no CSIDriver object)", mode, name))
	case slices.Contains(d.Spec.VolumeLifecycleModes, mode):
		return nil
	default:
		return fmt.Errorf("%w: %s", ErrNotSupported, csiLog("mounter.SetupAt failed to check volume lifecycle mode: volume mode %q not supported by driver %s (only supports %q)", mode, name, d.Spec.VolumeLifecycleModes))
	}
}

// fsGroupPolicy is kubelet's getFSGroupPolicy.
func fsGroupPolicy(d *storagev1.CSIDriver) (storagev1.FSGroupPolicy, error) {
	if d == nil {
		return storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, nil
	}
	if d.Spec.FSGroupPolicy == nil || *d.Spec.FSGroupPolicy == "" {
		return "", fmt.Errorf("%w: %s", ErrInvalidRequest, csiLog("mounter.SetupAt failed to check fsGroup policy: %s", csiLog("expected valid fsGroupPolicy, received nil value or empty string")))
	}
	return *d.Spec.FSGroupPolicy, nil
}

// supportsFSGroup is kubelet's csiMountMgr.supportsFSGroup.
func (r PublishRequest) supportsFSGroup(policy storagev1.FSGroupPolicy) bool {
	if r.FSGroup == nil || policy == storagev1.NoneFSGroupPolicy || r.ReadOnly {
		return false
	}
	if policy == storagev1.FileFSGroupPolicy {
		return true
	}
	if r.FSType == "" {
		return false
	}
	if r.Ephemeral {
		return true
	}
	return slices.Contains(r.AccessModes, corev1.ReadWriteOnce) || slices.Contains(r.AccessModes, corev1.ReadWriteOncePod)
}

func podInfoOnMount(d *storagev1.CSIDriver) bool {
	return d != nil && d.Spec.PodInfoOnMount != nil && *d.Spec.PodInfoOnMount
}

// podInfo is kubelet's getPodInfoAttrs.
func podInfo(pod *corev1.Pod, ephemeral bool) map[string]string {
	return map[string]string{
		KeyPodName:            pod.Name,
		KeyPodNamespace:       pod.Namespace,
		KeyPodUID:             string(pod.UID),
		KeyServiceAccountName: pod.Spec.ServiceAccountName,
		KeyEphemeral:          strconv.FormatBool(ephemeral),
	}
}

// serviceAccountTokens is kubelet's podServiceAccountTokenAttrs; raw
// holds the bare tokens, for redaction.
func serviceAccountTokens(ctx context.Context, r PublishRequest) (attrs, raw map[string]string, inSecrets bool, err error) {
	if r.CSIDriver == nil || len(r.CSIDriver.Spec.TokenRequests) == 0 {
		return nil, nil, false, nil
	}
	if r.Tokens == nil {
		return nil, nil, false, fmt.Errorf("%w: CSIDriver %s asks for tokenRequests and no TokenGetter was given", ErrUnsupported, r.Driver)
	}
	out := map[string]authenticationv1.TokenRequestStatus{}
	raw = map[string]string{}
	for _, tr := range r.CSIDriver.Spec.TokenRequests {
		audiences := []string{tr.Audience}
		if tr.Audience == "" {
			audiences = []string{}
		}
		got, err := r.Tokens(ctx, r.Pod.Namespace, r.Pod.Spec.ServiceAccountName, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{
				Audiences:         audiences,
				ExpirationSeconds: tr.ExpirationSeconds,
				BoundObjectRef: &authenticationv1.BoundObjectReference{
					APIVersion: "v1", Kind: "Pod", Name: r.Pod.Name, UID: r.Pod.UID,
				},
			},
		})
		if err != nil {
			return nil, nil, false, err
		}
		if got == nil {
			return nil, nil, false, fmt.Errorf("%w: token request for audience %q returned nothing", ErrInvalidRequest, tr.Audience)
		}
		out[tr.Audience] = got.Status
		raw[tr.Audience] = got.Status.Token
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, nil, false, err
	}
	inSecrets = r.CSIDriver.Spec.ServiceAccountTokenInSecrets != nil && *r.CSIDriver.Spec.ServiceAccountTokenInSecrets
	return map[string]string{KeyTokens: string(b)}, raw, inSecrets, nil
}

// maps copies m (nil stays nil): kubelet merges into the spec's own map;
// podstart never writes into the caller's.
func maps(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// merge is kubelet's mergeMap: second's keys win; nil first yields second.
func merge(first, second map[string]string) map[string]string {
	if first == nil {
		return second
	}
	for k, v := range second {
		first[k] = v
	}
	return first
}
