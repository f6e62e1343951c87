package apiobjects

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podstart/podstart/mounts"
)

// Errors of the payload builders, matched with errors.Is; the messages are
// kubelet's.
var (
	// ErrNoDefaultMode: a volume without defaultMode (the API server
	// always sets one; a pod that skipped defaulting has none).
	ErrNoDefaultMode = errors.New("no defaultMode used, not even the default value for it")
	// ErrVolumeKeyMissing: an item names a key the Secret or ConfigMap
	// does not have, and the reference is not optional.
	ErrVolumeKeyMissing = errors.New("volume item references a missing key")
	// ErrProjectionNotSupported: a projected volume source podstart cannot
	// serve; the volume is refused, not set up without it. Every source of
	// v1.37 is served now: it is kept for callers that match it.
	ErrProjectionNotSupported = errors.New("projected volume source not supported by podstart")
	// ErrInvalidMode: a defaultMode or an item's mode outside 0–0777
	// (octal), which the API server refuses. It is refused here too,
	// naming the field, rather than converted: as an fs.FileMode a
	// negative mode, or one with bit 22 or 23 set, is a setuid or setgid
	// file.
	ErrInvalidMode = errors.New("invalid volume file mode")
)

// payloadError carries kubelet's message and a class for errors.Is.
type payloadError struct {
	msg   string
	class error
}

func (e *payloadError) Error() string        { return e.msg }
func (e *payloadError) Is(target error) bool { return target == e.class }

// fileMode is the file mode of an API mode field (defaultMode, an item's
// mode): 0–0777 as the API server's validation allows, anything else
// refused with its message, naming the field.
func fileMode(field string, m int32) (fs.FileMode, error) {
	if m < 0 || m > 0o777 {
		return 0, &payloadError{fmt.Sprintf("%s: Invalid value: %d: must be a number between 0 and 0777 (octal), both inclusive", field, m), ErrInvalidMode}
	}
	return fs.FileMode(m), nil
}

// itemModes is the mode of each item (its own, else defaultMode), all
// checked before anything is built; prefix names the items' field.
func itemModes[T any](prefix string, items []T, mode func(*T) *int32, defaultMode int32) (fs.FileMode, []fs.FileMode, error) {
	def, err := fileMode("defaultMode", defaultMode)
	if err != nil {
		return 0, nil, err
	}
	modes := make([]fs.FileMode, len(items))
	for i := range items {
		modes[i] = def
		if m := mode(&items[i]); m != nil {
			if modes[i], err = fileMode(fmt.Sprintf("%sitems[%d].mode", prefix, i), *m); err != nil {
				return 0, nil, err
			}
		}
	}
	return def, modes, nil
}

func keyMode(it *corev1.KeyToPath) *int32                  { return it.Mode }
func downwardMode(it *corev1.DownwardAPIVolumeFile) *int32 { return it.Mode }

// SecretPayload is kubelet's secret.MakePayload: every key of the Secret
// as a file of that name with defaultMode, or, when items are given, each
// item's key at its path with its mode (defaultMode if unset). A missing
// key fails unless optional. The Secret of a missing optional reference is
// an empty one. A defaultMode or item mode outside 0–0777 is refused
// (ErrInvalidMode), as the API server refuses it.
func SecretPayload(items []corev1.KeyToPath, secret *corev1.Secret, defaultMode *int32, optional bool) (map[string]mounts.File, error) {
	if defaultMode == nil {
		return nil, ErrNoDefaultMode
	}
	def, modes, err := itemModes("", items, keyMode, *defaultMode)
	if err != nil {
		return nil, err
	}
	out := make(map[string]mounts.File, len(secret.Data))
	if len(items) == 0 {
		for name, data := range secret.Data {
			out[name] = mounts.File{Data: data, Mode: def}
		}
		return out, nil
	}
	for i, it := range items {
		data, ok := secret.Data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, &payloadError{"references non-existent secret key: " + it.Key, ErrVolumeKeyMissing}
		}
		out[it.Path] = mounts.File{Data: data, Mode: modes[i]}
	}
	return out, nil
}

// ConfigMapPayload is kubelet's configmap.MakePayload: as SecretPayload,
// with keys from Data and BinaryData. Without items a key in both is
// BinaryData's; with items, Data's (kubelet's order of lookups).
func ConfigMapPayload(items []corev1.KeyToPath, cm *corev1.ConfigMap, defaultMode *int32, optional bool) (map[string]mounts.File, error) {
	if defaultMode == nil {
		return nil, ErrNoDefaultMode
	}
	def, modes, err := itemModes("", items, keyMode, *defaultMode)
	if err != nil {
		return nil, err
	}
	out := make(map[string]mounts.File, len(cm.Data)+len(cm.BinaryData))
	if len(items) == 0 {
		for name, data := range cm.Data {
			out[name] = mounts.File{Data: []byte(data), Mode: def}
		}
		for name, data := range cm.BinaryData {
			out[name] = mounts.File{Data: data, Mode: def}
		}
		return out, nil
	}
	for i, it := range items {
		var data []byte
		if s, ok := cm.Data[it.Key]; ok {
			data = []byte(s)
		} else if b, ok := cm.BinaryData[it.Key]; ok {
			data = b
		} else {
			if optional {
				continue
			}
			return nil, &payloadError{"configmap references non-existent config key: " + it.Key, ErrVolumeKeyMissing}
		}
		out[it.Path] = mounts.File{Data: data, Mode: modes[i]}
	}
	return out, nil
}

// DownwardAPIPayload is kubelet's downwardapi.CollectData: one file per
// item at its cleaned path, holding a field of the pod (kubelet's
// fieldpath.ExtractFieldPathAsString: metadata.name, namespace, uid,
// labels and annotations whole in FormatMap's key="value" lines, or one
// label or annotation by subscript) or a container's resource (a missing
// or zero cpu, memory or ephemeral-storage limit read as the node's
// allocatable). Every item's error is reported, aggregated as kubelet
// does. A defaultMode or item mode outside 0–0777 is refused
// (ErrInvalidMode) before any item is read.
func DownwardAPIPayload(items []corev1.DownwardAPIVolumeFile, pod *corev1.Pod, nodeAllocatable corev1.ResourceList, defaultMode *int32) (map[string]mounts.File, error) {
	if defaultMode == nil {
		return nil, ErrNoDefaultMode
	}
	_, modes, err := itemModes("", items, downwardMode, *defaultMode)
	if err != nil {
		return nil, err
	}
	var errs []error
	out := make(map[string]mounts.File, len(items))
	for i, it := range items {
		f := mounts.File{Mode: modes[i]}
		switch {
		case it.FieldRef != nil:
			v, err := FieldPathValue(pod, it.FieldRef.FieldPath)
			if err != nil {
				errs = append(errs, err)
			} else {
				f.Data = []byte(v)
			}
		case it.ResourceFieldRef != nil:
			v, err := containerResourceValue(it.ResourceFieldRef, pod, nodeAllocatable)
			if err != nil {
				errs = append(errs, err)
			} else {
				f.Data = []byte(v)
			}
		}
		out[filepath.Clean(it.Path)] = f
	}
	if err := utilerrors.NewAggregate(errs); err != nil {
		return nil, err
	}
	return out, nil
}

// FieldPathValue is kubelet's fieldpath.ExtractFieldPathAsString on a pod,
// what a downward API volume file holds: unlike an env var's fieldRef
// (criconfig.FieldRefValue), it knows metadata fields only, gives all
// labels or annotations in FormatMap's form, and checks subscripts.
func FieldPathValue(pod *corev1.Pod, fieldPath string) (string, error) {
	if path, sub, ok := splitSubscript(fieldPath); ok {
		switch path {
		case "metadata.annotations":
			if errs := validation.IsQualifiedName(strings.ToLower(sub)); len(errs) != 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", fieldPath, strings.Join(errs, ";"))
			}
			return pod.Annotations[sub], nil
		case "metadata.labels":
			if errs := validation.IsQualifiedName(sub); len(errs) != 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", fieldPath, strings.Join(errs, ";"))
			}
			return pod.Labels[sub], nil
		}
		return "", fmt.Errorf("fieldPath %q does not support subscript", fieldPath)
	}
	switch fieldPath {
	case "metadata.annotations":
		return FormatMap(pod.Annotations), nil
	case "metadata.labels":
		return FormatMap(pod.Labels), nil
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", fieldPath)
}

// splitSubscript is kubelet's fieldpath.SplitMaybeSubscriptedPath:
// "metadata.labels['k']" is ("metadata.labels", "k").
func splitSubscript(fieldPath string) (string, string, bool) {
	s, ok := strings.CutSuffix(fieldPath, "']")
	if !ok {
		return fieldPath, "", false
	}
	path, sub, ok := strings.Cut(s, "['")
	if !ok || path == "" {
		return fieldPath, "", false
	}
	return path, sub, true
}

// FormatMap is kubelet's fieldpath.FormatMap: one key="value" line per
// entry, sorted by key, the value quoted as Go quotes strings.
func FormatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	n := 0
	for k, v := range m {
		keys = append(keys, k)
		n += len(k) + len(v) + 4
	}
	slices.Sort(keys)
	b := make([]byte, 0, n)
	for _, k := range keys {
		if len(b) > 0 {
			b = append(b, '\n')
		}
		b = append(b, k...)
		b = append(b, '=')
		b = strconv.AppendQuote(b, m[k])
	}
	return string(b)
}

// containerResourceValue is kubelet's
// ExtractResourceValueByContainerNameAndNodeAllocatable.
func containerResourceValue(ref *corev1.ResourceFieldSelector, pod *corev1.Pod, allocatable corev1.ResourceList) (string, error) {
	c := findContainer(pod, ref.ContainerName)
	if c == nil {
		return "", fmt.Errorf("container %s not found", ref.ContainerName)
	}
	limits := make(corev1.ResourceList, len(c.Resources.Limits)+3)
	for k, v := range c.Resources.Limits {
		limits[k] = v
	}
	// Huge pages are never overcommitted: they always have a limit.
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if q, ok := limits[name]; !ok || q.IsZero() {
			if a, ok := allocatable[name]; ok {
				limits[name] = a.DeepCopy()
			}
		}
	}
	divisor := resource.MustParse("1")
	if !ref.Divisor.IsZero() {
		divisor = ref.Divisor
	}
	cpu := func(q resource.Quantity) (string, error) {
		return ceilString(float64(q.MilliValue()) / float64(divisor.MilliValue())), nil
	}
	bytes := func(q resource.Quantity) (string, error) {
		return ceilString(float64(q.Value()) / float64(divisor.Value())), nil
	}
	req := c.Resources.Requests
	switch ref.Resource {
	case "limits.cpu":
		return cpu(limits[corev1.ResourceCPU])
	case "limits.memory":
		return bytes(limits[corev1.ResourceMemory])
	case "limits.ephemeral-storage":
		return bytes(limits[corev1.ResourceEphemeralStorage])
	case "requests.cpu":
		return cpu(req[corev1.ResourceCPU])
	case "requests.memory":
		return bytes(req[corev1.ResourceMemory])
	case "requests.ephemeral-storage":
		return bytes(req[corev1.ResourceEphemeralStorage])
	}
	if name, ok := strings.CutPrefix(ref.Resource, "requests."); ok && strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) {
		return bytes(req[corev1.ResourceName(name)])
	}
	if name, ok := strings.CutPrefix(ref.Resource, "limits."); ok && strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) {
		return bytes(limits[corev1.ResourceName(name)])
	}
	return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
}

func ceilString(f float64) string { return strconv.FormatInt(int64(math.Ceil(f)), 10) }

// findContainer is kubelet's findContainerInPod: app containers first,
// then init containers.
func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// Projection is what kubelet's projected volume plugin reads to build one
// volume's payload.
type Projection struct {
	Pod        *corev1.Pod
	VolumeName string
	Source     *corev1.ProjectedVolumeSource
	// Objects gives the Secrets and ConfigMaps; nil fails the volume, as
	// kubelet without an API client does.
	Objects Source
	// Tokens serves serviceAccountToken sources; nil fails them.
	Tokens *Tokens
	// TrustBundles serves clusterTrustBundle sources; nil fails them
	// (ErrNoClusterTrustBundles).
	TrustBundles ClusterTrustBundleSource
	// PodCertificates serves podCertificate sources; nil fails them
	// (ErrNoPodCertificateClient).
	PodCertificates *PodCertificates
	// FsUser and FsGroup are the pod's (FsUser(pod), its fsGroup): with
	// either, a token is written 0600 (fsGroup ownership then adds group
	// read), owned by FsUser.
	FsUser, FsGroup *int64
	// NodeAllocatable stands in for missing container limits in
	// resourceFieldRef items.
	NodeAllocatable corev1.ResourceList
}

// ProjectedPayload is kubelet's projected collectData: the sources' files
// merged in order (a later source's file replaces an earlier one's), a
// missing optional Secret or ConfigMap read as an empty one, each
// source's error collected and all reported, aggregated as kubelet does.
// clusterTrustBundle sources are ClusterTrustBundlePayload's, written
// as tokens are. podCertificate sources are PodCertificates' key and
// chain, written as tokens are (PodCertificatePayload). A defaultMode or
// item mode outside 0–0777 is refused (ErrInvalidMode, naming sources[i]...) before any
// object or token is fetched.
func ProjectedPayload(ctx context.Context, p Projection) (map[string]mounts.File, error) {
	src := p.Source
	if src.DefaultMode == nil {
		return nil, ErrNoDefaultMode
	}
	if err := projectedModes(src); err != nil {
		return nil, err
	}
	if p.Objects == nil {
		return nil, fmt.Errorf("cannot setup projected volume %v because kube client is not configured", p.VolumeName)
	}
	ns := p.Pod.Namespace
	var errs []error
	out := map[string]mounts.File{}
	merge := func(files map[string]mounts.File, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		for k, f := range files {
			out[k] = f
		}
	}
	// kubelet writes tokens (and trust bundles, certificates) 0600 when
	// the pod has an fsUser or fsGroup, relying on ownership for access.
	privateMode := *src.DefaultMode
	if p.FsUser != nil || p.FsGroup != nil {
		privateMode = 0o600
	}
	for i, s := range src.Sources {
		switch {
		case s.Secret != nil:
			optional := s.Secret.Optional != nil && *s.Secret.Optional
			secret, err := p.Objects.GetSecret(ctx, ns, s.Secret.Name)
			if err != nil {
				if !apierrors.IsNotFound(err) || !optional {
					errs = append(errs, err)
					continue
				}
				secret = &corev1.Secret{}
			}
			merge(SecretPayload(s.Secret.Items, secret, src.DefaultMode, optional))
		case s.ConfigMap != nil:
			optional := s.ConfigMap.Optional != nil && *s.ConfigMap.Optional
			cm, err := p.Objects.GetConfigMap(ctx, ns, s.ConfigMap.Name)
			if err != nil {
				if !apierrors.IsNotFound(err) || !optional {
					errs = append(errs, err)
					continue
				}
				cm = &corev1.ConfigMap{}
			}
			merge(ConfigMapPayload(s.ConfigMap.Items, cm, src.DefaultMode, optional))
		case s.DownwardAPI != nil:
			merge(DownwardAPIPayload(s.DownwardAPI.Items, p.Pod, p.NodeAllocatable, src.DefaultMode))
		case s.ServiceAccountToken != nil:
			tp := s.ServiceAccountToken
			var auds []string
			if tp.Audience != "" {
				auds = []string{tp.Audience}
			}
			tr, err := p.Tokens.GetServiceAccountToken(ctx, ns, p.Pod.Spec.ServiceAccountName, &authenticationv1.TokenRequest{
				Spec: authenticationv1.TokenRequestSpec{
					Audiences:         auds,
					ExpirationSeconds: tp.ExpirationSeconds,
					BoundObjectRef: &authenticationv1.BoundObjectReference{
						APIVersion: "v1", Kind: "Pod", Name: p.Pod.Name, UID: p.Pod.UID,
					},
				},
			})
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out[tp.Path] = mounts.File{Data: []byte(tr.Status.Token), Mode: fs.FileMode(privateMode), FsUser: p.FsUser}
		case s.ClusterTrustBundle != nil:
			data, err := ClusterTrustBundlePayload(ctx, p.TrustBundles, s.ClusterTrustBundle)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out[s.ClusterTrustBundle.Path] = mounts.File{Data: data, Mode: fs.FileMode(privateMode), FsUser: p.FsUser}
		case s.PodCertificate != nil:
			merge(PodCertificatePayload(ctx, p.PodCertificates, p.Pod, p.VolumeName, i, s.PodCertificate, fs.FileMode(privateMode), p.FsUser))
		}
	}
	if err := utilerrors.NewAggregate(errs); err != nil {
		return nil, err
	}
	return out, nil
}

// projectedModes checks defaultMode and every source's items' modes.
func projectedModes(src *corev1.ProjectedVolumeSource) error {
	if _, err := fileMode("defaultMode", *src.DefaultMode); err != nil {
		return err
	}
	for i, s := range src.Sources {
		var err error
		switch {
		case s.Secret != nil:
			_, _, err = itemModes(fmt.Sprintf("sources[%d].secret.", i), s.Secret.Items, keyMode, *src.DefaultMode)
		case s.ConfigMap != nil:
			_, _, err = itemModes(fmt.Sprintf("sources[%d].configMap.", i), s.ConfigMap.Items, keyMode, *src.DefaultMode)
		case s.DownwardAPI != nil:
			_, _, err = itemModes(fmt.Sprintf("sources[%d].downwardAPI.", i), s.DownwardAPI.Items, downwardMode, *src.DefaultMode)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// FsUser is kubelet's FsUserFrom: the user every container of the pod
// (init, app and ephemeral) runs as, when all set one and it is the same;
// nil otherwise.
func FsUser(pod *corev1.Pod) *int64 {
	var user *int64
	visit := func(sc *corev1.SecurityContext) bool {
		var u *int64
		if pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.RunAsUser != nil {
			u = pod.Spec.SecurityContext.RunAsUser
		}
		if sc != nil && sc.RunAsUser != nil {
			u = sc.RunAsUser
		}
		if u == nil || user != nil && *user != *u {
			user = nil
			return false
		}
		if user == nil {
			v := *u
			user = &v
		}
		return true
	}
	for _, c := range pod.Spec.InitContainers {
		if !visit(c.SecurityContext) {
			return nil
		}
	}
	for _, c := range pod.Spec.Containers {
		if !visit(c.SecurityContext) {
			return nil
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if !visit(c.SecurityContext) {
			return nil
		}
	}
	return user
}
