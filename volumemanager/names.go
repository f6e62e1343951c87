package volumemanager

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/validation"
)

// Kubelet's names for the CSI plugin's files.
const (
	// PluginName is kubelet's CSI plugin name, the prefix of unique
	// volume names.
	PluginName = "kubernetes.io/csi"
	// podPluginDir is PluginName escaped for a pod's volumes dir.
	podPluginDir    = "kubernetes.io~csi"
	volDataFileName = "vol_data.json"
	globalMountDir  = "globalmount"
	// volumeDevicesDir is kubelet's directory of block volumes, in the
	// plugin's directory and in a pod's.
	volumeDevicesDir = "volumeDevices"
	volNameSep       = "^"
)

// vol_data.json keys, as kubelet's CSI plugin writes them.
const (
	keySpecVolID     = "specVolID"
	keyVolumeHandle  = "volumeHandle"
	keyDriverName    = "driverName"
	keyLifecycleMode = "volumeLifecycleMode"
)

// UniqueVolumeName is kubelet's GetUniqueVolumeNameFromSpec for a CSI
// persistent volume: "kubernetes.io/csi/<driver>^<volumeHandle>". Two pods
// using one PV share it (and its staging).
func UniqueVolumeName(driver, volumeHandle string) corev1.UniqueVolumeName {
	return corev1.UniqueVolumeName(PluginName + "/" + driver + volNameSep + volumeHandle)
}

// InlineVolumeName is kubelet's GetUniqueVolumeNameFromSpecWithPod for a
// CSI inline volume, which belongs to one pod:
// "kubernetes.io/csi/<pod UID>-<volume name>".
func InlineVolumeName(podUID types.UID, volumeName string) corev1.UniqueVolumeName {
	return corev1.UniqueVolumeName(fmt.Sprintf("%s/%s-%s", PluginName, podUID, volumeName))
}

// AttachmentName is the name of the VolumeAttachment the attach/detach
// controller creates for a volume on a node (kubelet's
// getAttachmentName): "csi-" + hex(sha256(volumeHandle+driver+node)).
func AttachmentName(volumeHandle, driver, nodeName string) string {
	sum := sha256.Sum256([]byte(volumeHandle + driver + nodeName))
	return fmt.Sprintf("csi-%x", sum)
}

// InlineVolumeHandle is kubelet's makeVolumeHandle, the handle of a CSI
// inline volume: "csi-" + hex(sha256(podUID+volumeName)).
func InlineVolumeHandle(podUID types.UID, volumeName string) string {
	sum := sha256.Sum256([]byte(string(podUID) + volumeName))
	return fmt.Sprintf("csi-%x", sum)
}

// StagingPath is kubelet's device mount path of a CSI persistent volume:
// <root>/plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/globalmount.
// The handle is hashed, so any handle is safe; the driver name must be
// valid (CheckDriverName).
func StagingPath(rootDir, driver, volumeHandle string) string {
	sum := sha256.Sum256([]byte(volumeHandle))
	return filepath.Join(rootDir, "plugins", PluginName, driver, fmt.Sprintf("%x", sum), globalMountDir)
}

// TargetPath is kubelet's publish path of a pod's CSI volume:
// <root>/pods/<uid>/volumes/kubernetes.io~csi/<specName>/mount, where
// specName is the PV's name (or the pod's volume name for an inline
// volume).
func TargetPath(rootDir string, podUID types.UID, specName string) string {
	return filepath.Join(volumeDir(rootDir, podUID, specName), "mount")
}

// Kubelet's paths of a block volume (csi_block.go; volumeDevices is
// kubelet's DefaultKubeletVolumeDevicesDirName), by the PV's name:
//
//	staging  <root>/plugins/kubernetes.io/csi/volumeDevices/staging/<specName>
//	publish  <root>/plugins/kubernetes.io/csi/volumeDevices/publish/<specName>/<podUID>
//	map      <root>/plugins/kubernetes.io/csi/volumeDevices/<specName>/dev/<podUID> (the device bind-mounted, a loop device on it)
//	data     <root>/plugins/kubernetes.io/csi/volumeDevices/<specName>/data/vol_data.json
//	pod      <root>/pods/<podUID>/volumeDevices/kubernetes.io~csi/<specName> (a symlink to the device: the container's host path)
func blockDir(rootDir string) string {
	return filepath.Join(rootDir, "plugins", PluginName, volumeDevicesDir)
}

// BlockStagingPath is a block volume's staging path.
func BlockStagingPath(rootDir, specName string) string {
	return filepath.Join(blockDir(rootDir), "staging", specName)
}

// BlockPublishPath is a block volume's publish path for one pod.
func BlockPublishPath(rootDir string, podUID types.UID, specName string) string {
	return filepath.Join(blockDir(rootDir), "publish", specName, string(podUID))
}

// BlockGlobalMapPath is the directory where each pod's use of a block
// volume is a bind mount of the device, named by the pod's UID.
func BlockGlobalMapPath(rootDir, specName string) string {
	return filepath.Join(blockDir(rootDir), specName, "dev")
}

// blockDataDir holds a block volume's vol_data.json.
func blockDataDir(rootDir, specName string) string {
	return filepath.Join(blockDir(rootDir), specName, "data")
}

// PodDeviceMapPath is the pod's symlink to a block volume's device, the
// host path of the container's device.
func PodDeviceMapPath(rootDir string, podUID types.UID, specName string) string {
	return filepath.Join(podDeviceMapDir(rootDir, podUID), specName)
}

func podDeviceMapDir(rootDir string, podUID types.UID) string {
	return filepath.Join(rootDir, "pods", string(podUID), volumeDevicesDir, podPluginDir)
}

func volumeDir(rootDir string, podUID types.UID, specName string) string {
	return filepath.Join(rootDir, "pods", string(podUID), "volumes", podPluginDir, specName)
}

// CheckDriverName checks a CSI driver name before it becomes a path
// component: the API server's rule for CSIDriver names and a PV's
// csi.driver (at most 63 characters, a DNS-1123 subdomain in lower case,
// which rules out "/", "." and "..").
func CheckDriverName(driver string) error {
	if len(driver) == 0 || len(driver) > 63 || !validation.IsDNSSubdomain(strings.ToLower(driver)) {
		return fmt.Errorf("CSI driver name %q: %w", driver, ErrInvalidName)
	}
	return nil
}

// checkSegment checks a name that becomes one path component (a pod UID
// or a PV name read back from the disk or an API object).
func checkSegment(what, s string) error {
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\\\x00") || len(s) > 253 {
		return fmt.Errorf("%s %q: %w", what, s, ErrInvalidName)
	}
	return nil
}
