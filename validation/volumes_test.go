package validation

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/podstart/podstart/defaults"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// volErr is one expected error: its type, field path and, when set, its
// detail (the API server's wording).
type volErr struct {
	typ    field.ErrorType
	field  string
	detail string
}

func vReq(f string, detail ...string) volErr {
	return volErr{field.ErrorTypeRequired, f, strings.Join(detail, "")}
}
func vInv(f string, detail ...string) volErr {
	return volErr{field.ErrorTypeInvalid, f, strings.Join(detail, "")}
}
func vForb(f string, detail ...string) volErr {
	return volErr{field.ErrorTypeForbidden, f, strings.Join(detail, "")}
}
func vNots(f string, detail ...string) volErr {
	return volErr{field.ErrorTypeNotSupported, f, strings.Join(detail, "")}
}
func vDup(f string) volErr      { return volErr{field.ErrorTypeDuplicate, f, ""} }
func vNotFound(f string) volErr { return volErr{field.ErrorTypeNotFound, f, ""} }
func vTooLong(f string) volErr  { return volErr{field.ErrorTypeTooLong, f, ""} }

// volPod is a valid pod with no volumes.
func volPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"},
		Spec: corev1.PodSpec{
			ServiceAccountName: "sa",
			Containers:         []corev1.Container{{Name: "c", Image: "img"}},
		},
	}
}

// vols sets the pod's volumes.
func withVols(vs ...corev1.Volume) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.Volumes = vs }
}

// vol is a volume named "v".
func volV(src corev1.VolumeSource) corev1.Volume { return corev1.Volume{Name: "v", VolumeSource: src} }

func volNamed(name string, src corev1.VolumeSource) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: src}
}

func emptyDirSrc() corev1.VolumeSource {
	return corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
}

func hostPathSrc(p string, typ *corev1.HostPathType) corev1.VolumeSource {
	return corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p, Type: typ}}
}

func secretSrc(items ...corev1.KeyToPath) corev1.VolumeSource {
	return corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", Items: items}}
}

func configMapSrc(items ...corev1.KeyToPath) corev1.VolumeSource {
	return corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Items: items}}
}

func downwardSrc(items ...corev1.DownwardAPIVolumeFile) corev1.VolumeSource {
	return corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: items}}
}

func projectedSrc(sources ...corev1.VolumeProjection) corev1.VolumeSource {
	return corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}
}

func fieldFile(p, fieldPath string) corev1.DownwardAPIVolumeFile {
	return corev1.DownwardAPIVolumeFile{Path: p, FieldRef: &corev1.ObjectFieldSelector{FieldPath: fieldPath}}
}

func resourceFile(p, res, divisor string) corev1.DownwardAPIVolumeFile {
	f := corev1.DownwardAPIVolumeFile{Path: p, ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "c", Resource: res}}
	if divisor != "" {
		f.ResourceFieldRef.Divisor = resource.MustParse(divisor)
	}
	return f
}

func keyPath(key, p string) corev1.KeyToPath { return corev1.KeyToPath{Key: key, Path: p} }

func secretProj(name string, items ...corev1.KeyToPath) corev1.VolumeProjection {
	return corev1.VolumeProjection{Secret: &corev1.SecretProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: items}}
}

func configMapProj(name string, items ...corev1.KeyToPath) corev1.VolumeProjection {
	return corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: items}}
}

func downwardProj(items ...corev1.DownwardAPIVolumeFile) corev1.VolumeProjection {
	return corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{Items: items}}
}

func tokenProj(p string, exp *int64) corev1.VolumeProjection {
	return corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: p, ExpirationSeconds: exp}}
}

func bundleProj(b corev1.ClusterTrustBundleProjection) corev1.VolumeProjection {
	return corev1.VolumeProjection{ClusterTrustBundle: &b}
}

func certProj(c corev1.PodCertificateProjection) corev1.VolumeProjection {
	return corev1.VolumeProjection{PodCertificate: &c}
}

// goodCert is a valid pod certificate projection.
func goodCert() corev1.PodCertificateProjection {
	return corev1.PodCertificateProjection{SignerName: "example.com/signer", KeyType: "ED25519", CredentialBundlePath: "creds.pem"}
}

// claimTemplate is a valid ephemeral volume's claim template.
func claimTemplate() *corev1.PersistentVolumeClaimTemplate {
	return &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
}

func ephemeralSrc(mutate func(*corev1.PersistentVolumeClaimTemplate)) corev1.VolumeSource {
	t := claimTemplate()
	if mutate != nil {
		mutate(t)
	}
	return corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: t}}
}

// fileKeyRefEnv gives container c an environment variable from a file of
// volume name.
func fileKeyRefEnv(name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "E", ValueFrom: &corev1.EnvVarSource{
			FileKeyRef: &corev1.FileKeySelector{VolumeName: name, Path: "env.txt", Key: "K"}}}}
	}
}

func volBoth(fs ...func(*corev1.Pod)) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		for _, f := range fs {
			f(p)
		}
	}
}

const (
	v0    = "spec.volumes[0]"
	proj0 = "spec.volumes[0].projected"
	src0  = "spec.volumes[0].projected.sources[0]"
)

// volumeCase is one row: a change to volPod and the errors it gives.
type volumeCase struct {
	name string
	// gates: with v1.37's alpha volume gates on (EmptyDirVolumeMode,
	// AtomicWriteVolumeUserFields), as ValidatePodCreate validates them.
	gates  bool
	mutate func(*corev1.Pod)
	want   []volErr
}

var hostPathTypeList = `supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"`

var volumeCases = []volumeCase{
	// Valid volumes.
	{name: "no volumes", mutate: withVols()},
	{name: "emptyDir", mutate: withVols(volV(emptyDirSrc()))},
	{name: "emptyDir memory with size", mutate: withVols(volV(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
		Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("64Mi"))}}))},
	{name: "emptyDir size 0", mutate: withVols(volV(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("0"))}}))},
	{name: "emptyDir unknown medium (not validated)", mutate: withVols(volV(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: "Disk"}}))},
	{name: "no source is a defaulted emptyDir", mutate: withVols(volV(corev1.VolumeSource{}))},
	{name: "hostPath nil type", mutate: withVols(volV(hostPathSrc("/var/log", nil)))},
	{name: "hostPath every type", mutate: withVols(
		volNamed("a", hostPathSrc("/a", ptr.To(corev1.HostPathUnset))),
		volNamed("b", hostPathSrc("/b", ptr.To(corev1.HostPathDirectoryOrCreate))),
		volNamed("c", hostPathSrc("/c", ptr.To(corev1.HostPathDirectory))),
		volNamed("d", hostPathSrc("/d", ptr.To(corev1.HostPathFileOrCreate))),
		volNamed("e", hostPathSrc("/e", ptr.To(corev1.HostPathFile))),
		volNamed("f", hostPathSrc("/f", ptr.To(corev1.HostPathSocket))),
		volNamed("g", hostPathSrc("/g", ptr.To(corev1.HostPathCharDev))),
		volNamed("h", hostPathSrc("/h", ptr.To(corev1.HostPathBlockDev))),
	)},
	{name: "hostPath relative path and dots in names", mutate: withVols(volV(hostPathSrc("a..b/..c/d..", nil)))},
	{name: "secret", mutate: withVols(volV(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s",
		DefaultMode: ptr.To[int32](0o777), Items: []corev1.KeyToPath{{Key: "k", Path: "a/b..c/..d", Mode: ptr.To[int32](0)}}}}))},
	{name: "secret defaultMode 0", mutate: withVols(volV(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](0)}}))},
	{name: "secret name not checked as a name", mutate: withVols(volV(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "Not_A/Name"}}))},
	{name: "item key not checked as a ConfigMap key", mutate: withVols(volV(secretSrc(keyPath("../bad key", "p"))))},
	{name: "configMap", mutate: withVols(volV(configMapSrc(keyPath("k", "p"), keyPath("k2", "dir/p2"))))},
	{name: "downwardAPI fields", mutate: withVols(volV(downwardSrc(
		fieldFile("name", "metadata.name"), fieldFile("ns", "metadata.namespace"), fieldFile("uid", "metadata.uid"),
		fieldFile("labels", "metadata.labels"), fieldFile("annotations", "metadata.annotations"),
		fieldFile("label", "metadata.labels['app.kubernetes.io/name']"),
		fieldFile("annotation", "metadata.annotations['Example.COM/Upper']"),
		corev1.DownwardAPIVolumeFile{Path: "v1", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}},
	)))},
	{name: "downwardAPI resources and divisors", mutate: withVols(volV(downwardSrc(
		resourceFile("a", "limits.cpu", "1m"), resourceFile("b", "requests.cpu", "1"),
		resourceFile("c", "limits.memory", "1Mi"), resourceFile("d", "requests.memory", "1k"),
		resourceFile("e", "limits.ephemeral-storage", "1Gi"), resourceFile("f", "requests.ephemeral-storage", ""),
		resourceFile("g", "limits.hugepages-2Mi", "1Mi"), resourceFile("h", "requests.hugepages-1Gi", "1Gi"),
		resourceFile("i", "limits.cpu", "0"), resourceFile("j", "limits.cpu", "1000m"),
	)))},
	{name: "downwardAPI resource container name not checked", mutate: withVols(volV(downwardSrc(corev1.DownwardAPIVolumeFile{Path: "p",
		ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "nope", Resource: "limits.cpu"}})))},
	{name: "projected every source", mutate: withVols(volV(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o440),
		Sources: []corev1.VolumeProjection{
			secretProj("s", keyPath("k", "secret")),
			configMapProj("cm", keyPath("k", "config")),
			downwardProj(fieldFile("labels", "metadata.labels")),
			tokenProj("token", ptr.To[int64](600)),
			tokenProj("token2", ptr.To[int64](1<<32)),
			tokenProj("token3", nil),
			bundleProj(corev1.ClusterTrustBundleProjection{Name: ptr.To("bundle"), Path: "bundle.pem"}),
			bundleProj(corev1.ClusterTrustBundleProjection{Name: ptr.To("example.com:signer:bundle"), Path: "bundle2.pem"}),
			bundleProj(corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/signer"), Path: "bundle3.pem",
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}),
			certProj(corev1.PodCertificateProjection{SignerName: "kubernetes.io/kube-apiserver-client-pod", KeyType: "RSA3072",
				KeyPath: "key.pem", CertificateChainPath: "chain.pem", MaxExpirationSeconds: ptr.To[int32](24 * 3600),
				UserAnnotations: map[string]string{"Example.COM/x": "y"}}),
			certProj(corev1.PodCertificateProjection{SignerName: "example.com/signer", KeyType: "ECDSAP256",
				CredentialBundlePath: "creds.pem", MaxExpirationSeconds: ptr.To[int32](91 * 24 * 3600)}),
		}}}))},
	{name: "projected empty source (allowed)", mutate: withVols(volV(projectedSrc(corev1.VolumeProjection{})))},
	{name: "projected token path not among duplicate-checked paths", mutate: withVols(volV(projectedSrc(
		secretProj("s", keyPath("k", "token")), tokenProj("token", nil))))},
	{name: "projected paths without items", mutate: withVols(volV(projectedSrc(secretProj("s"), secretProj("s2"))))},
	{name: "persistentVolumeClaim", mutate: withVols(volV(corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}))},
	{name: "image with pullPolicy defaulted", mutate: withVols(volV(corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "img:latest"}}))},
	{name: "image with pullPolicy", mutate: withVols(volV(corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "img", PullPolicy: corev1.PullNever}}))},
	{name: "ephemeral", mutate: withVols(volV(ephemeralSrc(func(t *corev1.PersistentVolumeClaimTemplate) {
		t.Labels = map[string]string{"a": "b"}
		t.Annotations = map[string]string{"x": "y"}
		t.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
		t.Spec.StorageClassName = ptr.To("fast")
		t.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock)
		t.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "src"}
		t.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "src"}
	})))},
	{name: "pvc may use another pod's ephemeral claim name", mutate: withVols(
		volV(corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "other-v"}}),
		volNamed("w", ephemeralSrc(nil)))},
	{name: "fileKeyRef to an emptyDir", mutate: volBoth(withVols(volV(emptyDirSrc())), fileKeyRefEnv("v"))},
	{name: "fileKeyRef to a defaulted emptyDir", mutate: volBoth(withVols(volV(corev1.VolumeSource{})), fileKeyRefEnv("v"))},
	{name: "other types valid", mutate: withVols(
		volNamed("nfs", corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/x"}}),
		volNamed("iscsi", corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "1.2.3.4:3260", IQN: "iqn.2015-02.example.com:test", InitiatorName: ptr.To("iqn.2015-02.example.com:init")}}),
		volNamed("csi", corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "Example.Driver.io", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "s"}}}),
		volNamed("fc", corev1.VolumeSource{FC: &corev1.FCVolumeSource{TargetWWNs: []string{"w"}, Lun: ptr.To[int32](1)}}),
		volNamed("fc2", corev1.VolumeSource{FC: &corev1.FCVolumeSource{WWIDs: []string{"w"}}}),
		volNamed("azuredisk", corev1.VolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{DiskName: "d", DataDiskURI: "https://a.blob.core.windows.net/c/d.vhd"}}),
		volNamed("azuremanaged", corev1.VolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{DiskName: "d", DataDiskURI: "/subscriptions/x", Kind: ptr.To(corev1.AzureManagedDisk)}}),
		volNamed("quobyte", corev1.VolumeSource{Quobyte: &corev1.QuobyteVolumeSource{Registry: "a:1,b:2", Volume: "v"}}),
		volNamed("gitrepo", corev1.VolumeSource{GitRepo: &corev1.GitRepoVolumeSource{Repository: "r", Directory: "."}}),
		volNamed("storageos", corev1.VolumeSource{StorageOS: &corev1.StorageOSVolumeSource{VolumeName: "v", VolumeNamespace: "ns"}}),
		volNamed("flex", corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: "d", Options: map[string]string{"example.com/x": "y"}}}),
	)},

	// Names.
	{name: "name required", mutate: withVols(volNamed("", emptyDirSrc())), want: []volErr{vReq(v0 + ".name")}},
	{name: "name not a DNS label", mutate: withVols(volNamed("Bad_Name", emptyDirSrc())), want: []volErr{vInv(v0 + ".name")}},
	{name: "name too long", mutate: withVols(volNamed(strings.Repeat("a", 64), emptyDirSrc())), want: []volErr{vInv(v0 + ".name")}},
	{name: "duplicate name", mutate: withVols(volV(emptyDirSrc()), volV(emptyDirSrc())), want: []volErr{vDup("spec.volumes[1].name")}},
	{name: "duplicate of an invalid volume is not reported", mutate: withVols(volV(hostPathSrc("", nil)), volV(emptyDirSrc())),
		want: []volErr{vReq(v0 + ".hostPath.path")}},

	// One source.
	{name: "two sources", mutate: withVols(volV(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}, HostPath: &corev1.HostPathVolumeSource{Path: "/x"}})),
		want: []volErr{vForb(v0+".hostPath", "may not specify more than 1 volume type")}},
	{name: "second source not validated", mutate: withVols(volV(corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}, Secret: &corev1.SecretVolumeSource{}})),
		want: []volErr{vForb(v0 + ".secret")}},
	{name: "downwardAPI as a second source (API server's spelling)", mutate: withVols(volV(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}, DownwardAPI: &corev1.DownwardAPIVolumeSource{}})),
		want: []volErr{vForb(v0 + ".downwarAPI")}},
	{name: "three sources", mutate: withVols(volV(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}, ConfigMap: &corev1.ConfigMapVolumeSource{}, Image: &corev1.ImageVolumeSource{}})),
		want: []volErr{vForb(v0 + ".configMap"), vForb(v0 + ".image")}},
	{name: "invalid volume left out of the map, and its errors kept", mutate: withVols(volV(hostPathSrc("/x", ptr.To[corev1.HostPathType]("bogus"))), volNamed("ok", emptyDirSrc())),
		want: []volErr{vNots(v0+".hostPath.type", hostPathTypeList)}},

	// hostPath.
	{name: "hostPath path required", mutate: withVols(volV(hostPathSrc("", ptr.To[corev1.HostPathType]("bogus")))), want: []volErr{vReq(v0 + ".hostPath.path")}},
	{name: "hostPath backsteps", mutate: withVols(volV(hostPathSrc("/a/../etc", nil))), want: []volErr{vInv(v0+".hostPath.path", "must not contain '..'")}},
	{name: "hostPath trailing backstep", mutate: withVols(volV(hostPathSrc("/a/..", nil))), want: []volErr{vInv(v0+".hostPath.path", "must not contain '..'")}},
	{name: "hostPath type", mutate: withVols(volV(hostPathSrc("/a", ptr.To[corev1.HostPathType]("file")))), want: []volErr{vNots(v0+".hostPath.type", hostPathTypeList)}},

	// emptyDir.
	{name: "emptyDir negative size", mutate: withVols(volV(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("-1"))}})),
		want: []volErr{vForb(v0+".emptyDir.sizeLimit", "SizeLimit field must be a valid resource quantity")}},
	{name: "emptyDir mode dropped with the gate off", mutate: withVols(volV(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Mode: ptr.To[int32](0o7777)}}))},
	{name: "emptyDir mode 01777", gates: true, mutate: withVols(volV(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Mode: ptr.To[int32](0o1777)}}))},
	{name: "emptyDir mode setuid", gates: true, mutate: withVols(volV(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Mode: ptr.To[int32](0o4777)}})),
		want: []volErr{vInv(v0+".emptyDir.mode", emptyDirModeErrorMsg)}},
	{name: "emptyDir mode negative", gates: true, mutate: withVols(volV(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Mode: ptr.To[int32](-1)}})),
		want: []volErr{vInv(v0+".emptyDir.mode", emptyDirModeErrorMsg)}},

	// secret and configMap.
	{name: "secret name required", mutate: withVols(volV(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}})), want: []volErr{vReq(v0 + ".secret.secretName")}},
	{name: "secret defaultMode setuid", mutate: withVols(volV(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](0o4755)}})),
		want: []volErr{vInv(v0+".secret.defaultMode", fileModeErrorMsg)}},
	{name: "secret defaultMode sticky", mutate: withVols(volV(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](0o1000)}})),
		want: []volErr{vInv(v0+".secret.defaultMode", fileModeErrorMsg)}},
	{name: "secret defaultMode negative", mutate: withVols(volV(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](-1)}})),
		want: []volErr{vInv(v0+".secret.defaultMode", fileModeErrorMsg)}},
	{name: "secret item key required", mutate: withVols(volV(secretSrc(keyPath("", "p")))), want: []volErr{vReq(v0 + ".secret.items[0].key")}},
	{name: "secret item path required", mutate: withVols(volV(secretSrc(keyPath("k", "")))), want: []volErr{vReq(v0 + ".secret.items[0].path")}},
	{name: "secret item path absolute", mutate: withVols(volV(secretSrc(keyPath("k", "/etc/passwd")))), want: []volErr{vInv(v0+".secret.items[0].path", "must be a relative path")}},
	{name: "secret item path backsteps", mutate: withVols(volV(secretSrc(keyPath("k", "a/../../b")))), want: []volErr{vInv(v0+".secret.items[0].path", "must not contain '..'")}},
	{name: "secret item path starts with ..", mutate: withVols(volV(secretSrc(keyPath("k", "..data")))), want: []volErr{vInv(v0+".secret.items[0].path", "must not start with '..'")}},
	{name: "secret item path is ..", mutate: withVols(volV(secretSrc(keyPath("k", "..")))), want: []volErr{vInv(v0+".secret.items[0].path", "must not contain '..'"), vInv(v0+".secret.items[0].path", "must not start with '..'")}},
	{name: "secret item path ../x", mutate: withVols(volV(secretSrc(keyPath("k", "../x")))), want: []volErr{vInv(v0+".secret.items[0].path", "must not contain '..'")}},
	{name: "secret item path absolute with backsteps", mutate: withVols(volV(secretSrc(keyPath("k", "/../x")))),
		want: []volErr{vInv(v0+".secret.items[0].path", "must be a relative path"), vInv(v0+".secret.items[0].path", "must not contain '..'")}},
	{name: "secret item mode setgid", mutate: withVols(volV(secretSrc(corev1.KeyToPath{Key: "k", Path: "p", Mode: ptr.To[int32](0o2644)}))),
		want: []volErr{vInv(v0+".secret.items[0].mode", fileModeErrorMsg)}},
	{name: "secret second item", mutate: withVols(volV(secretSrc(keyPath("k", "p"), keyPath("k", "")))), want: []volErr{vReq(v0 + ".secret.items[1].path")}},
	{name: "configMap name required", mutate: withVols(volV(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}})), want: []volErr{vReq(v0 + ".configMap.name")}},
	{name: "configMap defaultMode", mutate: withVols(volV(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, DefaultMode: ptr.To[int32](0o1777)}})),
		want: []volErr{vInv(v0+".configMap.defaultMode", fileModeErrorMsg)}},
	{name: "configMap item", mutate: withVols(volV(configMapSrc(corev1.KeyToPath{Key: "", Path: "/p", Mode: ptr.To[int32](0o1000)}))),
		want: []volErr{vReq(v0 + ".configMap.items[0].key"), vInv(v0+".configMap.items[0].path", "must be a relative path"), vInv(v0 + ".configMap.items[0].mode")}},
	{name: "user fields dropped with the gate off", mutate: withVols(
		volV(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultUser: ptr.To[int64](-1),
			Items: []corev1.KeyToPath{{Key: "k", Path: "p", User: ptr.To[int64](1 << 31)}}}}),
		volNamed("w", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultUser: ptr.To[int64](-1), Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t", User: ptr.To[int64](-5)}}}}}))},
	{name: "user fields", gates: true, mutate: withVols(
		volV(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultUser: ptr.To[int64](-1),
			Items: []corev1.KeyToPath{{Key: "k", Path: "p", User: ptr.To[int64](1 << 31)}, {Key: "k", Path: "q", User: ptr.To[int64](1<<31 - 1)}}}}),
		volNamed("cm", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, DefaultUser: ptr.To[int64](-1)}}),
		volNamed("dw", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{DefaultUser: ptr.To[int64](-1),
			Items: []corev1.DownwardAPIVolumeFile{{Path: "p", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}, User: ptr.To[int64](-2)}}}}),
		volNamed("pj", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultUser: ptr.To[int64](-1), Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t", User: ptr.To[int64](-5)}},
			{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: ptr.To("b"), Path: "b", User: ptr.To[int64](-5)}},
			{PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ED25519", KeyPath: "k", User: ptr.To[int64](-5)}},
		}}})),
		want: []volErr{
			vInv(v0 + ".secret.defaultUser"), vInv(v0 + ".secret.items[0].user"),
			vInv("spec.volumes[1].configMap.defaultUser"),
			vInv("spec.volumes[2].downwardAPI.defaultUser"), vInv("spec.volumes[2].downwardAPI.user"),
			vInv("spec.volumes[3].projected.defaultUser"),
			vInv("spec.volumes[3].projected.sources[0].serviceAccountToken.user"),
			vInv("spec.volumes[3].projected.sources[1].clusterTrustBundle.user"),
			vInv("spec.volumes[3].projected.sources[2].podCertificate.user"),
		}},

	// downwardAPI (the API server reports an item's errors without its index).
	{name: "downwardAPI defaultMode", mutate: withVols(volV(corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{DefaultMode: ptr.To[int32](0o1000)}})),
		want: []volErr{vInv(v0+".downwardAPI.defaultMode", fileModeErrorMsg)}},
	{name: "downwardAPI path required", mutate: withVols(volV(downwardSrc(fieldFile("", "metadata.name")))), want: []volErr{vReq(v0 + ".downwardAPI.path")}},
	{name: "downwardAPI path", mutate: withVols(volV(downwardSrc(fieldFile("..x", "metadata.name"), fieldFile("/x", "metadata.name")))),
		want: []volErr{vInv(v0+".downwardAPI.path", "must not start with '..'"), vInv(v0+".downwardAPI.path", "must be a relative path")}},
	{name: "downwardAPI no ref", mutate: withVols(volV(downwardSrc(corev1.DownwardAPIVolumeFile{Path: "p"}))),
		want: []volErr{vReq(v0+".downwardAPI", "one of fieldRef and resourceFieldRef is required")}},
	{name: "downwardAPI both refs", mutate: withVols(volV(downwardSrc(corev1.DownwardAPIVolumeFile{Path: "p",
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}, ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}))),
		want: []volErr{vInv(v0+".downwardAPI", "fieldRef and resourceFieldRef can not be specified simultaneously")}},
	{name: "downwardAPI mode", mutate: withVols(volV(downwardSrc(corev1.DownwardAPIVolumeFile{Path: "p", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: ptr.To[int32](0o1000)}))),
		want: []volErr{vInv(v0+".downwardAPI.mode", fileModeErrorMsg)}},
	{name: "fieldRef fieldPath required", mutate: withVols(volV(downwardSrc(fieldFile("p", "")))), want: []volErr{vReq(v0 + ".downwardAPI.fieldRef.fieldPath")}},
	{name: "fieldRef apiVersion", mutate: withVols(volV(downwardSrc(corev1.DownwardAPIVolumeFile{Path: "p", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.name"}}))),
		want: []volErr{vInv(v0+".downwardAPI.fieldRef.fieldPath", "error converting fieldPath: unsupported pod version: v2")}},
	{name: "fieldRef not for volumes", mutate: withVols(volV(downwardSrc(fieldFile("p", "spec.nodeName"), fieldFile("q", "status.podIP")))),
		want: []volErr{
			vNots(v0+".downwardAPI.fieldRef.fieldPath", `supported values: "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"`),
			vNots(v0 + ".downwardAPI.fieldRef.fieldPath")}},
	{name: "fieldRef spec.host", mutate: withVols(volV(downwardSrc(fieldFile("p", "spec.host")))), want: []volErr{vNots(v0 + ".downwardAPI.fieldRef.fieldPath")}},
	{name: "fieldRef unknown", mutate: withVols(volV(downwardSrc(fieldFile("p", "status.bogus")))),
		want: []volErr{vInv(v0+".downwardAPI.fieldRef.fieldPath", "error converting fieldPath: field label not supported: status.bogus")}},
	{name: "fieldRef subscript", mutate: withVols(volV(downwardSrc(fieldFile("p", "metadata.name['x']")))),
		want: []volErr{vInv(v0+".downwardAPI.fieldRef.fieldPath", "error converting fieldPath: field label does not support subscript: metadata.name['x']")}},
	{name: "fieldRef label key", mutate: withVols(volV(downwardSrc(fieldFile("p", "metadata.labels['bad key']")))), want: []volErr{vInv(v0 + ".downwardAPI.fieldRef")}},
	{name: "fieldRef annotation key", mutate: withVols(volV(downwardSrc(fieldFile("p", "metadata.annotations['']")))), want: []volErr{vInv(v0 + ".downwardAPI.fieldRef"), vInv(v0 + ".downwardAPI.fieldRef")}},
	{name: "resourceFieldRef containerName required", mutate: withVols(volV(downwardSrc(corev1.DownwardAPIVolumeFile{Path: "p", ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "bogus"}}))),
		want: []volErr{vReq(v0 + ".downwardAPI.resourceFieldRef.containerName")}},
	{name: "resourceFieldRef resource required", mutate: withVols(volV(downwardSrc(resourceFile("p", "", "")))), want: []volErr{vReq(v0 + ".downwardAPI.resourceFieldRef.resource")}},
	{name: "resourceFieldRef resource", mutate: withVols(volV(downwardSrc(resourceFile("p", "limits.gpu", "")))),
		want: []volErr{vNots(v0+".downwardAPI.resourceFieldRef.resource", `supported values: "limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"`)}},
	{name: "divisor cpu", mutate: withVols(volV(downwardSrc(resourceFile("p", "limits.cpu", "2")))),
		want: []volErr{vInv(v0+".downwardAPI.resourceFieldRef.divisor", "only divisor's values 1m and 1 are supported with the cpu resource")}},
	{name: "divisor memory", mutate: withVols(volV(downwardSrc(resourceFile("p", "requests.memory", "3Mi"), resourceFile("q", "limits.memory", "1m")))),
		want: []volErr{vInv(v0 + ".downwardAPI.resourceFieldRef.divisor"), vInv(v0 + ".downwardAPI.resourceFieldRef.divisor")}},
	{name: "divisor ephemeral-storage", mutate: withVols(volV(downwardSrc(resourceFile("p", "limits.ephemeral-storage", "2k")))),
		want: []volErr{vInv(v0+".downwardAPI.resourceFieldRef.divisor", "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage resource")}},
	{name: "divisor hugepages", mutate: withVols(volV(downwardSrc(resourceFile("p", "limits.hugepages-2Mi", "1m")))),
		want: []volErr{vInv(v0+".downwardAPI.resourceFieldRef.divisor", "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource")}},
	{name: "divisor checked without a container name", mutate: withVols(volV(downwardSrc(corev1.DownwardAPIVolumeFile{Path: "p",
		ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("5")}}))),
		want: []volErr{vReq(v0 + ".downwardAPI.resourceFieldRef.containerName"), vInv(v0 + ".downwardAPI.resourceFieldRef.divisor")}},

	// projected.
	{name: "projected defaultMode", mutate: withVols(volV(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o4777)}})),
		want: []volErr{vInv(proj0+".defaultMode", fileModeErrorMsg)}},
	{name: "projected source with two types", mutate: withVols(volV(projectedSrc(corev1.VolumeProjection{
		Secret: secretProj("s").Secret, ConfigMap: configMapProj("cm").ConfigMap}))),
		want: []volErr{vForb(src0, "may not specify more than 1 volume type per source")}},
	{name: "projected secret name required", mutate: withVols(volV(projectedSrc(secretProj("")))), want: []volErr{vReq(src0 + ".secret.name")}},
	{name: "projected configMap name required", mutate: withVols(volV(projectedSrc(configMapProj("")))), want: []volErr{vReq(src0 + ".configMap.name")}},
	{name: "projected secret item", mutate: withVols(volV(projectedSrc(secretProj("s", corev1.KeyToPath{Key: "k", Path: "../p", Mode: ptr.To[int32](0o4000)})))),
		want: []volErr{vInv(src0+".secret.items[0].path", "must not contain '..'"), vInv(src0+".secret.items[0].mode", fileModeErrorMsg)}},
	{name: "projected configMap item", mutate: withVols(volV(projectedSrc(configMapProj("cm", keyPath("", "p"))))), want: []volErr{vReq(src0 + ".configMap.items[0].key")}},
	{name: "projected duplicate paths", mutate: withVols(volV(projectedSrc(secretProj("s", keyPath("k", "a")), configMapProj("cm", keyPath("k", "a"))))),
		want: []volErr{vInv(proj0, "conflicting duplicate paths")}},
	{name: "projected duplicate paths in one source", mutate: withVols(volV(projectedSrc(secretProj("s", keyPath("k", "a"), keyPath("k2", "a"))))),
		want: []volErr{vInv(proj0, "conflicting duplicate paths")}},
	{name: "projected duplicate downwardAPI path", mutate: withVols(volV(projectedSrc(configMapProj("cm", keyPath("k", "a")), downwardProj(fieldFile("a", "metadata.name"))))),
		want: []volErr{vInv(proj0, "conflicting duplicate paths")}},
	{name: "projected downwardAPI item (no index in the path)", mutate: withVols(volV(projectedSrc(downwardProj(fieldFile("", "metadata.bogus"))))),
		want: []volErr{vReq(src0 + ".downwardAPI.path"), vInv(src0 + ".downwardAPI.fieldRef.fieldPath")}},
	{name: "token expiration too short", mutate: withVols(volV(projectedSrc(tokenProj("t", ptr.To[int64](599))))),
		want: []volErr{vInv(src0+".serviceAccountToken.expirationSeconds", "may not specify a duration less than 10 minutes")}},
	{name: "token expiration too long", mutate: withVols(volV(projectedSrc(tokenProj("t", ptr.To[int64](1<<32+1))))),
		want: []volErr{vInv(src0+".serviceAccountToken.expirationSeconds", "may not specify a duration larger than 2^32 seconds")}},
	{name: "token path required (at projected.path)", mutate: withVols(volV(projectedSrc(tokenProj("", nil)))), want: []volErr{vReq(proj0 + ".path")}},
	{name: "token path absolute", mutate: withVols(volV(projectedSrc(tokenProj("/t", nil)))), want: []volErr{vInv(proj0+".path", "must be a relative path")}},
	{name: "token path backsteps", mutate: withVols(volV(projectedSrc(tokenProj("a/../../t", nil)))), want: []volErr{vInv(proj0+".path", "must not contain '..'")}},
	{name: "token path starts with ..", mutate: withVols(volV(projectedSrc(tokenProj("..t", nil)))), want: []volErr{vInv(proj0+".path", "must not start with '..'")}},
	{name: "token without serviceAccountName", mutate: volBoth(withVols(volV(emptyDirSrc()), volNamed("w", projectedSrc(configMapProj("cm"), tokenProj("t", nil)))),
		func(p *corev1.Pod) { p.Spec.ServiceAccountName = "" }),
		want: []volErr{vForb("spec.volumes[1].projected.sources[1].serviceAccountToken", "must not be specified when serviceAccountName is not set")}},
	{name: "bundle name and signerName", mutate: withVols(volV(projectedSrc(bundleProj(corev1.ClusterTrustBundleProjection{Name: ptr.To("b"), SignerName: ptr.To("example.com/s"), Path: "b"})))),
		want: []volErr{vInv(src0+".clusterTrustBundle", "only one of name and signerName may be used")}},
	{name: "bundle neither", mutate: withVols(volV(projectedSrc(bundleProj(corev1.ClusterTrustBundleProjection{Path: "b"})))),
		want: []volErr{vReq(src0+".clusterTrustBundle", "either name or signerName must be specified")}},
	{name: "bundle empty name", mutate: withVols(volV(projectedSrc(bundleProj(corev1.ClusterTrustBundleProjection{Name: ptr.To(""), Path: "b"})))),
		want: []volErr{vReq(src0+".clusterTrustBundle.name", "must be a valid object name"), vInv(src0 + ".clusterTrustBundle.name")}},
	{name: "bundle name with selector", mutate: withVols(volV(projectedSrc(bundleProj(corev1.ClusterTrustBundleProjection{Name: ptr.To("b"), Path: "b", LabelSelector: &metav1.LabelSelector{}})))),
		want: []volErr{vInv(src0+".clusterTrustBundle.labelSelector", "labelSelector must be unset if name is specified")}},
	{name: "bundle name not matching its signer", mutate: withVols(volV(projectedSrc(bundleProj(corev1.ClusterTrustBundleProjection{Name: ptr.To("example.com/s:b"), Path: "b"})))),
		want: []volErr{vInv(src0+".clusterTrustBundle.name", "not a valid clustertrustbundlename: ClusterTrustBundle for signerName example.com/s must be named with prefix example.com:s:")}},
	{name: "bundle name with a colon and no signer", mutate: withVols(volV(projectedSrc(bundleProj(corev1.ClusterTrustBundleProjection{Name: ptr.To(":b"), Path: "b"})))),
		want: []volErr{vInv(src0+".clusterTrustBundle.name", `not a valid clustertrustbundlename: ClusterTrustBundle without signer name must not have ":" in its name`)}},
	{name: "bundle name not a subdomain", mutate: withVols(volV(projectedSrc(bundleProj(corev1.ClusterTrustBundleProjection{Name: ptr.To("example.com:s:B_"), Path: "b"})))),
		want: []volErr{vInv(src0 + ".clusterTrustBundle.name")}},
	{name: "bundle empty signerName", mutate: withVols(volV(projectedSrc(bundleProj(corev1.ClusterTrustBundleProjection{SignerName: ptr.To(""), Path: "b"})))),
		want: []volErr{vReq(src0+".clusterTrustBundle.signerName", "must be a valid signer name"), vReq(src0 + ".clusterTrustBundle.signerName")}},
	{name: "bundle signerName without a path", mutate: withVols(volV(projectedSrc(bundleProj(corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com"), Path: "b"})))),
		want: []volErr{vInv(src0+".clusterTrustBundle.signerName", "must be a fully qualified domain and path of the form 'example.com/signer-name'")}},
	{name: "bundle signerName one-label domain", mutate: withVols(volV(projectedSrc(bundleProj(corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example/s"), Path: "b"})))),
		want: []volErr{vInv(src0+".clusterTrustBundle.signerName", "should be a domain with at least two segments separated by dots")}},
	{name: "bundle signerName labels", mutate: withVols(volV(projectedSrc(bundleProj(corev1.ClusterTrustBundleProjection{SignerName: ptr.To("Ex_ample.com/S_s"), Path: "b"})))),
		want: []volErr{vInv(src0 + ".clusterTrustBundle.signerName"), vInv(src0 + ".clusterTrustBundle.signerName")}},
	{name: "bundle signerName too long", mutate: withVols(volV(projectedSrc(bundleProj(corev1.ClusterTrustBundleProjection{
		SignerName: ptr.To(strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 63) + ".io/s"), Path: "b"})))),
		want: []volErr{vTooLong(src0 + ".clusterTrustBundle.signerName")}},
	{name: "bundle selector", mutate: withVols(volV(projectedSrc(bundleProj(corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/s"), Path: "b",
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "bad value!"}}})))),
		want: []volErr{vInv(src0 + ".clusterTrustBundle.labelSelector.matchLabels")}},
	{name: "bundle path required", mutate: withVols(volV(projectedSrc(bundleProj(corev1.ClusterTrustBundleProjection{Name: ptr.To("b")})))),
		want: []volErr{vReq(src0 + ".clusterTrustBundle.path")}},
	{name: "bundle path", mutate: withVols(volV(projectedSrc(bundleProj(corev1.ClusterTrustBundleProjection{Name: ptr.To("b"), Path: "/b"})))),
		want: []volErr{vInv(src0+".clusterTrustBundle.path", "must be a relative path")}},
	{name: "bundle duplicate paths, even empty", mutate: withVols(volV(projectedSrc(
		bundleProj(corev1.ClusterTrustBundleProjection{Name: ptr.To("b")}), bundleProj(corev1.ClusterTrustBundleProjection{Name: ptr.To("c")})))),
		want: []volErr{vReq(src0 + ".clusterTrustBundle.path"), vReq(proj0 + ".sources[1].clusterTrustBundle.path"), vInv(proj0, "conflicting duplicate paths")}},
	{name: "certificate keyType", mutate: withVols(volV(projectedSrc(certProj(func() corev1.PodCertificateProjection { c := goodCert(); c.KeyType = ""; return c }())))),
		want: []volErr{vNots(src0+".podCertificate.keyType", `supported values: "RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"`)}},
	{name: "certificate signerName", mutate: withVols(volV(projectedSrc(certProj(func() corev1.PodCertificateProjection { c := goodCert(); c.SignerName = ""; return c }())))),
		want: []volErr{vReq(src0 + ".podCertificate.signerName")}},
	{name: "certificate no paths", mutate: withVols(volV(projectedSrc(certProj(corev1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "RSA4096"})))),
		want: []volErr{vReq(src0+".podCertificate", "specify at least one of credentialBundlePath, keyPath, and certificateChainPath")}},
	{name: "certificate paths", mutate: withVols(volV(projectedSrc(certProj(corev1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ECDSAP384",
		CredentialBundlePath: "/c", KeyPath: "..k", CertificateChainPath: "a/../c"})))),
		want: []volErr{vInv(src0+".podCertificate.credentialBundlePath", "must be a relative path"),
			vInv(src0+".podCertificate.keyPath", "must not start with '..'"), vInv(src0+".podCertificate.certificateChainPath", "must not contain '..'")}},
	// ValidatePodCreate reports both; the API server's rest.ValidateCreate
	// then merges the two identical errors into one.
	{name: "certificate duplicate paths", mutate: withVols(volV(projectedSrc(secretProj("s", keyPath("k", "key.pem")),
		certProj(corev1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ECDSAP521", KeyPath: "key.pem", CertificateChainPath: "key.pem"})))),
		want: []volErr{vInv(proj0, "conflicting duplicate paths"), vInv(proj0, "conflicting duplicate paths")}},
	{name: "certificate maxExpirationSeconds too short", mutate: withVols(volV(projectedSrc(certProj(func() corev1.PodCertificateProjection {
		c := goodCert()
		c.MaxExpirationSeconds = ptr.To[int32](3599)
		return c
	}())))), want: []volErr{vInv(src0+".podCertificate.maxExpirationSeconds", "if provided, maxExpirationSeconds must be >= 3600")}},
	{name: "certificate maxExpirationSeconds too long", mutate: withVols(volV(projectedSrc(certProj(func() corev1.PodCertificateProjection {
		c := goodCert()
		c.MaxExpirationSeconds = ptr.To[int32](91*24*3600 + 1)
		return c
	}())))), want: []volErr{vInv(src0+".podCertificate.maxExpirationSeconds", "if provided, maxExpirationSeconds must be <= 7862400")}},
	{name: "certificate maxExpirationSeconds kubernetes signer", mutate: withVols(volV(projectedSrc(certProj(func() corev1.PodCertificateProjection {
		c := goodCert()
		c.SignerName = "foo.kubernetes.io/s"
		c.MaxExpirationSeconds = ptr.To[int32](24*3600 + 1)
		return c
	}())))), want: []volErr{vInv(src0+".podCertificate.maxExpirationSeconds", "if provided, maxExpirationSeconds must be <= 86400")}},
	{name: "certificate user annotations", mutate: withVols(volV(projectedSrc(certProj(func() corev1.PodCertificateProjection {
		c := goodCert()
		c.UserAnnotations = map[string]string{"nodomain": "x"}
		return c
	}())))), want: []volErr{vInv(src0+".podCertificate.userAnnotations", `must be a domain-prefixed key (such as "acme.io/foo")`)}},
	{name: "certificate user annotations size", mutate: withVols(volV(projectedSrc(certProj(func() corev1.PodCertificateProjection {
		c := goodCert()
		c.UserAnnotations = map[string]string{"example.com/big": strings.Repeat("x", 256*1024)}
		return c
	}())))), want: []volErr{vTooLong(src0 + ".podCertificate.userAnnotations")}},

	// persistentVolumeClaim, image, ephemeral.
	{name: "pvc claimName required", mutate: withVols(volV(corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{}})),
		want: []volErr{vReq(v0 + ".persistentVolumeClaim.claimName")}},
	{name: "pvc naming this pod's ephemeral claim", mutate: withVols(
		volV(corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "p-w"}}),
		volNamed("w", ephemeralSrc(nil))),
		want: []volErr{vInv(v0+".persistentVolumeClaim.claimName", "must not reference a PVC that gets created for an ephemeral volume")}},
	{name: "image reference required", mutate: withVols(volV(corev1.VolumeSource{Image: &corev1.ImageVolumeSource{}})), want: []volErr{vReq(v0 + ".image.reference")}},
	{name: "image pullPolicy", mutate: withVols(volV(corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "img", PullPolicy: "Sometimes"}})),
		want: []volErr{vNots(v0+".image.pullPolicy", `supported values: "Always", "IfNotPresent", "Never"`)}},
	{name: "ephemeral template required", mutate: withVols(volV(corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}})),
		want: []volErr{vReq(v0 + ".ephemeral.volumeClaimTemplate")}},
	{name: "ephemeral template metadata", mutate: withVols(volV(ephemeralSrc(func(t *corev1.PersistentVolumeClaimTemplate) {
		t.Name = "n"
		t.Namespace = "ns"
		t.UID = "u"
		t.Finalizers = []string{}
		t.Labels = map[string]string{"bad key!": "v"}
	}))), want: []volErr{
		vForb(v0+".ephemeral.volumeClaimTemplate.metadata.name", "cannot be set"),
		vForb(v0 + ".ephemeral.volumeClaimTemplate.metadata.namespace"),
		vForb(v0 + ".ephemeral.volumeClaimTemplate.metadata.uID"),
		vForb(v0 + ".ephemeral.volumeClaimTemplate.metadata.finalizers"),
		vInv(v0 + ".ephemeral.volumeClaimTemplate.metadata.labels"),
	}},
	{name: "ephemeral spec required fields", mutate: withVols(volV(ephemeralSrc(func(t *corev1.PersistentVolumeClaimTemplate) {
		t.Spec = corev1.PersistentVolumeClaimSpec{}
	}))), want: []volErr{
		vReq(v0+".ephemeral.volumeClaimTemplate.spec.accessModes", "at least 1 access mode is required"),
		vReq(v0 + ".ephemeral.volumeClaimTemplate.spec.resources[storage]"),
	}},
	{name: "ephemeral spec values", mutate: withVols(volV(ephemeralSrc(func(t *corev1.PersistentVolumeClaimTemplate) {
		t.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{"ReadSometimes", corev1.ReadWriteOncePod, corev1.ReadOnlyMany}
		t.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("0")
		t.Spec.StorageClassName = ptr.To("Bad_Class")
		t.Spec.VolumeAttributesClassName = ptr.To("Bad_Class")
		t.Spec.VolumeMode = ptr.To[corev1.PersistentVolumeMode]("Raw")
		t.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "bad value!"}}
	}))), want: []volErr{
		vNots(v0+".ephemeral.volumeClaimTemplate.spec.accessModes", `supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"`),
		vForb(v0+".ephemeral.volumeClaimTemplate.spec.accessModes", "may not use ReadWriteOncePod with other access modes"),
		vInv(v0+".ephemeral.volumeClaimTemplate.spec.resources[storage]", isNotPositiveErrorMsg),
		vInv(v0 + ".ephemeral.volumeClaimTemplate.spec.storageClassName"),
		vInv(v0 + ".ephemeral.volumeClaimTemplate.spec.volumeAttributesClassName"),
		vNots(v0 + ".ephemeral.volumeClaimTemplate.spec.volumeMode"),
		vInv(v0 + ".ephemeral.volumeClaimTemplate.spec.selector.matchLabels"),
	}},
	{name: "ephemeral data sources", mutate: withVols(volV(ephemeralSrc(func(t *corev1.PersistentVolumeClaimTemplate) {
		t.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "Snapshot"}
		t.Spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: ptr.To("Bad_Group"), Name: "x"}
	}))), want: []volErr{
		vReq(v0 + ".ephemeral.volumeClaimTemplate.spec.dataSource.name"),
		vInv(v0+".ephemeral.volumeClaimTemplate.spec.dataSource", "must be 'PersistentVolumeClaim' when referencing the default apiGroup"),
		vReq(v0 + ".ephemeral.volumeClaimTemplate.spec.dataSourceRef.kind"),
		vInv(v0 + ".ephemeral.volumeClaimTemplate.spec.dataSourceRef.apiGroup"),
		vInv(v0+".ephemeral.volumeClaimTemplate.spec", "must match dataSourceRef"),
	}},
	{name: "ephemeral dataSource with a namespaced dataSourceRef", mutate: withVols(volV(ephemeralSrc(func(t *corev1.PersistentVolumeClaimTemplate) {
		t.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "x"}
		t.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "x", Namespace: ptr.To("Bad_NS")}
	}))), want: []volErr{
		vInv(v0 + ".ephemeral.volumeClaimTemplate.spec.dataSourceRef.namespace"),
		vInv(v0+".ephemeral.volumeClaimTemplate.spec", "may not be specified when dataSourceRef.namespace is specified"),
	}},
	{name: "ephemeral claim name too long", mutate: volBoth(withVols(volNamed(strings.Repeat("v", 63), ephemeralSrc(nil))),
		func(p *corev1.Pod) { p.Name = strings.Repeat("p", 200) }),
		want: []volErr{vInv(v0 + ".name")}},

	// fileKeyRef volumes.
	{name: "fileKeyRef volume missing", mutate: volBoth(withVols(volV(emptyDirSrc())), fileKeyRefEnv("nope")),
		want: []volErr{vNotFound("spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName")}},
	{name: "fileKeyRef volume not an emptyDir", mutate: volBoth(withVols(volV(secretSrc())), fileKeyRefEnv("v")),
		want: []volErr{vInv("spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName", "referenced volume must be of type emptyDir")}},
	{name: "fileKeyRef in an init container, to an invalid emptyDir", mutate: volBoth(
		withVols(volV(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("-1"))}})),
		func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "img", Env: []corev1.EnvVar{{Name: "E", ValueFrom: &corev1.EnvVarSource{
				FileKeyRef: &corev1.FileKeySelector{VolumeName: "v", Path: "f", Key: "K"}}}}}}
		}),
		want: []volErr{vForb(v0 + ".emptyDir.sizeLimit")}},

	// Ported from the API server's TestValidateVolumes and
	// TestValidateKeyToPath.
	{name: "upstream: name has dots", mutate: withVols(volNamed("a.b", emptyDirSrc())), want: []volErr{vInv(v0+".name", "must not contain dots")}},
	{name: "upstream: gitRepo with .. in a name", mutate: withVols(volV(corev1.VolumeSource{GitRepo: &corev1.GitRepoVolumeSource{Repository: "r", Directory: "..foo"}}))},
	{name: "upstream: gitRepo starts with ../", mutate: withVols(volV(corev1.VolumeSource{GitRepo: &corev1.GitRepoVolumeSource{Repository: "r", Directory: "../dots/bar"}})),
		want: []volErr{vInv(v0+".gitRepo.directory", "must not contain '..'")}},
	{name: "upstream: gitRepo contains ..", mutate: withVols(volV(corev1.VolumeSource{GitRepo: &corev1.GitRepoVolumeSource{Repository: "r", Directory: "dots/../bar"}})),
		want: []volErr{vInv(v0+".gitRepo.directory", "must not contain '..'")}},
	{name: "upstream: iscsi eui and naa", mutate: withVols(
		volNamed("a", corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "t", IQN: "eui.0123456789ABCDEF"}}),
		volNamed("b", corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "t", IQN: "naa.62004567BA64678D0123456789ABCDEF"}}))},
	{name: "upstream: iscsi invalid eui and naa", mutate: withVols(
		volNamed("a", corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "t", IQN: "eui.0123456789ABCDEFGHIJ"}}),
		volNamed("b", corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "t", IQN: "naa.62004567BA_4-78D.123456789ABCDEF"}})),
		want: []volErr{vInv(v0+".iscsi.iqn", "must be valid format"), vInv("spec.volumes[1].iscsi.iqn", "must be valid format")}},
	{name: "upstream: key to path with dots in names", mutate: withVols(volV(secretSrc(keyPath("k", "p/..p/p../p..p"), keyPath("k", "p/p/p/p"))))},
	{name: "upstream: key to path ending in ..", mutate: withVols(volV(secretSrc(keyPath("k", "p/..")))), want: []volErr{vInv(v0+".secret.items[0].path", "must not contain '..'")}},
	{name: "upstream: downwardAPI dot dot file name", mutate: withVols(volV(downwardSrc(fieldFile("..badFileName", "metadata.labels")))),
		want: []volErr{vInv(v0+".downwardAPI.path", "must not start with '..'")}},
	{name: "upstream: downwardAPI dot dot first level dirent", mutate: withVols(volV(downwardSrc(fieldFile("..badDirName/goodFileName", "metadata.labels")))),
		want: []volErr{vInv(v0+".downwardAPI.path", "must not start with '..'")}},
	{name: "upstream: fc targetWWNs and no lun", mutate: withVols(volV(corev1.VolumeSource{FC: &corev1.FCVolumeSource{TargetWWNs: []string{"w"}}})),
		want: []volErr{vReq(v0+".fc.lun", "lun is required if targetWWNs is specified")}},
	{name: "upstream: quobyte wrong format multiple registries", mutate: withVols(volV(corev1.VolumeSource{Quobyte: &corev1.QuobyteVolumeSource{Registry: "registry:7861,reg2", Volume: "v"}})),
		want: []volErr{vInv(v0+".quobyte.registry", "must be a host:port pair or multiple pairs separated by commas")}},
	{name: "upstream: azureDisk empty name and uri", mutate: withVols(volV(corev1.VolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{}})),
		want: []volErr{vReq(v0 + ".azureDisk.diskName"), vReq(v0 + ".azureDisk.diskURI"), vNots(v0 + ".azureDisk.diskURI")}},
	{name: "upstream: image volume with empty name", mutate: withVols(volNamed("", corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "img"}})),
		want: []volErr{vReq(v0 + ".name")}},

	// Other volume types: the API server's required fields and checks.
	{name: "nfs", mutate: withVols(volV(corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{}})),
		want: []volErr{vReq(v0 + ".nfs.server"), vReq(v0 + ".nfs.path"), vInv(v0+".nfs.path", "must be an absolute path")}},
	{name: "iscsi required", mutate: withVols(volV(corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{SessionCHAPAuth: true}})),
		want: []volErr{vReq(v0 + ".iscsi.targetPortal"), vReq(v0 + ".iscsi.iqn"), vReq(v0 + ".iscsi.secretRef")}},
	{name: "iscsi values", mutate: withVols(volV(corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "t", IQN: "bogus", Lun: 256, InitiatorName: ptr.To("eui.123")}})),
		want: []volErr{vInv(v0+".iscsi.iqn", "must be valid format starting with iqn, eui, or naa"), vInv(v0 + ".iscsi.lun"), vInv(v0+".iscsi.initiatorname", "must be valid format")}},
	{name: "iscsi iqn format", mutate: withVols(volV(corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "t", IQN: "iqn.x", InitiatorName: ptr.To("bogus")}})),
		want: []volErr{vInv(v0+".iscsi.iqn", "must be valid format"), vInv(v0+".iscsi.initiatorname", "must be valid format starting with iqn, eui, or naa")}},
	{name: "iscsi name and portal too long", mutate: withVols(volV(corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: strings.Repeat("t", 63), IQN: "naa." + strings.Repeat("a", 32), InitiatorName: ptr.To("naa." + strings.Repeat("b", 32))}})),
		want: []volErr{vInv(v0 + ".name")}},
	{name: "glusterfs", mutate: withVols(volV(corev1.VolumeSource{Glusterfs: &corev1.GlusterfsVolumeSource{}})), want: []volErr{vReq(v0 + ".glusterfs.endpoints"), vReq(v0 + ".glusterfs.path")}},
	{name: "flocker neither", mutate: withVols(volV(corev1.VolumeSource{Flocker: &corev1.FlockerVolumeSource{}})), want: []volErr{vReq(v0 + ".flocker")}},
	{name: "flocker both", mutate: withVols(volV(corev1.VolumeSource{Flocker: &corev1.FlockerVolumeSource{DatasetName: "a/b", DatasetUUID: "u"}})),
		want: []volErr{vInv(v0 + ".flocker"), vInv(v0+".flocker.datasetName", "must not contain '/'")}},
	{name: "gcePersistentDisk (the API server's path)", mutate: withVols(volV(corev1.VolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{Partition: 256}})),
		want: []volErr{vReq(v0 + ".persistentDisk.pdName"), vInv(v0 + ".persistentDisk.partition")}},
	{name: "awsElasticBlockStore", mutate: withVols(volV(corev1.VolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{Partition: -1}})),
		want: []volErr{vReq(v0 + ".awsElasticBlockStore.volumeID"), vInv(v0 + ".awsElasticBlockStore.partition")}},
	{name: "rbd", mutate: withVols(volV(corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{}})), want: []volErr{vReq(v0 + ".rbd.monitors"), vReq(v0 + ".rbd.image")}},
	{name: "cinder", mutate: withVols(volV(corev1.VolumeSource{Cinder: &corev1.CinderVolumeSource{SecretRef: &corev1.LocalObjectReference{}}})),
		want: []volErr{vReq(v0 + ".cinder.volumeID"), vReq(v0 + ".cinder.secretRef.name")}},
	{name: "cephfs", mutate: withVols(volV(corev1.VolumeSource{CephFS: &corev1.CephFSVolumeSource{}})), want: []volErr{vReq(v0 + ".cephfs.monitors")}},
	{name: "cephfs as a second source", mutate: withVols(volV(corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{CephMonitors: []string{"m"}, RBDImage: "i"}, CephFS: &corev1.CephFSVolumeSource{}})),
		want: []volErr{vForb(v0 + ".cephFS")}},
	{name: "quobyte", mutate: withVols(volV(corev1.VolumeSource{Quobyte: &corev1.QuobyteVolumeSource{Registry: "a:1,nohost"}})),
		want: []volErr{vInv(v0 + ".quobyte.registry"), vReq(v0 + ".quobyte.volume")}},
	{name: "quobyte registry required", mutate: withVols(volV(corev1.VolumeSource{Quobyte: &corev1.QuobyteVolumeSource{Volume: "v"}})), want: []volErr{vReq(v0 + ".quobyte.registry")}},
	{name: "quobyte tenant", mutate: withVols(volV(corev1.VolumeSource{Quobyte: &corev1.QuobyteVolumeSource{Registry: "nohost", Volume: "v", Tenant: strings.Repeat("t", 65)}})),
		want: []volErr{vReq(v0 + ".quobyte.tenant")}},
	{name: "fc neither", mutate: withVols(volV(corev1.VolumeSource{FC: &corev1.FCVolumeSource{}})), want: []volErr{vReq(v0 + ".fc.targetWWNs")}},
	{name: "fc both and lun", mutate: withVols(volV(corev1.VolumeSource{FC: &corev1.FCVolumeSource{TargetWWNs: []string{"w"}, WWIDs: []string{"i"}}})),
		want: []volErr{vInv(v0 + ".fc.targetWWNs"), vReq(v0 + ".fc.lun")}},
	{name: "fc lun range", mutate: withVols(volV(corev1.VolumeSource{FC: &corev1.FCVolumeSource{TargetWWNs: []string{"w"}, Lun: ptr.To[int32](256)}})), want: []volErr{vInv(v0 + ".fc.lun")}},
	{name: "flexVolume", mutate: withVols(volV(corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Options: map[string]string{"kubernetes.io/x": "y", "a.K8S.io": "z"}}})),
		want: []volErr{vReq(v0 + ".flexVolume.driver"), vInv(v0+".flexVolume.options[kubernetes.io/x]", "kubernetes.io and k8s.io namespaces are reserved"), vInv(v0 + ".flexVolume.options[a.K8S.io]")}},
	{name: "azureFile", mutate: withVols(volV(corev1.VolumeSource{AzureFile: &corev1.AzureFileVolumeSource{}})),
		want: []volErr{vReq(v0 + ".azureFile.secretName"), vReq(v0 + ".azureFile.shareName")}},
	{name: "azureDisk defaulted kind needs https", mutate: withVols(volV(corev1.VolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{DiskName: "d", DataDiskURI: "/subscriptions/x"}})),
		want: []volErr{vNots(v0 + ".azureDisk.diskURI")}},
	{name: "azureDisk values", mutate: withVols(volV(corev1.VolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{
		CachingMode: ptr.To[corev1.AzureDataDiskCachingMode]("Some"), Kind: ptr.To[corev1.AzureDataDiskKind]("Other")}})),
		want: []volErr{vReq(v0 + ".azureDisk.diskName"), vReq(v0 + ".azureDisk.diskURI"), vNots(v0 + ".azureDisk.cachingMode"), vNots(v0 + ".azureDisk.kind"), vNots(v0 + ".azureDisk.diskURI")}},
	{name: "azureDisk managed", mutate: withVols(volV(corev1.VolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{DiskName: "d", DataDiskURI: "https://x", Kind: ptr.To(corev1.AzureManagedDisk)}})),
		want: []volErr{vNots(v0 + ".azureDisk.diskURI")}},
	{name: "vsphereVolume", mutate: withVols(volV(corev1.VolumeSource{VsphereVolume: &corev1.VsphereVirtualDiskVolumeSource{}})), want: []volErr{vReq(v0 + ".vsphereVolume.volumePath")}},
	{name: "photonPersistentDisk", mutate: withVols(volV(corev1.VolumeSource{PhotonPersistentDisk: &corev1.PhotonPersistentDiskVolumeSource{}})), want: []volErr{vReq(v0 + ".photonPersistentDisk.pdID")}},
	{name: "portworxVolume", mutate: withVols(volV(corev1.VolumeSource{PortworxVolume: &corev1.PortworxVolumeSource{}})), want: []volErr{vReq(v0 + ".portworxVolume.volumeID")}},
	{name: "scaleIO", mutate: withVols(volV(corev1.VolumeSource{ScaleIO: &corev1.ScaleIOVolumeSource{}})),
		want: []volErr{vReq(v0 + ".scaleIO.gateway"), vReq(v0 + ".scaleIO.system"), vReq(v0 + ".scaleIO.volumeName")}},
	{name: "storageos", mutate: withVols(volV(corev1.VolumeSource{StorageOS: &corev1.StorageOSVolumeSource{VolumeNamespace: "Bad_NS", SecretRef: &corev1.LocalObjectReference{}}})),
		want: []volErr{vReq(v0 + ".storageos.volumeName"), vInv(v0 + ".storageos.volumeNamespace"), vReq(v0 + ".storageos.secretRef.name")}},
	{name: "storageos name", mutate: withVols(volV(corev1.VolumeSource{StorageOS: &corev1.StorageOSVolumeSource{VolumeName: "Bad_Name"}})), want: []volErr{vInv(v0 + ".storageos.volumeName")}},
	{name: "csi driver required", mutate: withVols(volV(corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{NodePublishSecretRef: &corev1.LocalObjectReference{}}})),
		want: []volErr{vReq(v0 + ".csi.driver"), vReq(v0 + ".csi.nodePublishSecretRef.name")}},
	{name: "csi driver", mutate: withVols(volV(corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: strings.Repeat("d", 64), NodePublishSecretRef: &corev1.LocalObjectReference{Name: "Bad_Secret"}}})),
		want: []volErr{vTooLong(v0 + ".csi.driver"), vInv(v0 + ".csi.name")}},
	{name: "csi driver format", mutate: withVols(volV(corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "bad_driver"}})), want: []volErr{vInv(v0 + ".csi.driver")}},
	{name: "gitRepo", mutate: withVols(volV(corev1.VolumeSource{GitRepo: &corev1.GitRepoVolumeSource{Directory: "/../x"}})),
		want: []volErr{vReq(v0 + ".gitRepo.repository"), vInv(v0+".gitRepo.directory", "must be a relative path"), vInv(v0+".gitRepo.directory", "must not contain '..'")}},
}

// withGates turns v1.37's alpha volume gates on for one test.
func withGates(t *testing.T) {
	t.Helper()
	e, a := emptyDirVolumeMode, atomicWriteVolumeUserFields
	emptyDirVolumeMode, atomicWriteVolumeUserFields = true, true
	t.Cleanup(func() { emptyDirVolumeMode, atomicWriteVolumeUserFields = e, a })
}

func TestVolumes(t *testing.T) {
	names := map[string]bool{}
	for _, tc := range volumeCases {
		if names[tc.name] {
			t.Fatalf("two cases named %q", tc.name)
		}
		names[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			if tc.gates {
				withGates(t)
			}
			pod := volPod()
			tc.mutate(pod)
			byName, errs := volumes(&pod.Spec, &pod.ObjectMeta, field.NewPath("spec"))
			checkVolErrs(t, errs, tc.want)

			// The map holds the volumes without errors, by name.
			for i, v := range pod.Spec.Volumes {
				prefix := fmt.Sprintf("spec.volumes[%d].", i)
				bad := false
				for _, e := range errs {
					if strings.HasPrefix(e.Field, prefix) && !strings.HasPrefix(e.Detail, "must not reference a PVC") {
						bad = true
					}
				}
				if _, ok := byName[v.Name]; !ok && !bad && !isDuplicateOfValid(pod.Spec.Volumes, i, errs) {
					t.Errorf("volume %d (%q) has no error and is not in the map", i, v.Name)
				}
			}
		})
	}
}

func isDuplicateOfValid(vs []corev1.Volume, i int, errs field.ErrorList) bool {
	for j := 0; j < i; j++ {
		if vs[j].Name == vs[i].Name {
			return true
		}
	}
	return false
}

// checkVolErrs compares errs with want, in any order.
func checkVolErrs(t *testing.T, errs field.ErrorList, want []volErr) {
	t.Helper()
	left := append([]volErr(nil), want...)
	var extra field.ErrorList
	for _, e := range errs {
		found := -1
		for i, w := range left {
			if w.typ == e.Type && w.field == e.Field && (w.detail == "" || w.detail == e.Detail) {
				found = i
				break
			}
		}
		if found < 0 {
			extra = append(extra, e)
			continue
		}
		left = append(left[:found], left[found+1:]...)
	}
	for _, e := range extra {
		t.Errorf("unexpected error: %s %s: %q (%v)", e.Type, e.Field, e.Detail, e.BadValue)
	}
	for _, w := range left {
		t.Errorf("missing error: %s %s %q", w.typ, w.field, w.detail)
	}
}

// TestVolumesSameAfterDefaulting: a pod and the pod defaults.Pod makes of
// it get the same errors (defaulting fills what the API server's does
// before validating).
func TestVolumesSameAfterDefaulting(t *testing.T) {
	key := func(errs field.ErrorList) []string {
		var out []string
		for _, e := range errs {
			out = append(out, string(e.Type)+" "+e.Field+" "+e.Detail)
		}
		sort.Strings(out) // errors over a map's keys (flexVolume options) come in any order
		return out
	}
	for _, tc := range volumeCases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.gates {
				withGates(t)
			}
			pod := volPod()
			tc.mutate(pod)
			defaulted := pod.DeepCopy()
			defaults.Pod(defaulted)
			_, errs := volumes(&pod.Spec, &pod.ObjectMeta, field.NewPath("spec"))
			_, dErrs := volumes(&defaulted.Spec, &defaulted.ObjectMeta, field.NewPath("spec"))
			if a, b := key(errs), key(dErrs); strings.Join(a, "\n") != strings.Join(b, "\n") {
				t.Errorf("errors differ after defaulting:\n%s\nvs\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
			}
		})
	}
}

// TestVolumesMap: the map has each valid volume's source, an emptyDir for
// one with none.
func TestVolumesMap(t *testing.T) {
	pod := volPod()
	pod.Spec.Volumes = []corev1.Volume{
		volNamed("a", corev1.VolumeSource{}),
		volNamed("b", hostPathSrc("/x", nil)),
		volNamed("c", hostPathSrc("", nil)),
	}
	byName, errs := volumes(&pod.Spec, &pod.ObjectMeta, field.NewPath("spec"))
	if len(errs) != 1 {
		t.Fatalf("errors: %v", errs)
	}
	if len(byName) != 2 || byName["a"].EmptyDir == nil || byName["b"].HostPath != pod.Spec.Volumes[1].HostPath {
		t.Errorf("map: %+v", byName)
	}
	if pod.Spec.Volumes[0].EmptyDir != nil {
		t.Errorf("the pod was changed")
	}
}

// TestVolumesDoNotWrite: validation only reads the pod (a divisor's
// String would cache its text in the pod's quantity).
func TestVolumesDoNotWrite(t *testing.T) {
	for _, tc := range volumeCases {
		pod := volPod()
		tc.mutate(pod)
		before := pod.DeepCopy()
		volumes(&pod.Spec, &pod.ObjectMeta, field.NewPath("spec"))
		if !equalPods(before, pod) {
			t.Errorf("%s: the pod was changed", tc.name)
		}
	}
}

func equalPods(a, b *corev1.Pod) bool { return reflect.DeepEqual(a, b) }

// commonVolumes are valid volumes of the kinds most pods have.
func commonVolumes() []corev1.Volume {
	return []corev1.Volume{
		volNamed("e", emptyDirSrc()),
		volNamed("h", hostPathSrc("/var/log", ptr.To(corev1.HostPathDirectory))),
		volNamed("s", secretSrc(keyPath("a", "a"), keyPath("b", "b/c"))),
		volNamed("c", configMapSrc(keyPath("a", "a"))),
		volNamed("d", downwardSrc(fieldFile("a", "metadata.name"), resourceFile("b", "limits.cpu", "1m"))),
		volNamed("p", projectedSrc(secretProj("s", keyPath("k", "secret")), configMapProj("cm", keyPath("k", "config")),
			downwardProj(fieldFile("labels", "metadata.labels")), tokenProj("token", ptr.To[int64](3600)))),
	}
}

// TestVolumesValidPathAllocations: valid volumes build no field paths
// beyond one per volume (and few allocations otherwise).
func TestVolumesValidPathAllocations(t *testing.T) {
	pod := volPod()
	pod.Spec.Volumes = commonVolumes()
	fld := field.NewPath("spec")
	if _, errs := volumes(&pod.Spec, &pod.ObjectMeta, fld); len(errs) != 0 {
		t.Fatal(errs)
	}
	allocs := testing.AllocsPerRun(100, func() { volumes(&pod.Spec, &pod.ObjectMeta, fld) })
	// The volumes' path, a path and a map entry per volume (a source is
	// stored outside the map's buckets), the map, the projection's set of
	// paths; more under the race detector.
	if max := float64(3*len(pod.Spec.Volumes) + 6); allocs > max {
		t.Errorf("%v allocations for %d valid volumes, want at most %v", allocs, len(pod.Spec.Volumes), max)
	}
}

func BenchmarkVolumes(b *testing.B) {
	pod := volPod()
	pod.Spec.Volumes = commonVolumes()
	fld := field.NewPath("spec")
	b.ReportAllocs()
	for b.Loop() {
		volumes(&pod.Spec, &pod.ObjectMeta, fld)
	}
}
