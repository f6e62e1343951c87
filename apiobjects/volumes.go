package apiobjects

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/validation"
)

// EventRecorder is podsync's (the method of client-go's
// record.EventRecorder podstart calls), so one recorder serves every
// package.
type EventRecorder = podsync.EventRecorder

// Kubelet's plugin directories under <pod dir>/volumes.
const (
	secretPluginDir      = "kubernetes.io~secret"
	configMapPluginDir   = "kubernetes.io~configmap"
	downwardAPIPluginDir = "kubernetes.io~downward-api"
	projectedPluginDir   = "kubernetes.io~projected"
)

// Volumes is a podsync.VolumeProvider with kubelet's Secret, ConfigMap,
// downward API and projected volume plugins: each sync builds the
// volume's payload from the API objects and writes it with
// mounts.WriteAtomic under kubelet's
// <root>/pods/<uid>/volumes/kubernetes.io~<plugin>/<name> (root is the
// WriteAtomic root: no symlink may stand below it on the way), so a changed
// Secret reaches the running pod as it does with kubelet. Secret,
// downward API and projected volumes live on a tmpfs mounted there first
// (kubelet's Memory emptyDir wrapper), so secrets and service account
// tokens never reach the node's disk; ConfigMap volumes are directories,
// as kubelet's. hostPath and emptyDir volumes are
// podsync.DefaultVolumes'; any other type is refused by name
// (podsync.ErrVolumeNotSupported).
type Volumes struct {
	src         Source
	rootDir     string
	tokens      *Tokens
	bundles     ClusterTrustBundleSource
	certs       *PodCertificates
	recorder    EventRecorder
	allocatable corev1.ResourceList
	mounter     mounts.Mounter
	diskBacked  bool
}

// VolumeOption configures Volumes.
type VolumeOption func(*Volumes)

// WithTokens sets the token manager for serviceAccountToken projections,
// to share one between providers or give it a clock.
func WithTokens(t *Tokens) VolumeOption { return func(v *Volumes) { v.tokens = t } }

// WithTokenRequester gives serviceAccountToken projections a token
// manager (NewTokens) asking r. Without it or WithTokens, a pod with a
// token projection fails to mount it (ErrNoTokenRequester).
func WithTokenRequester(r TokenRequester) VolumeOption {
	return func(v *Volumes) { v.tokens = NewTokens(r) }
}

// WithClusterTrustBundles sets where clusterTrustBundle projections read
// ClusterTrustBundles, on each setup of the volume. Without it, a Source
// that is also a ClusterTrustBundleSource (Objects) is used; with
// neither, a pod with such a projection fails to mount it
// (ErrNoClusterTrustBundles).
func WithClusterTrustBundles(s ClusterTrustBundleSource) VolumeOption {
	return func(v *Volumes) { v.bundles = s }
}

// WithPodCertificates sets the pod certificate manager for podCertificate
// projections. Without it, a pod with such a projection fails to mount it
// (ErrNoPodCertificateClient).
func WithPodCertificates(m *PodCertificates) VolumeOption {
	return func(v *Volumes) { v.certs = m }
}

// WithEventRecorder sets where kubelet's FailedMount events go (default:
// nowhere).
func WithEventRecorder(r EventRecorder) VolumeOption { return func(v *Volumes) { v.recorder = r } }

// WithNodeAllocatable sets the node's allocatable resources, which
// downward API resourceFieldRef items read for a container without a cpu,
// memory or ephemeral-storage limit (kubelet reads the Node's status).
func WithNodeAllocatable(l corev1.ResourceList) VolumeOption {
	return func(v *Volumes) { v.allocatable = l }
}

// WithMounter sets the Mounter that mounts the tmpfs of Secret, downward
// API, projected and emptyDir medium Memory volumes (default: the host's,
// mounts.HostMounter). Tests without the privilege to mount pass
// mounts/fake's; the Syncer that removes the pods should have the same
// one (podsync.WithMounter).
func WithMounter(m mounts.Mounter) VolumeOption { return func(v *Volumes) { v.mounter = m } }

// WithDiskBackedVolumes puts Secret, downward API, projected and emptyDir
// medium Memory volumes in plain directories on the root dir's disk
// instead of a tmpfs. This is weaker than kubelet: secrets and service
// account tokens are written to the node's disk and outlive a crash
// there. It exists for callers that cannot mount (unprivileged tests);
// without it, a process that may not mount gets a failed volume
// (mounts.ErrMountNotPermitted), never a silent fall back to disk.
func WithDiskBackedVolumes() VolumeOption { return func(v *Volumes) { v.diskBacked = true } }

// NewVolumes returns a provider reading objects from src and writing
// volumes under rootDir (kubelet's root dir).
func NewVolumes(src Source, rootDir string, opts ...VolumeOption) *Volumes {
	v := &Volumes{src: src, rootDir: rootDir}
	for _, o := range opts {
		o(v)
	}
	if v.mounter == nil {
		v.mounter = &mounts.HostMounter{}
	}
	if b, ok := src.(ClusterTrustBundleSource); ok && v.bundles == nil {
		v.bundles = b
	}
	return v
}

var _ podsync.VolumeProvider = (*Volumes)(nil)

// Volumes implements podsync.VolumeProvider. A volume of an unsupported
// type fails the pod before anything is written; otherwise every volume
// is set up (each failure is its own FailedMount event) and the first
// failure, in the pod's order, is returned. A pod the API server would
// refuse (validation.Check) is refused before anything is written.
func (v *Volumes) Volumes(ctx context.Context, pod *corev1.Pod) (mounts.VolumeMap, error) {
	if err := validation.Check(pod); err != nil {
		return nil, err
	}
	for _, vol := range pod.Spec.Volumes {
		if err := supported(vol); err != nil {
			return nil, err
		}
	}
	out := make(mounts.VolumeMap, len(pod.Spec.Volumes))
	var first error
	for _, vol := range pod.Spec.Volumes {
		if vol.Image != nil {
			continue // podsync pulls and adds it (ImageVolumes)
		}
		m, err := v.volume(ctx, pod, vol)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		out[vol.Name] = m
	}
	if first != nil {
		return nil, first
	}
	return out, nil
}

// Volume sets up one of the pod's volumes. A failure of the four API
// plugins is kubelet's "MountVolume.SetUp failed for volume ..." (also a
// FailedMount Warning event) wrapping the cause. An invalid pod or volume
// (validation.CheckVolume) is refused before anything is written.
func (v *Volumes) Volume(ctx context.Context, pod *corev1.Pod, vol corev1.Volume) (mounts.Volume, error) {
	if err := validation.CheckVolume(pod, &vol); err != nil {
		return mounts.Volume{}, err
	}
	return v.volume(ctx, pod, vol)
}

// volume is Volume for a pod and volume already checked.
func (v *Volumes) volume(ctx context.Context, pod *corev1.Pod, vol corev1.Volume) (mounts.Volume, error) {
	var (
		plugin string
		files  map[string]mounts.File
		err    error
	)
	fsGroup := podFSGroup(pod)
	switch {
	case vol.Secret != nil:
		plugin = secretPluginDir
		files, err = v.secretPayload(ctx, pod, vol.Secret)
	case vol.ConfigMap != nil:
		plugin = configMapPluginDir
		files, err = v.configMapPayload(ctx, pod, vol.ConfigMap)
	case vol.DownwardAPI != nil:
		plugin = downwardAPIPluginDir
		files, err = DownwardAPIPayload(vol.DownwardAPI.Items, pod, v.allocatable, vol.DownwardAPI.DefaultMode)
	case vol.Projected != nil:
		plugin = projectedPluginDir
		files, err = ProjectedPayload(ctx, Projection{
			Pod: pod, VolumeName: vol.Name, Source: vol.Projected, Objects: v.src, Tokens: v.tokens, TrustBundles: v.bundles, PodCertificates: v.certs,
			FsUser: FsUser(pod), FsGroup: fsGroup, NodeAllocatable: v.allocatable,
		})
	case vol.HostPath != nil, vol.EmptyDir != nil, vol.Image != nil:
		return podsync.DefaultVolumes{RootDir: v.rootDir, Mounter: v.mounter, NodeAllocatable: v.allocatable, DiskBacked: v.diskBacked}.Volume(ctx, pod, vol)
	default:
		return mounts.Volume{}, supported(vol)
	}
	dir := filepath.Join(podsync.PodDir(v.rootDir, pod), "volumes", plugin, vol.Name)
	if err == nil {
		// Kubelet's plugins wrap an emptyDir: medium Memory for all but
		// ConfigMap.
		tmpfs := plugin != configMapPluginDir && !v.diskBacked
		err = v.write(pod, dir, files, fsGroup, tmpfs)
	}
	if err != nil {
		err = fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", vol.Name, err)
		if v.recorder != nil {
			v.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedMount", "%s", err.Error())
		}
		return mounts.Volume{}, err
	}
	// kubelet's attributes for these four plugins.
	return mounts.Volume{HostPath: dir, ReadOnly: true, SELinuxRelabel: true}, nil
}

// ForgetPod drops the pod's cached service account tokens and its pod
// certificates, as kubelet does when it tears down the pod's projected
// volumes and forgets the pod. The pod's directory is its garbage
// collector's.
func (v *Volumes) ForgetPod(uid types.UID) {
	if v.tokens != nil {
		v.tokens.DeleteServiceAccountToken(uid)
	}
	v.certs.ForgetPod(uid)
}

func (v *Volumes) secretPayload(ctx context.Context, pod *corev1.Pod, s *corev1.SecretVolumeSource) (map[string]mounts.File, error) {
	optional := s.Optional != nil && *s.Optional
	secret, err := v.src.GetSecret(ctx, pod.Namespace, s.SecretName)
	if err != nil {
		if !apierrors.IsNotFound(err) || !optional {
			return nil, err
		}
		secret = &corev1.Secret{}
	}
	return SecretPayload(s.Items, secret, s.DefaultMode, optional)
}

func (v *Volumes) configMapPayload(ctx context.Context, pod *corev1.Pod, c *corev1.ConfigMapVolumeSource) (map[string]mounts.File, error) {
	optional := c.Optional != nil && *c.Optional
	cm, err := v.src.GetConfigMap(ctx, pod.Namespace, c.Name)
	if err != nil {
		if !apierrors.IsNotFound(err) || !optional {
			return nil, err
		}
		cm = &corev1.ConfigMap{}
	}
	return ConfigMapPayload(c.Items, cm, c.DefaultMode, optional)
}

// write is what kubelet's plugins do after building the payload: the
// wrapped emptyDir set up (the directory 0777; a tmpfs of kubelet's size
// mounted on it unless one already is, so that each sync does not stack
// another; fsGroup ownership read-write when newly made), then the
// payload written atomically beneath the root dir, fsGroup ownership
// (read-only mask) applied to the whole volume before the new payload
// becomes visible. If the payload cannot be written the volume is torn
// down (unmounted, removed beneath the root dir), as kubelet's plugins
// do, so a failed setup leaves no mount behind.
func (v *Volumes) write(pod *corev1.Pod, dir string, files map[string]mounts.File, fsGroup *int64, tmpfs bool) error {
	fresh := false
	if tmpfs {
		if err := mounts.MakeVolumeDir(v.rootDir, dir); err != nil {
			return err
		}
		fsType, isMnt, err := v.mounter.MountPoint(dir)
		if err != nil {
			return err
		}
		if !isMnt || fsType != mounts.FSTypeTmpfs {
			// The wrapped volume has no sizeLimit: node allocatable and
			// the pod's memory limit.
			if err := v.mounter.MountTmpfs(dir, podsync.MemoryVolumeSize(pod, v.allocatable, nil)); err != nil {
				return err
			}
			fresh = true
		}
	} else if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		if err := mounts.MakeVolumeDir(v.rootDir, dir); err != nil {
			return err
		}
		fresh = true
	} else if err != nil {
		return err
	}
	err := func() error {
		if fresh && fsGroup != nil {
			if err := mounts.SetVolumeOwnership(dir, *fsGroup, false); err != nil {
				return err
			}
		}
		var opts []mounts.AtomicOption
		if fsGroup != nil {
			opts = append(opts, mounts.WithSetPerms(func() error { return mounts.SetVolumeOwnership(dir, *fsGroup, true) }))
		}
		return mounts.WriteAtomic(v.rootDir, dir, files, opts...)
	}()
	if err != nil {
		return errors.Join(err, v.tearDown(dir))
	}
	return nil
}

// tearDown is kubelet's TearDown of the wrapped emptyDir: the tmpfs
// unmounted if there is one, then the directory removed without following
// a symlink at or above it (mounts.RemoveBeneath): a volume directory
// that is a symlink loses the link, not what it points to.
func (v *Volumes) tearDown(dir string) error {
	fsType, isMnt, err := v.mounter.MountPoint(dir)
	if err != nil {
		return fmt.Errorf("tear down %s: %w", dir, err)
	}
	if isMnt && fsType == mounts.FSTypeTmpfs {
		if err := v.mounter.Unmount(dir); err != nil {
			return fmt.Errorf("tear down %s: %w", dir, err)
		}
	} else if isMnt {
		return fmt.Errorf("tear down %s: a %s file system is mounted there, so it is kept", dir, fsType)
	}
	if err := mounts.RemoveBeneath(v.rootDir, dir); err != nil {
		return fmt.Errorf("tear down %s: %w", dir, err)
	}
	return nil
}

func podFSGroup(pod *corev1.Pod) *int64 {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup
	}
	return nil
}

// supported refuses, by its API name, a volume type that neither these
// plugins nor podsync.DefaultVolumes serve.
func supported(vol corev1.Volume) error {
	switch {
	case vol.Secret != nil, vol.ConfigMap != nil, vol.DownwardAPI != nil, vol.Projected != nil, vol.HostPath != nil, vol.EmptyDir != nil, vol.Image != nil:
		return nil
	}
	return fmt.Errorf("volume %q: %s: %w (hostPath, emptyDir, image, secret, configMap, downwardAPI and projected are)", vol.Name, volumeType(vol.VolumeSource), podsync.ErrVolumeNotSupported)
}

// volumeType is the JSON name of the volume source's set field.
func volumeType(src corev1.VolumeSource) string {
	rv := reflect.ValueOf(src)
	for i := 0; i < rv.NumField(); i++ {
		if f := rv.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("json"), ",")
			return name
		}
	}
	return "no volume source"
}
