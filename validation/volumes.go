package validation

import (
	"fmt"
	"net"
	"path"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The API server's messages and value lists for volumes.
const (
	emptyDirModeErrorMsg = `must be a number between 0 and 01777 (octal), both inclusive`
	oneVolumeTypeMsg     = `may not specify more than 1 volume type`
	duplicatePathsMsg    = `conflicting duplicate paths`
	iscsiFormatMsg       = `must be valid format`
	iscsiPrefixMsg       = `must be valid format starting with iqn, eui, or naa`
	flexReservedMsg      = `kubernetes.io and k8s.io namespaces are reserved`

	// Pod certificates: certificates.MaxMaxExpirationSeconds and
	// certificates.KubernetesMaxMaxExpirationSeconds.
	maxMaxExpirationSeconds           = 91 * 24 * 60 * 60
	kubernetesMaxMaxExpirationSeconds = 24 * 60 * 60
)

// v1.37's feature gates for volume fields that are alpha and off by
// default: the API server drops emptyDir.mode (EmptyDirVolumeMode) and the
// user and defaultUser fields of secret, configMap, downwardAPI and
// projected volumes (AtomicWriteVolumeUserFields) in PrepareForCreate,
// before validating, so it accepts any value of them. podstart reads none
// of them either. With a gate on, they are validated as ValidatePodCreate
// does.
var (
	emptyDirVolumeMode          = false
	atomicWriteVolumeUserFields = false
)

var (
	pdPartitionErrorMsg = validation.InclusiveRangeError(1, 255)

	// Sorted as the API server's sets.List gives them.
	hostPathTypes          = []string{"", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"}
	pullPolicies           = []string{"Always", "IfNotPresent", "Never"}
	volumeFieldPaths       = []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"}
	resourceFieldPaths     = []string{"limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"}
	podCertificateKeyTypes = []string{"RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"}
	azureCachingModes      = []string{"None", "ReadOnly", "ReadWrite"}
	azureDiskKinds         = []string{"Dedicated", "Managed", "Shared"}
	accessModes            = []string{"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"}
	volumeModes            = []string{"Block", "Filesystem"}

	iscsiIqnRegex = regexp.MustCompile(`iqn\.\d{4}-\d{2}\.([[:alnum:]-.]+)(:[^,;*&$|\s]+)$`)
	iscsiEuiRegex = regexp.MustCompile(`^eui.[[:alnum:]]{16}$`)
	iscsiNaaRegex = regexp.MustCompile(`^naa.[[:alnum:]]{32}$`)
)

// volumes is the API server's ValidateVolumes for spec.volumes (each
// volume's name and source) and the pod-level rules about volumes
// (validatePodMetadataAndSpec's service account token rule, ValidatePodSpec's
// validateFileKeyRefVolumes). fld is the spec's path. It returns the valid
// volumes by name for the containers' mounts, as ValidateVolumes does: a
// volume with an error is left out. A volume with no source is the emptyDir
// the API server's defaulting makes of it.
func volumes(spec *corev1.PodSpec, meta *metav1.ObjectMeta, fld *field.Path) (map[string]corev1.VolumeSource, field.ErrorList) {
	byName := make(map[string]corev1.VolumeSource, len(spec.Volumes))
	var errs field.ErrorList
	volsPath := fld.Child("volumes")

	// The PVCs this pod's ephemeral volumes create: a persistentVolumeClaim
	// volume must not name one.
	var created map[string]struct{}
	if meta != nil && meta.Name != "" {
		for i := range spec.Volumes {
			if spec.Volumes[i].Ephemeral != nil {
				if created == nil {
					created = make(map[string]struct{})
				}
				created[meta.Name+"-"+spec.Volumes[i].Name] = struct{}{}
			}
		}
	}

	for i := range spec.Volumes {
		vol := &spec.Volumes[i]
		idx := volsPath.Index(i)
		src, el := volumeSource(&vol.VolumeSource, idx, vol.Name, meta)
		if vol.Name == "" {
			el = append(el, field.Required(idx.Child("name"), ""))
		} else if msgs := labelMsgs(vol.Name); len(msgs) > 0 {
			for _, msg := range msgs {
				el = append(el, field.Invalid(idx.Child("name"), vol.Name, msg))
			}
		}
		if _, dup := byName[vol.Name]; dup {
			el = append(el, field.Duplicate(idx.Child("name"), vol.Name))
		}
		if len(el) == 0 {
			byName[vol.Name] = src
		} else {
			errs = append(errs, el...)
		}
		if pvc := vol.PersistentVolumeClaim; pvc != nil && created != nil {
			if _, ok := created[pvc.ClaimName]; ok {
				errs = append(errs, field.Invalid(idx.Child("persistentVolumeClaim", "claimName"), pvc.ClaimName,
					"must not reference a PVC that gets created for an ephemeral volume"))
			}
		}
	}

	if spec.ServiceAccountName == "" {
		for i := range spec.Volumes {
			p := spec.Volumes[i].Projected
			if p == nil {
				continue
			}
			for j := range p.Sources {
				if p.Sources[j].ServiceAccountToken != nil {
					errs = append(errs, field.Forbidden(volsPath.Index(i).Child("projected", "sources").Index(j).Child("serviceAccountToken"),
						"must not be specified when serviceAccountName is not set"))
				}
			}
		}
	}

	errs = append(errs, fileKeyRefVolumes(spec, fld)...)
	return byName, errs
}

// fileKeyRefVolumes is validateFileKeyRefVolumes: an environment variable's
// fileKeyRef names a volume of the pod, an emptyDir (after defaulting).
func fileKeyRefVolumes(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(env []corev1.EnvVar, kind string, i int) {
		for j := range env {
			if env[j].ValueFrom == nil || env[j].ValueFrom.FileKeyRef == nil {
				continue
			}
			name := env[j].ValueFrom.FileKeyRef.VolumeName
			// The last volume of a name, as the API server's map of them.
			found, emptyDir := false, false
			for k := len(spec.Volumes) - 1; k >= 0; k-- {
				if spec.Volumes[k].Name == name {
					found, emptyDir = true, isEmptyDir(&spec.Volumes[k].VolumeSource)
					break
				}
			}
			if found && emptyDir {
				continue
			}
			p := fld.Child(kind).Index(i).Child("env").Index(j).Child("valueFrom", "fileKeyRef", "volumeName")
			if !found {
				errs = append(errs, field.NotFound(p, name))
			} else {
				errs = append(errs, field.Invalid(p, name, "referenced volume must be of type emptyDir"))
			}
		}
	}
	for i := range spec.InitContainers {
		check(spec.InitContainers[i].Env, "initContainers", i)
	}
	for i := range spec.Containers {
		check(spec.Containers[i].Env, "containers", i)
	}
	for i := range spec.EphemeralContainers {
		check(spec.EphemeralContainers[i].Env, "ephemeralContainers", i)
	}
	return errs
}

// isEmptyDir: an emptyDir, or no source at all, which defaulting makes an
// emptyDir.
func isEmptyDir(s *corev1.VolumeSource) bool {
	return s.EmptyDir != nil || countSources(s) == 0
}

// countSources is how many of s's sources are set.
func countSources(s *corev1.VolumeSource) int {
	n := 0
	for _, set := range [...]bool{
		s.HostPath != nil, s.EmptyDir != nil, s.GCEPersistentDisk != nil, s.AWSElasticBlockStore != nil,
		s.GitRepo != nil, s.Secret != nil, s.NFS != nil, s.ISCSI != nil, s.Glusterfs != nil,
		s.PersistentVolumeClaim != nil, s.RBD != nil, s.FlexVolume != nil, s.Cinder != nil,
		s.CephFS != nil, s.Flocker != nil, s.DownwardAPI != nil, s.FC != nil, s.AzureFile != nil,
		s.ConfigMap != nil, s.VsphereVolume != nil, s.Quobyte != nil, s.AzureDisk != nil,
		s.PhotonPersistentDisk != nil, s.Projected != nil, s.PortworxVolume != nil, s.ScaleIO != nil,
		s.StorageOS != nil, s.CSI != nil, s.Ephemeral != nil, s.Image != nil,
	} {
		if set {
			n++
		}
	}
	return n
}

// volumeSource is validateVolumeSource: exactly one source, each checked;
// fld is the volume's path. It returns the source as defaulting leaves it (a
// volume with none is an emptyDir).
func volumeSource(s *corev1.VolumeSource, fld *field.Path, volName string, meta *metav1.ObjectMeta) (corev1.VolumeSource, field.ErrorList) {
	if countSources(s) == 0 {
		// SetDefaults_Volume: an emptyDir.
		return corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, nil
	}
	var errs field.ErrorList
	n := 0
	// one counts a source and reports it as Forbidden if one came before
	// (name is the API server's path element for that error); the source is
	// validated only if it is the first.
	one := func(name string) bool {
		if n > 0 {
			errs = append(errs, field.Forbidden(fld.Child(name), oneVolumeTypeMsg))
			return false
		}
		n++
		return true
	}
	if s.EmptyDir != nil {
		n++
		errs = append(errs, emptyDir(s.EmptyDir, fld)...)
	}
	if s.HostPath != nil && one("hostPath") {
		errs = append(errs, hostPath(s.HostPath, fld)...)
	}
	if s.GitRepo != nil && one("gitRepo") {
		if s.GitRepo.Repository == "" {
			errs = append(errs, field.Required(fld.Child("gitRepo", "repository"), ""))
		}
		if needsPathCheck(s.GitRepo.Directory) {
			errs = append(errs, localDescendingPath(s.GitRepo.Directory, fld.Child("gitRepo", "directory"))...)
		}
	}
	if s.GCEPersistentDisk != nil && one("gcePersistentDisk") {
		// The API server names this "persistentDisk".
		pd := s.GCEPersistentDisk
		if pd.PDName == "" {
			errs = append(errs, field.Required(fld.Child("persistentDisk", "pdName"), ""))
		}
		if pd.Partition < 0 || pd.Partition > 255 {
			errs = append(errs, field.Invalid(fld.Child("persistentDisk", "partition"), pd.Partition, pdPartitionErrorMsg))
		}
	}
	if s.AWSElasticBlockStore != nil && one("awsElasticBlockStore") {
		pd := s.AWSElasticBlockStore
		if pd.VolumeID == "" {
			errs = append(errs, field.Required(fld.Child("awsElasticBlockStore", "volumeID"), ""))
		}
		if pd.Partition < 0 || pd.Partition > 255 {
			errs = append(errs, field.Invalid(fld.Child("awsElasticBlockStore", "partition"), pd.Partition, pdPartitionErrorMsg))
		}
	}
	if s.Secret != nil && one("secret") {
		errs = append(errs, secretVolume(s.Secret, fld, usersKept(s, "secret"))...)
	}
	if s.NFS != nil && one("nfs") {
		if s.NFS.Server == "" {
			errs = append(errs, field.Required(fld.Child("nfs", "server"), ""))
		}
		if s.NFS.Path == "" {
			errs = append(errs, field.Required(fld.Child("nfs", "path"), ""))
		}
		if !path.IsAbs(s.NFS.Path) {
			errs = append(errs, field.Invalid(fld.Child("nfs", "path"), s.NFS.Path, "must be an absolute path"))
		}
	}
	if s.ISCSI != nil {
		if one("iscsi") {
			errs = append(errs, iscsi(s.ISCSI, fld.Child("iscsi"))...)
		}
		if s.ISCSI.InitiatorName != nil && len(volName)+1+len(s.ISCSI.TargetPortal) > 64 {
			errs = append(errs, field.Invalid(fld.Child("name"), volName,
				"Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified."))
		}
	}
	if s.Glusterfs != nil && one("glusterfs") {
		if s.Glusterfs.EndpointsName == "" {
			errs = append(errs, field.Required(fld.Child("glusterfs", "endpoints"), ""))
		}
		if s.Glusterfs.Path == "" {
			errs = append(errs, field.Required(fld.Child("glusterfs", "path"), ""))
		}
	}
	if s.Flocker != nil && one("flocker") {
		f := s.Flocker
		if f.DatasetName == "" && f.DatasetUUID == "" {
			errs = append(errs, field.Required(fld.Child("flocker"), "one of datasetName and datasetUUID is required"))
		}
		if f.DatasetName != "" && f.DatasetUUID != "" {
			errs = append(errs, field.Invalid(fld.Child("flocker"), "resource", "datasetName and datasetUUID can not be specified simultaneously"))
		}
		if strings.Contains(f.DatasetName, "/") {
			errs = append(errs, field.Invalid(fld.Child("flocker", "datasetName"), f.DatasetName, "must not contain '/'"))
		}
	}
	if s.PersistentVolumeClaim != nil && one("persistentVolumeClaim") {
		if s.PersistentVolumeClaim.ClaimName == "" {
			errs = append(errs, field.Required(fld.Child("persistentVolumeClaim", "claimName"), ""))
		}
	}
	if s.RBD != nil && one("rbd") {
		if len(s.RBD.CephMonitors) == 0 {
			errs = append(errs, field.Required(fld.Child("rbd", "monitors"), ""))
		}
		if s.RBD.RBDImage == "" {
			errs = append(errs, field.Required(fld.Child("rbd", "image"), ""))
		}
	}
	if s.Cinder != nil && one("cinder") {
		if s.Cinder.VolumeID == "" {
			errs = append(errs, field.Required(fld.Child("cinder", "volumeID"), ""))
		}
		if s.Cinder.SecretRef != nil && s.Cinder.SecretRef.Name == "" {
			errs = append(errs, field.Required(fld.Child("cinder", "secretRef", "name"), ""))
		}
	}
	if s.CephFS != nil && one("cephFS") {
		// The API server names this "cephfs" here and "cephFS" above.
		if len(s.CephFS.Monitors) == 0 {
			errs = append(errs, field.Required(fld.Child("cephfs", "monitors"), ""))
		}
	}
	if s.Quobyte != nil && one("quobyte") {
		errs = append(errs, quobyte(s.Quobyte, fld.Child("quobyte"))...)
	}
	if s.DownwardAPI != nil && one("downwarAPI") { // sic: the API server's spelling
		errs = append(errs, downwardAPIVolume(s.DownwardAPI, fld, usersKept(s, "downwardAPI"))...)
	}
	if s.FC != nil && one("fc") {
		errs = append(errs, fc(s.FC, fld.Child("fc"))...)
	}
	if s.FlexVolume != nil && one("flexVolume") {
		if s.FlexVolume.Driver == "" {
			errs = append(errs, field.Required(fld.Child("flexVolume", "driver"), ""))
		}
		for k := range s.FlexVolume.Options {
			ns := k
			if before, _, ok := strings.Cut(k, "/"); ok {
				ns = before
			}
			norm := "." + strings.ToLower(ns)
			if strings.HasSuffix(norm, ".kubernetes.io") || strings.HasSuffix(norm, ".k8s.io") {
				errs = append(errs, field.Invalid(fld.Child("flexVolume", "options").Key(k), k, flexReservedMsg))
			}
		}
	}
	if s.ConfigMap != nil && one("configMap") {
		errs = append(errs, configMapVolume(s.ConfigMap, fld, usersKept(s, "configMap"))...)
	}
	if s.AzureFile != nil && one("azureFile") {
		if s.AzureFile.SecretName == "" {
			errs = append(errs, field.Required(fld.Child("azureFile", "secretName"), ""))
		}
		if s.AzureFile.ShareName == "" {
			errs = append(errs, field.Required(fld.Child("azureFile", "shareName"), ""))
		}
	}
	if s.VsphereVolume != nil && one("vsphereVolume") {
		if s.VsphereVolume.VolumePath == "" {
			errs = append(errs, field.Required(fld.Child("vsphereVolume", "volumePath"), ""))
		}
	}
	if s.PhotonPersistentDisk != nil && one("photonPersistentDisk") {
		if s.PhotonPersistentDisk.PdID == "" {
			errs = append(errs, field.Required(fld.Child("photonPersistentDisk", "pdID"), ""))
		}
	}
	if s.PortworxVolume != nil && one("portworxVolume") {
		if s.PortworxVolume.VolumeID == "" {
			errs = append(errs, field.Required(fld.Child("portworxVolume", "volumeID"), ""))
		}
	}
	if s.AzureDisk != nil && one("azureDisk") {
		errs = append(errs, azureDisk(s.AzureDisk, fld.Child("azureDisk"))...)
	}
	if s.StorageOS != nil && one("storageos") {
		errs = append(errs, storageOS(s.StorageOS, fld.Child("storageos"))...)
	}
	if s.Projected != nil && one("projected") {
		errs = append(errs, projected(s.Projected, fld.Child("projected"), usersKept(s, "projected"))...)
	}
	if s.ScaleIO != nil && one("scaleIO") {
		if s.ScaleIO.Gateway == "" {
			errs = append(errs, field.Required(fld.Child("scaleIO", "gateway"), ""))
		}
		if s.ScaleIO.System == "" {
			errs = append(errs, field.Required(fld.Child("scaleIO", "system"), ""))
		}
		if s.ScaleIO.VolumeName == "" {
			errs = append(errs, field.Required(fld.Child("scaleIO", "volumeName"), ""))
		}
	}
	if s.CSI != nil && one("csi") {
		errs = append(errs, csi(s.CSI, fld.Child("csi"))...)
	}
	if s.Ephemeral != nil && one("ephemeral") {
		errs = append(errs, ephemeral(s.Ephemeral, fld.Child("ephemeral"))...)
		if meta != nil && meta.Name != "" && volName != "" {
			pvcName := meta.Name + "-" + volName
			for _, msg := range apivalidation.NameIsDNSSubdomain(pvcName, false) {
				errs = append(errs, field.Invalid(fld.Child("name"), volName, fmt.Sprintf("PVC name %q: %v", pvcName, msg)))
			}
		}
	}
	if s.Image != nil && one("image") {
		// An empty pullPolicy is defaulted (ImageVolume is GA in v1.37).
		if s.Image.Reference == "" {
			errs = append(errs, field.Required(fld.Child("image", "reference"), ""))
		}
		switch s.Image.PullPolicy {
		case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		default:
			errs = append(errs, field.NotSupported(fld.Child("image", "pullPolicy"), s.Image.PullPolicy, pullPolicies))
		}
	}
	return *s, errs
}

// emptyDir: sizeLimit not negative; mode (v1.37, gated) 0 to 01777. The
// API server does not validate the medium.
func emptyDir(e *corev1.EmptyDirVolumeSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if e.SizeLimit != nil && e.SizeLimit.Sign() < 0 {
		errs = append(errs, field.Forbidden(fld.Child("emptyDir", "sizeLimit"), "SizeLimit field must be a valid resource quantity"))
	}
	if m := emptyDirMode(e); emptyDirVolumeMode && m != nil && (*m > 0o1777 || *m < 0) {
		errs = append(errs, field.Invalid(fld.Child("emptyDir", "mode"), *m, emptyDirModeErrorMsg))
	}
	return errs
}

// hostPath is validateHostPathVolumeSource; a nil type is defaulted to "".
func hostPath(h *corev1.HostPathVolumeSource, fld *field.Path) field.ErrorList {
	if h.Path == "" {
		return field.ErrorList{field.Required(fld.Child("hostPath", "path"), "")}
	}
	var errs field.ErrorList
	if strings.Contains(h.Path, "..") {
		errs = append(errs, noBacksteps(h.Path, fld.Child("hostPath", "path"))...)
	}
	if h.Type != nil {
		switch *h.Type {
		case corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory, corev1.HostPathFileOrCreate,
			corev1.HostPathFile, corev1.HostPathSocket, corev1.HostPathCharDev, corev1.HostPathBlockDev:
		default:
			errs = append(errs, field.NotSupported(fld.Child("hostPath", "type"), *h.Type, hostPathTypes))
		}
	}
	return errs
}

// secretVolume is validateSecretVolumeSource: the secret's name is only
// required (not checked as a name); a nil defaultMode is defaulted to 0644.
func secretVolume(s *corev1.SecretVolumeSource, fld *field.Path, users bool) field.ErrorList {
	var errs field.ErrorList
	if s.SecretName == "" {
		errs = append(errs, field.Required(fld.Child("secret", "secretName"), ""))
	}
	if badFileMode(s.DefaultMode) {
		errs = append(errs, fileMode(s.DefaultMode, fld.Child("secret", "defaultMode"))...)
	}
	errs = append(errs, user(users, secretDefaultUser(s), fld, "secret", "defaultUser")...)
	for i := range s.Items {
		errs = append(errs, keyToPath(&s.Items[i], at{fld, -1, "secret", users}, i)...)
	}
	return errs
}

// configMapVolume is validateConfigMapVolumeSource.
func configMapVolume(c *corev1.ConfigMapVolumeSource, fld *field.Path, users bool) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(fld.Child("configMap", "name"), ""))
	}
	if badFileMode(c.DefaultMode) {
		errs = append(errs, fileMode(c.DefaultMode, fld.Child("configMap", "defaultMode"))...)
	}
	errs = append(errs, user(users, configMapDefaultUser(c), fld, "configMap", "defaultUser")...)
	for i := range c.Items {
		errs = append(errs, keyToPath(&c.Items[i], at{fld, -1, "configMap", users}, i)...)
	}
	return errs
}

// keyToPath is validateKeyToPath for item i of src's items. The key is
// only required: the API server does not check it as a ConfigMap key.
func keyToPath(kp *corev1.KeyToPath, src at, i int) field.ErrorList {
	if kp.Key != "" && kp.Path != "" && !needsPathCheck(kp.Path) && !badFileMode(kp.Mode) && !badUser(src.users, keyToPathUser(kp)) {
		return nil
	}
	fld := src.path().Child("items").Index(i)
	var errs field.ErrorList
	if kp.Key == "" {
		errs = append(errs, field.Required(fld.Child("key"), ""))
	}
	if kp.Path == "" {
		errs = append(errs, field.Required(fld.Child("path"), ""))
	}
	errs = append(errs, localNonReservedPath(kp.Path, fld.Child("path"))...)
	errs = append(errs, fileMode(kp.Mode, fld.Child("mode"))...)
	errs = append(errs, user(src.users, keyToPathUser(kp), fld, "user")...)
	return errs
}

// downwardAPIVolume is validateDownwardAPIVolumeSource. The API server
// reports an item's errors at downwardAPI.<field>, without the item's index.
func downwardAPIVolume(d *corev1.DownwardAPIVolumeSource, fld *field.Path, users bool) field.ErrorList {
	var errs field.ErrorList
	if badFileMode(d.DefaultMode) {
		errs = append(errs, fileMode(d.DefaultMode, fld.Child("downwardAPI", "defaultMode"))...)
	}
	errs = append(errs, user(users, downwardDefaultUser(d), fld, "downwardAPI", "defaultUser")...)
	for i := range d.Items {
		errs = append(errs, downwardAPIFile(&d.Items[i], at{fld, -1, "downwardAPI", users})...)
	}
	return errs
}

// at is a source's path, built only when an error needs it: base, then
// sources[src] if src >= 0, then name.
type at struct {
	base *field.Path
	src  int
	name string
	// users: the source's user fields are validated (see usersKept).
	users bool
}

func (a at) path() *field.Path {
	p := a.base
	if a.src >= 0 {
		p = p.Child("sources").Index(a.src)
	}
	return p.Child(a.name)
}

// downwardAPIFile is validateDownwardAPIVolumeFile; the API server reports
// the file's errors under src's path, without the item's index.
func downwardAPIFile(f *corev1.DownwardAPIVolumeFile, src at) field.ErrorList {
	var errs field.ErrorList
	if f.Path == "" {
		errs = append(errs, field.Required(src.path().Child("path"), ""))
	}
	if needsPathCheck(f.Path) {
		errs = append(errs, localNonReservedPath(f.Path, src.path().Child("path"))...)
	}
	switch {
	case f.FieldRef != nil:
		errs = append(errs, volumeFieldRef(f.FieldRef, src)...)
		if f.ResourceFieldRef != nil {
			errs = append(errs, field.Invalid(src.path(), "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		}
	case f.ResourceFieldRef != nil:
		errs = append(errs, volumeResourceFieldRef(f.ResourceFieldRef, src)...)
	default:
		errs = append(errs, field.Required(src.path(), "one of fieldRef and resourceFieldRef is required"))
	}
	if badFileMode(f.Mode) {
		errs = append(errs, fileMode(f.Mode, src.path().Child("mode"))...)
	}
	if u := downwardFileUser(f); badUser(src.users, u) {
		errs = append(errs, user(true, u, src.path(), "user")...)
	}
	return errs
}

// volumeFieldRef is validateObjectFieldSelector with the fields a volume
// file may name, after podshelper.ConvertDownwardAPIFieldLabel; an empty
// apiVersion is defaulted to "v1".
func volumeFieldRef(fs *corev1.ObjectFieldSelector, src at) field.ErrorList {
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(src.path().Child("fieldRef", "fieldPath"), "")}
	}
	if fs.APIVersion != "" && fs.APIVersion != "v1" {
		return field.ErrorList{field.Invalid(src.path().Child("fieldRef", "fieldPath"), fs.FieldPath,
			"error converting fieldPath: unsupported pod version: "+fs.APIVersion)}
	}
	label := fs.FieldPath
	if p, sub, ok := splitSubscript(label); ok {
		switch p {
		case "metadata.annotations":
			sub = strings.ToLower(sub)
		case "metadata.labels":
		default:
			return field.ErrorList{field.Invalid(src.path().Child("fieldRef", "fieldPath"), label,
				"error converting fieldPath: field label does not support subscript: "+label)}
		}
		if len(validation.IsQualifiedName(sub)) == 0 {
			return nil
		}
		return qualifiedName(sub, src.path().Child("fieldRef"))
	}
	switch label {
	case "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid":
		return nil
	case "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
		"status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs":
		// Known to the conversion, not offered to volumes.
	case "spec.host":
		label = "spec.nodeName" // the conversion's old name for it
	default:
		return field.ErrorList{field.Invalid(src.path().Child("fieldRef", "fieldPath"), label,
			"error converting fieldPath: field label not supported: "+label)}
	}
	return field.ErrorList{field.NotSupported(src.path().Child("fieldRef", "fieldPath"), label, volumeFieldPaths)}
}

// splitSubscript is fieldpath.SplitMaybeSubscriptedPath: "a['b']" is "a",
// "b".
func splitSubscript(fieldPath string) (string, string, bool) {
	s, ok := strings.CutSuffix(fieldPath, "']")
	if !ok {
		return fieldPath, "", false
	}
	p, sub, ok := strings.Cut(s, "['")
	if !ok || p == "" {
		return fieldPath, "", false
	}
	return p, sub, true
}

// volumeResourceFieldRef is validateContainerResourceFieldSelector for a
// volume (the container's name is required) and its divisor check.
func volumeResourceFieldRef(fs *corev1.ResourceFieldSelector, src at) field.ErrorList {
	var errs field.ErrorList
	switch {
	case fs.ContainerName == "":
		errs = append(errs, field.Required(src.path().Child("resourceFieldRef", "containerName"), ""))
	case fs.Resource == "":
		errs = append(errs, field.Required(src.path().Child("resourceFieldRef", "resource"), ""))
	case !isResourceFieldPath(fs.Resource):
		errs = append(errs, field.NotSupported(src.path().Child("resourceFieldRef", "resource"), fs.Resource, resourceFieldPaths))
	}
	if fs.Divisor.IsZero() {
		return errs
	}
	// A copy: String caches its result in the quantity, and the pod is
	// only read here.
	divisor := fs.Divisor
	d := divisor.String()
	if msg := divisorError(fs.Resource, d); msg != "" {
		errs = append(errs, field.Invalid(src.path().Child("resourceFieldRef", "divisor"), fs.Resource, msg))
	}
	if strings.HasPrefix(fs.Resource, "requests.hugepages-") || strings.HasPrefix(fs.Resource, "limits.hugepages-") {
		if !isByteDivisor(d) {
			errs = append(errs, field.Invalid(src.path().Child("resourceFieldRef", "divisor"), fs.Resource,
				"only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource"))
		}
	}
	return errs
}

// isResourceFieldPath: a container resource the downward API offers.
func isResourceFieldPath(r string) bool {
	switch r {
	case "limits.cpu", "limits.memory", "limits.ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage":
		return true
	}
	return strings.HasPrefix(r, "requests.hugepages-") || strings.HasPrefix(r, "limits.hugepages-")
}

// divisorError is validateContainerResourceDivisor's message for the cpu,
// memory and ephemeral-storage resources, or "".
func divisorError(r, divisor string) string {
	switch r {
	case "limits.cpu", "requests.cpu":
		if divisor != "1m" && divisor != "1" {
			return "only divisor's values 1m and 1 are supported with the cpu resource"
		}
	case "limits.memory", "requests.memory":
		if !isByteDivisor(divisor) {
			return "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource"
		}
	case "limits.ephemeral-storage", "requests.ephemeral-storage":
		if !isByteDivisor(divisor) {
			return "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage resource"
		}
	}
	return ""
}

// isByteDivisor: a divisor the API server accepts for a byte quantity.
func isByteDivisor(d string) bool {
	switch d {
	case "1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei":
		return true
	}
	return false
}

// projected is validateProjectedVolumeSource and validateProjectionSources;
// fld is the volume's projected path. A nil defaultMode (0644) and a nil
// serviceAccountToken expirationSeconds (3600) are defaulted.
func projected(p *corev1.ProjectedVolumeSource, fld *field.Path, users bool) field.ErrorList {
	var errs field.ErrorList
	if badFileMode(p.DefaultMode) {
		errs = append(errs, fileMode(p.DefaultMode, fld.Child("defaultMode"))...)
	}
	errs = append(errs, user(users, projectedDefaultUser(p), fld, "defaultUser")...)

	// The paths written so far, for "conflicting duplicate paths": a
	// slice, as most projections write few. A serviceAccountToken's path
	// is not among them (the API server does not check it).
	paths := make(pathSet, 0, 8)
	for i := range p.Sources {
		src := &p.Sources[i]
		n := 0
		if s := src.Secret; s != nil {
			n++
			a := at{fld, i, "secret", sourceUsersKept(src, "secret")}
			if s.Name == "" {
				errs = append(errs, field.Required(a.path().Child("name"), ""))
			}
			for j := range s.Items {
				errs = append(errs, keyToPath(&s.Items[j], a, j)...)
				if s.Items[j].Path != "" && paths.seen(s.Items[j].Path) {
					errs = append(errs, field.Invalid(fld, s.Name, duplicatePathsMsg))
				}
			}
		}
		if c := src.ConfigMap; c != nil {
			n++
			a := at{fld, i, "configMap", sourceUsersKept(src, "configMap")}
			if c.Name == "" {
				errs = append(errs, field.Required(a.path().Child("name"), ""))
			}
			for j := range c.Items {
				errs = append(errs, keyToPath(&c.Items[j], a, j)...)
				if c.Items[j].Path != "" && paths.seen(c.Items[j].Path) {
					errs = append(errs, field.Invalid(fld, c.Name, duplicatePathsMsg))
				}
			}
		}
		if d := src.DownwardAPI; d != nil {
			n++
			a := at{fld, i, "downwardAPI", sourceUsersKept(src, "downwardAPI")}
			for j := range d.Items {
				errs = append(errs, downwardAPIFile(&d.Items[j], a)...)
				if f := d.Items[j].Path; f != "" && paths.seen(f) {
					errs = append(errs, field.Invalid(fld, f, duplicatePathsMsg))
				}
			}
		}
		if t := src.ServiceAccountToken; t != nil {
			n++
			errs = append(errs, serviceAccountToken(t, fld, at{fld, i, "serviceAccountToken", sourceUsersKept(src, "serviceAccountToken")})...)
		}
		if b := src.ClusterTrustBundle; b != nil {
			n++
			errs = append(errs, clusterTrustBundle(b, at{fld, i, "clusterTrustBundle", sourceUsersKept(src, "clusterTrustBundle")})...)
			// Even an empty path.
			if paths.seen(b.Path) {
				errs = append(errs, field.Invalid(fld, b.Path, duplicatePathsMsg))
			}
		}
		if c := src.PodCertificate; c != nil {
			n++
			errs = append(errs, podCertificate(c, fld, at{fld, i, "podCertificate", sourceUsersKept(src, "podCertificate")}, &paths)...)
		}
		if n > 1 {
			errs = append(errs, field.Forbidden(fld.Child("sources").Index(i), "may not specify more than 1 volume type per source"))
		}
	}
	return errs
}

// pathSet is a small set of paths.
type pathSet []string

// seen reports whether p is in the set, and adds it.
func (s *pathSet) seen(p string) bool {
	for _, q := range *s {
		if q == p {
			return true
		}
	}
	*s = append(*s, p)
	return false
}

// serviceAccountToken: expirationSeconds from 10 minutes to 2^32 seconds
// (nil is defaulted to an hour); a path, reported at projected.path (sic),
// relative without "..", not starting with "..". The audience is not
// validated. fld is the projected path.
func serviceAccountToken(t *corev1.ServiceAccountTokenProjection, fld *field.Path, src at) field.ErrorList {
	var errs field.ErrorList
	if exp := t.ExpirationSeconds; exp != nil {
		if *exp < 10*60 {
			errs = append(errs, field.Invalid(src.path().Child("expirationSeconds"), *exp, "may not specify a duration less than 10 minutes"))
		}
		if *exp > 1<<32 {
			errs = append(errs, field.Invalid(src.path().Child("expirationSeconds"), *exp, "may not specify a duration larger than 2^32 seconds"))
		}
	}
	if t.Path == "" {
		errs = append(errs, field.Required(fld.Child("path"), ""))
	} else if needsPathCheck(t.Path) {
		errs = append(errs, localNonReservedPath(t.Path, fld.Child("path"))...)
	}
	if u := tokenUser(t); badUser(src.users, u) {
		errs = append(errs, user(true, u, src.path(), "user")...)
	}
	return errs
}

// clusterTrustBundle: name, or signerName with an optional labelSelector;
// a path.
func clusterTrustBundle(b *corev1.ClusterTrustBundleProjection, src at) field.ErrorList {
	var errs field.ErrorList
	switch {
	case b.Name != nil && b.SignerName != nil:
		errs = append(errs, field.Invalid(src.path(), b, "only one of name and signerName may be used"))
	case b.Name != nil:
		name := *b.Name
		if name == "" {
			errs = append(errs, field.Required(src.path().Child("name"), "must be a valid object name"))
		}
		// extractSignerNameFromClusterTrustBundleName: what comes before
		// the last ':', with ':' for '/'.
		signer := ""
		if i := strings.LastIndex(name, ":"); i >= 0 {
			signer = strings.ReplaceAll(name[:i], ":", "/")
		}
		for _, msg := range clusterTrustBundleName(signer, name) {
			errs = append(errs, field.Invalid(src.path().Child("name"), name, "not a valid clustertrustbundlename: "+msg))
		}
		if b.LabelSelector != nil {
			errs = append(errs, field.Invalid(src.path().Child("labelSelector"), b.LabelSelector, "labelSelector must be unset if name is specified"))
		}
	case b.SignerName != nil:
		if *b.SignerName == "" {
			errs = append(errs, field.Required(src.path().Child("signerName"), "must be a valid signer name"))
		}
		errs = append(errs, signerName(*b.SignerName, src.path().Child("signerName"))...)
		if b.LabelSelector != nil {
			errs = append(errs, metavalidation.ValidateLabelSelector(b.LabelSelector,
				metavalidation.LabelSelectorValidationOptions{}, src.path().Child("labelSelector"))...)
		}
	default:
		errs = append(errs, field.Required(src.path(), "either name or signerName must be specified"))
	}
	if b.Path == "" {
		errs = append(errs, field.Required(src.path().Child("path"), ""))
	}
	if u := trustBundleUser(b); badUser(src.users, u) {
		errs = append(errs, user(true, u, src.path(), "user")...)
	}
	if needsPathCheck(b.Path) {
		errs = append(errs, localNonReservedPath(b.Path, src.path().Child("path"))...)
	}
	return errs
}

// clusterTrustBundleName is ValidateClusterTrustBundleName(signer)(name).
func clusterTrustBundleName(signer, name string) []string {
	if signer == "" {
		if strings.Contains(name, ":") {
			return []string{`ClusterTrustBundle without signer name must not have ":" in its name`}
		}
		return apivalidation.NameIsDNSSubdomain(name, false)
	}
	prefix := strings.ReplaceAll(signer, "/", ":") + ":"
	if !strings.HasPrefix(name, prefix) {
		return []string{fmt.Sprintf("ClusterTrustBundle for signerName %s must be named with prefix %s", signer, prefix)}
	}
	return apivalidation.NameIsDNSSubdomain(strings.TrimPrefix(name, prefix), false)
}

// podCertificate: signerName, keyType, maxExpirationSeconds, at least one
// path (each relative without "..", unique in the projection), user
// annotations. No field is defaulted. fld is the projected path.
func podCertificate(c *corev1.PodCertificateProjection, fld *field.Path, src at, paths *pathSet) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, signerName(c.SignerName, src.path().Child("signerName"))...)
	if c.UserAnnotations != nil {
		errs = append(errs, userAnnotations(c.UserAnnotations, src.path().Child("userAnnotations"))...)
	}
	if u := podCertificateUser(c); badUser(src.users, u) {
		errs = append(errs, user(true, u, src.path(), "user")...)
	}
	switch c.KeyType {
	case "RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519":
	default:
		errs = append(errs, field.NotSupported(src.path().Child("keyType"), c.KeyType, podCertificateKeyTypes))
	}
	if m := c.MaxExpirationSeconds; m != nil {
		if *m < 3600 {
			errs = append(errs, field.Invalid(src.path().Child("maxExpirationSeconds"), *m, "if provided, maxExpirationSeconds must be >= 3600"))
		}
		limit := maxMaxExpirationSeconds
		if isKubernetesSignerName(c.SignerName) {
			limit = kubernetesMaxMaxExpirationSeconds
		}
		if *m > int32(limit) {
			errs = append(errs, field.Invalid(src.path().Child("maxExpirationSeconds"), *m, fmt.Sprintf("if provided, maxExpirationSeconds must be <= %d", limit)))
		}
	}
	n := 0
	for _, p := range [...]struct{ name, value string }{
		{"credentialBundlePath", c.CredentialBundlePath},
		{"keyPath", c.KeyPath},
		{"certificateChainPath", c.CertificateChainPath},
	} {
		if p.value == "" {
			continue
		}
		n++
		if needsPathCheck(p.value) {
			errs = append(errs, localNonReservedPath(p.value, src.path().Child(p.name))...)
		}
		if paths.seen(p.value) {
			errs = append(errs, field.Invalid(fld, p.value, duplicatePathsMsg))
		}
	}
	if n == 0 {
		errs = append(errs, field.Required(src.path(), "specify at least one of credentialBundlePath, keyPath, and certificateChainPath"))
	}
	return errs
}

// isKubernetesSignerName: a signer reserved by the Kubernetes project.
func isKubernetesSignerName(signer string) bool {
	host, _, _ := strings.Cut(signer, "/")
	return host == "kubernetes.io" || strings.HasSuffix(host, ".kubernetes.io")
}

// signerName is ValidateSignerName: "example.com/signer-name".
func signerName(signer string, fld *field.Path) field.ErrorList {
	if signer == "" {
		return field.ErrorList{field.Required(fld, "")}
	}
	segments := strings.Split(signer, "/")
	if len(segments) != 2 {
		return field.ErrorList{field.Invalid(fld, signer, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	if len(segments[0]) > validation.DNS1123SubdomainMaxLength {
		errs = append(errs, field.TooLong(fld, "", validation.DNS1123SubdomainMaxLength))
	}
	domainLabels := strings.Split(segments[0], ".")
	for _, lbl := range domainLabels {
		if msgs := labelMsgs(lbl); len(msgs) > 0 {
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(fld, segments[0], fmt.Sprintf("validating label %q: %s", lbl, msg)))
			}
			break
		}
	}
	if len(domainLabels) < 2 {
		errs = append(errs, field.Invalid(fld, segments[0], "should be a domain with at least two segments separated by dots"))
	}
	for _, lbl := range strings.Split(segments[1], ".") {
		if msgs := subdomainMsgs(lbl); len(msgs) > 0 {
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(fld, segments[1], fmt.Sprintf("validating label %q: %s", lbl, msg)))
			}
			break
		}
	}
	maxPath := validation.DNS1123SubdomainMaxLength + validation.DNS1123LabelMaxLength + 1
	if maxSigner := validation.DNS1123SubdomainMaxLength + maxPath + 1; len(signer) > maxSigner {
		errs = append(errs, field.TooLong(fld, "", maxSigner))
	}
	return errs
}

// userAnnotations is ValidateUserAnnotations: domain-prefixed keys (any
// case), total size.
func userAnnotations(a map[string]string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for k := range a {
		errs = append(errs, validation.IsDomainPrefixedKey(fld, strings.ToLower(k))...)
	}
	if err := apivalidation.ValidateAnnotationsSize(a); err != nil {
		errs = append(errs, field.TooLong(fld, "", apivalidation.TotalAnnotationSizeLimitB))
	}
	return errs
}

// iscsi is validateISCSIVolumeSource; fld is the iscsi path.
func iscsi(s *corev1.ISCSIVolumeSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.TargetPortal == "" {
		errs = append(errs, field.Required(fld.Child("targetPortal"), ""))
	}
	if s.IQN == "" {
		errs = append(errs, field.Required(fld.Child("iqn"), ""))
	} else if msg := iscsiName(s.IQN); msg != "" {
		errs = append(errs, field.Invalid(fld.Child("iqn"), s.IQN, msg))
	}
	if s.Lun < 0 || s.Lun > 255 {
		errs = append(errs, field.Invalid(fld.Child("lun"), s.Lun, validation.InclusiveRangeError(0, 255)))
	}
	if (s.DiscoveryCHAPAuth || s.SessionCHAPAuth) && s.SecretRef == nil {
		errs = append(errs, field.Required(fld.Child("secretRef"), ""))
	}
	if s.InitiatorName != nil {
		if msg := iscsiName(*s.InitiatorName); msg != "" {
			errs = append(errs, field.Invalid(fld.Child("initiatorname"), *s.InitiatorName, msg))
		}
	}
	return errs
}

// iscsiName is the API server's message for a bad IQN or initiator name,
// or "".
func iscsiName(name string) string {
	switch {
	case strings.HasPrefix(name, "iqn"):
		if !iscsiIqnRegex.MatchString(name) {
			return iscsiFormatMsg
		}
	case strings.HasPrefix(name, "eui"):
		if !iscsiEuiRegex.MatchString(name) {
			return iscsiFormatMsg
		}
	case strings.HasPrefix(name, "naa"):
		if !iscsiNaaRegex.MatchString(name) {
			return iscsiFormatMsg
		}
	default:
		return iscsiPrefixMsg
	}
	return ""
}

// fc is validateFCVolumeSource; fld is the fc path.
func fc(s *corev1.FCVolumeSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(s.TargetWWNs) < 1 && len(s.WWIDs) < 1 {
		errs = append(errs, field.Required(fld.Child("targetWWNs"), "must specify either targetWWNs or wwids, but not both"))
	}
	if len(s.TargetWWNs) != 0 && len(s.WWIDs) != 0 {
		errs = append(errs, field.Invalid(fld.Child("targetWWNs"), s.TargetWWNs, "targetWWNs and wwids can not be specified simultaneously"))
	}
	if len(s.TargetWWNs) != 0 {
		if s.Lun == nil {
			errs = append(errs, field.Required(fld.Child("lun"), "lun is required if targetWWNs is specified"))
		} else if *s.Lun < 0 || *s.Lun > 255 {
			errs = append(errs, field.Invalid(fld.Child("lun"), s.Lun, validation.InclusiveRangeError(0, 255)))
		}
	}
	return errs
}

// quobyte is validateQuobyteVolumeSource; fld is the quobyte path.
func quobyte(s *corev1.QuobyteVolumeSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	const registryMsg = "must be a host:port pair or multiple pairs separated by commas"
	switch {
	case s.Registry == "":
		errs = append(errs, field.Required(fld.Child("registry"), registryMsg))
	case len(s.Tenant) >= 65:
		errs = append(errs, field.Required(fld.Child("tenant"), "must be a UUID and may not exceed a length of 64 characters"))
	default:
		for _, pair := range strings.Split(s.Registry, ",") {
			if _, _, err := net.SplitHostPort(pair); err != nil {
				errs = append(errs, field.Invalid(fld.Child("registry"), s.Registry, registryMsg))
			}
		}
	}
	if s.Volume == "" {
		errs = append(errs, field.Required(fld.Child("volume"), ""))
	}
	return errs
}

// azureDisk is validateAzureDisk after defaulting (cachingMode ReadWrite,
// kind Shared); fld is the azureDisk path.
func azureDisk(s *corev1.AzureDiskVolumeSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.DiskName == "" {
		errs = append(errs, field.Required(fld.Child("diskName"), ""))
	}
	if s.DataDiskURI == "" {
		errs = append(errs, field.Required(fld.Child("diskURI"), ""))
	}
	if m := s.CachingMode; m != nil && *m != corev1.AzureDataDiskCachingNone && *m != corev1.AzureDataDiskCachingReadOnly && *m != corev1.AzureDataDiskCachingReadWrite {
		errs = append(errs, field.NotSupported(fld.Child("cachingMode"), *m, azureCachingModes))
	}
	kind := corev1.AzureSharedBlobDisk
	if s.Kind != nil {
		kind = *s.Kind
	}
	if kind != corev1.AzureSharedBlobDisk && kind != corev1.AzureDedicatedBlobDisk && kind != corev1.AzureManagedDisk {
		errs = append(errs, field.NotSupported(fld.Child("kind"), kind, azureDiskKinds))
	}
	if kind == corev1.AzureManagedDisk && !strings.HasPrefix(s.DataDiskURI, "/subscriptions/") {
		errs = append(errs, field.NotSupported(fld.Child("diskURI"), s.DataDiskURI,
			[]string{"/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"}))
	}
	if kind != corev1.AzureManagedDisk && !strings.HasPrefix(s.DataDiskURI, "https://") {
		errs = append(errs, field.NotSupported(fld.Child("diskURI"), s.DataDiskURI,
			[]string{"https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"}))
	}
	return errs
}

// storageOS is validateStorageOSVolumeSource; fld is the storageos path.
func storageOS(s *corev1.StorageOSVolumeSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.VolumeName == "" {
		errs = append(errs, field.Required(fld.Child("volumeName"), ""))
	} else {
		errs = append(errs, dnsLabel(s.VolumeName, fld.Child("volumeName"))...)
	}
	if s.VolumeNamespace != "" {
		errs = append(errs, dnsLabel(s.VolumeNamespace, fld.Child("volumeNamespace"))...)
	}
	if s.SecretRef != nil && s.SecretRef.Name == "" {
		errs = append(errs, field.Required(fld.Child("secretRef", "name"), ""))
	}
	return errs
}

// csi is validateCSIVolumeSource; fld is the csi path.
func csi(s *corev1.CSIVolumeSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch d := s.Driver; {
	case d == "":
		errs = append(errs, field.Required(fld.Child("driver"), ""))
	default:
		if len(d) > 63 {
			errs = append(errs, field.TooLong(fld.Child("driver"), "", 63))
		}
		for _, msg := range subdomainMsgs(strings.ToLower(d)) {
			errs = append(errs, field.Invalid(fld.Child("driver"), d, msg))
		}
	}
	if ref := s.NodePublishSecretRef; ref != nil {
		if ref.Name == "" {
			errs = append(errs, field.Required(fld.Child("nodePublishSecretRef", "name"), ""))
		} else {
			// The API server reports this at csi.name.
			for _, msg := range apivalidation.NameIsDNSSubdomain(ref.Name, false) {
				errs = append(errs, field.Invalid(fld.Child("name"), ref.Name, msg))
			}
		}
	}
	return errs
}

// ephemeral is validateEphemeralVolumeSource: a claim template with only
// labels and annotations in its metadata and a valid claim spec; fld is the
// ephemeral path.
func ephemeral(s *corev1.EphemeralVolumeSource, fld *field.Path) field.ErrorList {
	t := s.VolumeClaimTemplate
	if t == nil {
		return field.ErrorList{field.Required(fld.Child("volumeClaimTemplate"), "")}
	}
	fld = fld.Child("volumeClaimTemplate")
	metaPath := fld.Child("metadata")
	errs := apivalidation.ValidateAnnotations(t.Annotations, metaPath.Child("annotations"))
	errs = append(errs, metavalidation.ValidateLabels(t.Labels, metaPath.Child("labels"))...)
	errs = append(errs, fieldAllowList(t.ObjectMeta, templateMetaFields, "cannot be set", metaPath)...)
	return append(errs, claimSpec(&t.Spec, fld.Child("spec"))...)
}

var templateMetaFields = map[string]bool{"Annotations": true, "Labels": true}

// claimSpec is ValidatePersistentVolumeClaimSpec for a pod's claim
// template, with v1.37's options (VolumeAttributesClass on); a nil
// volumeMode is defaulted to Filesystem.
func claimSpec(s *corev1.PersistentVolumeClaimSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(s.AccessModes) == 0 {
		errs = append(errs, field.Required(fld.Child("accessModes"), "at least 1 access mode is required"))
	}
	if s.Selector != nil {
		errs = append(errs, metavalidation.ValidateLabelSelector(s.Selector, metavalidation.LabelSelectorValidationOptions{}, fld.Child("selector"))...)
	}
	rwop, other := false, false
	for _, m := range s.AccessModes {
		switch m {
		case corev1.ReadWriteOncePod:
			rwop = true
		case corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany:
			other = true
		default:
			errs = append(errs, field.NotSupported(fld.Child("accessModes"), m, accessModes))
		}
	}
	if rwop && other {
		errs = append(errs, field.Forbidden(fld.Child("accessModes"), "may not use ReadWriteOncePod with other access modes"))
	}
	if storage, ok := s.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(fld.Child("resources").Key(string(corev1.ResourceStorage)), ""))
	} else if storage.Sign() <= 0 {
		errs = append(errs, positiveQuantity(storage, fld.Child("resources").Key(string(corev1.ResourceStorage)))...)
	}
	if c := s.StorageClassName; c != nil && *c != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*c, false) {
			errs = append(errs, field.Invalid(fld.Child("storageClassName"), *c, msg))
		}
	}
	if m := s.VolumeMode; m != nil && *m != corev1.PersistentVolumeBlock && *m != corev1.PersistentVolumeFilesystem {
		errs = append(errs, field.NotSupported(fld.Child("volumeMode"), *m, volumeModes))
	}
	if d := s.DataSource; d != nil {
		errs = append(errs, dataSource(d.Name, d.Kind, d.APIGroup, fld.Child("dataSource"))...)
	}
	if d := s.DataSourceRef; d != nil {
		errs = append(errs, dataSource(d.Name, d.Kind, d.APIGroup, fld.Child("dataSourceRef"))...)
		if d.Namespace != nil && *d.Namespace != "" {
			for _, msg := range apivalidation.ValidateNamespaceName(*d.Namespace, false) {
				errs = append(errs, field.Invalid(fld.Child("dataSourceRef", "namespace"), *d.Namespace, msg))
			}
		}
	}
	if ref := s.DataSourceRef; ref != nil && ref.Namespace != nil && *ref.Namespace != "" {
		if s.DataSource != nil {
			errs = append(errs, field.Invalid(fld, fld.Child("dataSource"), "may not be specified when dataSourceRef.namespace is specified"))
		}
	} else if s.DataSource != nil && ref != nil {
		d := s.DataSource
		sameGroup := (d.APIGroup == nil) == (ref.APIGroup == nil) && (d.APIGroup == nil || *d.APIGroup == *ref.APIGroup)
		if !sameGroup || d.Kind != ref.Kind || d.Name != ref.Name {
			errs = append(errs, field.Invalid(fld, fld.Child("dataSource"), "must match dataSourceRef"))
		}
	}
	if c := s.VolumeAttributesClassName; c != nil && *c != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*c, false) {
			errs = append(errs, field.Invalid(fld.Child("volumeAttributesClassName"), *c, msg))
		}
	}
	return errs
}

// dataSource is validateDataSource and validateDataSourceRef's common part.
func dataSource(name, kind string, apiGroup *string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(fld.Child("name"), ""))
	}
	if kind == "" {
		errs = append(errs, field.Required(fld.Child("kind"), ""))
	}
	group := ""
	if apiGroup != nil {
		group = *apiGroup
	}
	if group == "" && kind != "PersistentVolumeClaim" {
		errs = append(errs, field.Invalid(fld, kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
	}
	if group != "" {
		for _, msg := range subdomainMsgs(group) {
			errs = append(errs, field.Invalid(fld.Child("apiGroup"), group, msg))
		}
	}
	return errs
}

// needsPathCheck: target may fail localNonReservedPath (it is absolute or
// has ".."); a cheap test before building field paths.
func needsPathCheck(target string) bool {
	return strings.HasPrefix(target, "/") || strings.Contains(target, "..")
}

// badFileMode: mode is set and outside 0 to 0777.
func badFileMode(mode *int32) bool {
	return mode != nil && (*mode > 0o777 || *mode < 0)
}

// badUser: users (the user field is validated) and u is a set UID outside
// the valid range.
func badUser(users bool, u *int64) bool {
	return users && u != nil && len(validation.IsValidUserID(*u)) > 0
}

// usersKept: the user fields of s's source which are validated. With
// AtomicWriteVolumeUserFields off, the API server's PrepareForCreate drops
// those of the first of secret, configMap, downwardAPI and projected that
// is set (a switch), and keeps the others': it validates them if it
// validates that source (a volume with more than one source).
func usersKept(s *corev1.VolumeSource, which string) bool {
	if atomicWriteVolumeUserFields {
		return true
	}
	switch {
	case s.Secret != nil:
		return which != "secret"
	case s.ConfigMap != nil:
		return which != "configMap"
	case s.DownwardAPI != nil:
		return which != "downwardAPI"
	case s.Projected != nil:
		return which != "projected"
	}
	return true
}

// sourceUsersKept is usersKept for a projected volume's source: the first
// set of secret, downwardAPI, configMap, serviceAccountToken,
// clusterTrustBundle and podCertificate has its user fields dropped.
func sourceUsersKept(p *corev1.VolumeProjection, which string) bool {
	if atomicWriteVolumeUserFields {
		return true
	}
	switch {
	case p.Secret != nil:
		return which != "secret"
	case p.DownwardAPI != nil:
		return which != "downwardAPI"
	case p.ConfigMap != nil:
		return which != "configMap"
	case p.ServiceAccountToken != nil:
		return which != "serviceAccountToken"
	case p.ClusterTrustBundle != nil:
		return which != "clusterTrustBundle"
	case p.PodCertificate != nil:
		return which != "podCertificate"
	}
	return true
}

// user is validateUserField at base.names.
func user(users bool, u *int64, base *field.Path, names ...string) field.ErrorList {
	if !badUser(users, u) {
		return nil
	}
	fld := base.Child(names[0], names[1:]...)
	var errs field.ErrorList
	for _, msg := range validation.IsValidUserID(*u) {
		errs = append(errs, field.Invalid(fld, *u, msg))
	}
	return errs
}
