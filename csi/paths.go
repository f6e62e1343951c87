package csi

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/podstart/podstart/validation"
)

// Kubelet's names and file layout (pkg/volume/csi, pkg/kubelet/kubelet_getters.go).
const (
	// PluginName is kubelet's CSI volume plugin name.
	PluginName = "kubernetes.io/csi"
	// escapedPluginName is PluginName as a path component (EscapeQualifiedName).
	escapedPluginName = "kubernetes.io~csi"
	// VolDataFileName is the file kubelet writes beside a staging or
	// publish directory, read back at reconstruction.
	VolDataFileName = "vol_data.json"
	globalMount     = "globalmount"
	volumeDevices   = "volumeDevices"
	fsTypeBlock     = "block"
	// maxDriverName is the API server's limit for a CSI driver name.
	maxDriverName = 63
	// maxPodUID bounds a pod UID used as a path component (a UUID is 36).
	maxPodUID = 128
)

// ValidateDriverName checks a CSI driver name as the API server does
// (ValidateCSIDriverName: at most 63 characters, a DNS-1123 subdomain
// once lower-cased); kubelet uses the name unescaped as a directory.
func ValidateDriverName(name string) error {
	if name == "" || len(name) > maxDriverName || !validation.IsDNSSubdomain(strings.ToLower(name)) {
		return fmt.Errorf("%w: driver name %q: must be a DNS-1123 subdomain of at most %d characters", ErrInvalidName, name, maxDriverName)
	}
	return nil
}

// ValidateVolumeHandle checks a volume handle: non-empty, valid UTF-8 (a
// protobuf string) and free of NUL. A handle may hold slashes (some
// drivers use "projects/p/zones/z/disks/d"); it only reaches a path
// through its SHA-256, as kubelet's staging path.
func ValidateVolumeHandle(handle string) error {
	if handle == "" || !utf8.ValidString(handle) || strings.IndexByte(handle, 0) >= 0 {
		return fmt.Errorf("%w: volume handle %q: must be non-empty UTF-8 without NUL", ErrInvalidName, handle)
	}
	return nil
}

// ValidateSpecName checks a volume's spec name (the PV's name, or the
// pod's volume name for an inline volume): a DNS-1123 subdomain, as the
// API server requires of both, so never "..", never a slash.
func ValidateSpecName(name string) error {
	if !validation.IsDNSSubdomain(name) {
		return fmt.Errorf("%w: volume spec name %q: must be a DNS-1123 subdomain", ErrInvalidName, name)
	}
	return nil
}

// ValidatePodUID checks a pod UID used as a path component: 1 to 128 of
// [A-Za-z0-9_.-], not "." or "..".
func ValidatePodUID(uid string) error {
	ok := uid != "" && len(uid) <= maxPodUID && uid != "." && uid != ".."
	for i := 0; ok && i < len(uid); i++ {
		c := uid[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
	}
	if !ok {
		return fmt.Errorf("%w: pod UID %q: must be 1 to %d of [A-Za-z0-9_.-], not \".\" or \"..\"", ErrInvalidName, uid, maxPodUID)
	}
	return nil
}

func validateRoot(root string) error {
	if root == "" || !filepath.IsAbs(root) || filepath.Clean(root) != root {
		return fmt.Errorf("%w: root directory %q: must be absolute and clean", ErrInvalidRequest, root)
	}
	return nil
}

// Layout is kubelet's directory layout under its root directory
// (--root-dir, /var/lib/kubelet by default).
type Layout struct{ Root string }

// StagingPath is kubelet v1.37.2's makeDeviceMountPath:
// <root>/plugins/kubernetes.io/csi/<driver>/<sha256(volumeHandle)>/globalmount.
func (l Layout) StagingPath(driver, volumeHandle string) (string, error) {
	if err := validateRoot(l.Root); err != nil {
		return "", err
	}
	if err := ValidateDriverName(driver); err != nil {
		return "", err
	}
	if err := ValidateVolumeHandle(volumeHandle); err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(volumeHandle))
	return filepath.Join(l.Root, "plugins", PluginName, driver, hex.EncodeToString(sum[:]), globalMount), nil
}

// PublishPath is the target path kubelet publishes a filesystem volume
// at: <root>/pods/<uid>/volumes/kubernetes.io~csi/<specName>/mount; its
// vol_data.json is beside it.
func (l Layout) PublishPath(podUID, specName string) (string, error) {
	dir, err := l.podVolumeDir(podUID, specName)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "mount"), nil
}

func (l Layout) podVolumeDir(podUID, specName string) (string, error) {
	if err := validateRoot(l.Root); err != nil {
		return "", err
	}
	if err := ValidatePodUID(podUID); err != nil {
		return "", err
	}
	if err := ValidateSpecName(specName); err != nil {
		return "", err
	}
	// EscapeQualifiedName turns "/" into "~"; a valid spec name has none.
	return filepath.Join(l.Root, "pods", podUID, "volumes", escapedPluginName, specName), nil
}

// BlockPaths are csi_block.go's paths for a block volume of one pod.
type BlockPaths struct {
	// Staging: <root>/plugins/kubernetes.io/csi/volumeDevices/staging/<specName>.
	Staging string
	// Publish: <root>/plugins/kubernetes.io/csi/volumeDevices/publish/<specName>/<podUID>.
	Publish string
	// GlobalMap: <root>/plugins/kubernetes.io/csi/volumeDevices/<specName>/dev.
	GlobalMap string
	// DataDir holds vol_data.json: .../volumeDevices/<specName>/data.
	DataDir string
	// PodDeviceMapDir and PodDeviceMapName: the pod's link to the device,
	// <root>/pods/<uid>/volumeDevices/kubernetes.io~csi and <specName>.
	PodDeviceMapDir, PodDeviceMapName string
}

// BlockPaths returns the block-volume paths for a pod's volume.
func (l Layout) BlockPaths(podUID, specName string) (BlockPaths, error) {
	if err := ValidatePodUID(podUID); err != nil {
		return BlockPaths{}, err
	}
	b, err := l.BlockVolumePaths(specName)
	if err != nil {
		return BlockPaths{}, err
	}
	b.Publish = filepath.Join(b.Publish, podUID)
	b.PodDeviceMapDir = filepath.Join(l.Root, "pods", podUID, volumeDevices, escapedPluginName)
	b.PodDeviceMapName = specName
	return b, nil
}

// BlockVolumePaths returns a block volume's paths that no pod enters:
// Publish is the publish directory (the pods' publish paths are in it)
// and the pod fields are empty.
func (l Layout) BlockVolumePaths(specName string) (BlockPaths, error) {
	if err := validateRoot(l.Root); err != nil {
		return BlockPaths{}, err
	}
	if err := ValidateSpecName(specName); err != nil {
		return BlockPaths{}, err
	}
	devs := filepath.Join(l.Root, "plugins", PluginName, volumeDevices)
	return BlockPaths{
		Staging:   filepath.Join(devs, "staging", specName),
		Publish:   filepath.Join(devs, "publish", specName),
		GlobalMap: filepath.Join(devs, specName, "dev"),
		DataDir:   filepath.Join(devs, specName, "data"),
	}, nil
}

// AttachmentName is the VolumeAttachment name kubelet and the
// attach/detach controller use: "csi-" + sha256(handle+driver+node).
func AttachmentName(volumeHandle, driver, nodeName string) string {
	sum := sha256.Sum256([]byte(volumeHandle + driver + nodeName))
	return "csi-" + hex.EncodeToString(sum[:])
}

// EphemeralVolumeHandle is the handle kubelet gives a CSI inline volume:
// "csi-" + sha256(podUID+specName).
func EphemeralVolumeHandle(podUID, specName string) string {
	sum := sha256.Sum256([]byte(podUID + specName))
	return "csi-" + hex.EncodeToString(sum[:])
}
