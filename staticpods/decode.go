package staticpods

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"

	"github.com/podstart/podstart/defaults"
	"github.com/podstart/podstart/validation"
)

// Annotation keys kubelet's pod sources set (pkg/kubelet/types).
const (
	// ConfigSourceAnnotation names the source a pod came from: SourceFile,
	// SourceHTTP, or "api" for the API server.
	ConfigSourceAnnotation = "kubernetes.io/config.source"
	// ConfigHashAnnotation holds the static pod's UID (the hash of its
	// manifest); a mirror pod carries the same value in ConfigMirrorAnnotation.
	ConfigHashAnnotation = "kubernetes.io/config.hash"
	// ConfigSeenAnnotation is when the node first saw the pod.
	ConfigSeenAnnotation = "kubernetes.io/config.seen"
	// ConfigMirrorAnnotation marks a mirror pod (corev1.MirrorPodAnnotationKey).
	ConfigMirrorAnnotation = corev1.MirrorPodAnnotationKey
)

// Source names, kubelet's kubetypes.FileSource, HTTPSource and ApiserverSource.
const (
	SourceFile      = "file"
	SourceHTTP      = "http"
	SourceAPIServer = "api"
)

// MaxManifestSize is kubelet's maxConfigLength: a manifest file or an HTTP
// body larger than this is refused with ErrTooLarge.
const MaxManifestSize = 10 << 20

var (
	// ErrInvalidManifest matches every refusal of a manifest's content
	// (decode, defaults, validation, API references).
	ErrInvalidManifest = errors.New("invalid static pod manifest")
	// ErrTooLarge matches a manifest over MaxManifestSize; its message is
	// kubelet's ("the read limit is reached").
	ErrTooLarge = errors.New("the read limit is reached")
	// ErrAPIReference matches a static pod that refers to API objects
	// (secrets, config maps, service accounts, claims, ...), which kubelet
	// refuses: "static pods may not reference <resource>".
	ErrAPIReference = errors.New("static pods may not reference API objects")
	// ErrNotRegular matches a manifest path that is neither a regular file
	// nor a directory (FIFO, device, socket), which is never opened.
	ErrNotRegular = errors.New("manifest path is not a directory or file")
	// ErrDuplicateName matches a manifest shadowed by a later one (in file
	// name order) defining a pod of the same namespace and name.
	ErrDuplicateName = errors.New("duplicate pod name")
)

// manifestError is a refusal with kubelet's message that matches a sentinel.
type manifestError struct {
	msg  string
	kind error
}

func (e *manifestError) Error() string { return e.msg }
func (e *manifestError) Is(target error) bool {
	return target == e.kind || target == ErrInvalidManifest
}

func invalid(kind error, format string, args ...any) error {
	return &manifestError{msg: fmt.Sprintf(format, args...), kind: kind}
}

// Origin says where a manifest came from: it goes into the UID hash and the
// config.source annotation as kubelet's applyDefaults puts it.
type Origin struct {
	// Source is SourceFile or SourceHTTP.
	Source string
	// Location is the manifest file's path (as listed: the directory joined
	// with the entry's name) or the URL.
	Location string
	// NodeName is the node's name as given to kubelet (--hostname-override
	// or the hostname); pod names get it lowercased.
	NodeName string
}

func (o Origin) isFile() bool { return o.Source == SourceFile }

// DecodePod decodes one manifest (YAML or JSON, apiVersion v1, kind Pod)
// and applies kubelet's static pod defaults and checks: the API server's
// defaults, then applyDefaults (UID from the manifest's hash unless it sets
// metadata.uid, name suffixed "-<node name lowercased>", namespace
// "default", spec.nodeName, config.hash, a NoExecute Exists toleration for
// file pods, phase Pending), then validation and the API reference check.
// The config.source and config.seen annotations are set by the merge
// (Store), as kubelet's config does. parsed reports whether data decoded as
// a Pod at all (kubelet's tryDecodeSinglePod's first result).
func DecodePod(data []byte, o Origin) (pod *corev1.Pod, parsed bool, err error) {
	raw, err := utilyaml.ToJSON(data)
	if err != nil {
		return nil, false, invalid(ErrInvalidManifest, "%v", err)
	}
	var tm metav1.TypeMeta
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &tm); err != nil {
		return nil, false, invalid(ErrInvalidManifest, "%v", err)
	}
	if err := checkKind(tm, "Pod"); err != nil {
		return nil, false, err
	}
	pod = &corev1.Pod{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, pod); err != nil {
		return nil, false, invalid(ErrInvalidManifest, "%v", err)
	}
	if err := finish(pod, o); err != nil {
		return nil, true, err
	}
	return pod, true, nil
}

// DecodePodList decodes a v1 PodList (the HTTP source's second form) and
// applies DecodePod's defaults and checks to each item; one bad item
// refuses the list, as kubelet's tryDecodePodList.
func DecodePodList(data []byte, o Origin) (pods []*corev1.Pod, parsed bool, err error) {
	raw, err := utilyaml.ToJSON(data)
	if err != nil {
		return nil, false, invalid(ErrInvalidManifest, "%v", err)
	}
	var tm metav1.TypeMeta
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &tm); err != nil {
		return nil, false, invalid(ErrInvalidManifest, "%v", err)
	}
	if err := checkKind(tm, "PodList"); err != nil {
		return nil, false, err
	}
	var list corev1.PodList
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &list); err != nil {
		return nil, false, invalid(ErrInvalidManifest, "%v", err)
	}
	for i := range list.Items {
		p := &list.Items[i]
		p.TypeMeta = metav1.TypeMeta{}
		if err := finish(p, o); err != nil {
			return nil, true, err
		}
		pods = append(pods, p)
	}
	return pods, true, nil
}

// checkKind is the universal decoder's refusal of a document it cannot
// turn into the wanted core v1 kind.
func checkKind(tm metav1.TypeMeta, want string) error {
	switch {
	case tm.Kind == "":
		return invalid(ErrInvalidManifest, "Object 'Kind' is missing")
	case tm.APIVersion == "":
		return invalid(ErrInvalidManifest, "Object 'apiVersion' is missing")
	case tm.APIVersion != "v1":
		return invalid(ErrInvalidManifest, "no kind %q is registered for version %q", tm.Kind, tm.APIVersion)
	case tm.Kind != want:
		return invalid(ErrInvalidManifest, "invalid pod: kind %s is not %s", tm.Kind, want)
	}
	return nil
}

// finish is kubelet's tryDecodeSinglePod after the decode: name required,
// applyDefaults, validation, API references.
func finish(pod *corev1.Pod, o Origin) error {
	pod.TypeMeta = metav1.TypeMeta{}
	if pod.Name == "" {
		return invalid(ErrInvalidManifest, "invalid pod: name is needed for the pod")
	}
	apiDefaults(pod)
	// The API's defaults keep the deprecated serviceAccount in step.
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = pod.Spec.DeprecatedServiceAccount
	}
	pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	if err := applyDefaults(pod, o); err != nil {
		return err
	}
	if errs := append(validation.Pod(pod), createOnly(pod)...); len(errs) > 0 {
		return invalid(ErrInvalidManifest, "invalid pod: %v", errs)
	}
	if resource := apiReference(pod); resource != "" {
		return invalid(ErrAPIReference, "static pods may not reference %s", resource)
	}
	return nil
}

// apiDefaults is the defaulting of kubelet's decoder (legacyscheme's
// universal decoder: the v1 defaults). defaults.Pod also applies the pod
// registry's pod-level resources defaulting (PrepareForCreate, since
// v1.37's PodLevelResourcesFixDefaulting), which a static pod never goes
// through: kubelet keeps spec.resources as the manifest has it, with its
// quantities rounded up to milli-units, and hashes it so.
func apiDefaults(pod *corev1.Pod) {
	podLevel := pod.Spec.Resources.DeepCopy()
	defaults.Pod(pod)
	pod.Spec.Resources = podLevel
	if podLevel != nil {
		roundUpMilli(podLevel.Limits)
		roundUpMilli(podLevel.Requests)
	}
}

// roundUpMilli is the v1 defaults' SetDefaults_ResourceList.
func roundUpMilli(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(resource.Milli)
		list[name] = q
	}
}

// createOnly is what kubelet's ValidatePodCreate checks beyond
// validation.Pod, which validates pods the API server already admitted: no
// ephemeral containers, and no scheduling gates on a pod bound to a node
// (a static pod always is).
func createOnly(pod *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("ephemeralContainers"), "cannot be set on create"))
	}
	if pod.Spec.NodeName != "" && len(pod.Spec.SchedulingGates) != 0 {
		errs = append(errs, field.Forbidden(spec.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	return errs
}

// PodName is kubelet's generatePodName: the manifest's name, "-", the node
// name lowercased.
func PodName(name, nodeName string) string {
	return name + "-" + strings.ToLower(nodeName)
}

// applyDefaults is kubelet's applyDefaults (pkg/kubelet/config/common.go).
func applyDefaults(pod *corev1.Pod, o Origin) error {
	if pod.UID == "" {
		uid, err := Hash(pod, o)
		if err != nil {
			return err
		}
		pod.UID = uid
	}
	pod.Name = PodName(pod.Name, o.NodeName)
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = o.NodeName
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[ConfigHashAnnotation] = string(pod.UID)
	if o.isFile() {
		addToleration(pod, corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
	}
	pod.Status.Phase = corev1.PodPending
	return nil
}

// addToleration is kubelet's helper.AddOrUpdateTolerationInPod: if a
// toleration with the same key, operator, value and effect equals t in full,
// nothing changes; every other such toleration is replaced by t; with none,
// t is appended.
func addToleration(pod *corev1.Pod, t corev1.Toleration) {
	var out []corev1.Toleration
	updated := false
	for _, old := range pod.Spec.Tolerations {
		if old.Key == t.Key && old.Operator == t.Operator && old.Value == t.Value && old.Effect == t.Effect {
			if old.TolerationSeconds == nil && t.TolerationSeconds == nil {
				return
			}
			out = append(out, t)
			updated = true
			continue
		}
		out = append(out, old)
	}
	if !updated {
		out = append(out, t)
	}
	pod.Spec.Tolerations = out
}
