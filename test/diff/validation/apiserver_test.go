package validationdiff

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // v1 defaulting, conversion and declarative validation in legacyscheme
	"k8s.io/kubernetes/pkg/capabilities"
	podregistry "k8s.io/kubernetes/pkg/registry/core/pod"
)

// The API server refuses privileged containers unless started with
// --allow-privileged=true, which every cluster that runs them sets
// (kubeadm, kind, the cloud providers' control planes) and kubelet sets
// for the pods it validates itself: podstart runs privileged pods, so the
// comparison is with that API server.
func init() { capabilities.Initialize(capabilities.Capabilities{AllowPrivileged: true}) }

// apiDefaults returns a copy of pod with the API server's defaulting
// applied: SetObjectDefaults_Pod of pkg/apis/core/v1, as the API server's
// decoder runs it on a v1 pod it receives.
func apiDefaults(pod *corev1.Pod) *corev1.Pod {
	out := pod.DeepCopy()
	legacyscheme.Scheme.Default(out)
	return out
}

// apiServerCreate is what the API server does with a v1 pod on
// POST /api/v1/namespaces/{namespace}/pods between decoding and storage,
// as k8s.io/apiserver's generic store (Create, then rest.BeforeCreate)
// runs it: defaulting, conversion to the internal type, the system fields
// (a UID and creation time of its own: the pod's UID is not its to keep),
// the request's namespace, the pod strategy's PrepareForCreate (which drops
// the fields of disabled feature gates), then rest.ValidateCreate: the pod
// strategy's Validate (ValidatePodCreate with the options of
// GetValidationOptionsFromPodSpecAndMeta), the generic object-meta checks,
// and the declarative validation the strategy opts into.
//
// The request's namespace is the pod's, or "default" for a pod without one
// (podstart's callers use the namespace as it is; kubectl would send the
// context's). Admission plugins are not run: none of the default ones
// refuses a pod for the fields compared here.
func apiServerCreate(pod *corev1.Pod) (errs field.ErrorList) {
	defer func() {
		if r := recover(); r != nil {
			errs = field.ErrorList{field.InternalError(nil, fmt.Errorf("panic in the API server's path: %v", r))}
		}
	}()
	versioned := apiDefaults(pod)
	internal := &api.Pod{}
	if err := legacyscheme.Scheme.Convert(versioned, internal, nil); err != nil {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("conversion to the internal pod: %w", err))}
	}
	// The store's Create, before BeforeCreate.
	internal.UID = types.UID("0d8e8c72-5d33-4a6f-9c8c-1f6f0a1e2b3c")
	internal.CreationTimestamp = metav1.Now()

	namespace := pod.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	ctx := klog.NewContext(context.Background(), logr.Discard()) // declarative validation's mismatch reports
	ctx = genericapirequest.WithNamespace(ctx, namespace)
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Path: "/api/v1/namespaces/" + namespace + "/pods", Verb: "create",
		APIPrefix: "api", APIVersion: "v1", Namespace: namespace, Resource: "pods",
	})

	// Ephemeral containers cannot be set on create; validation's package
	// doc compares them with the ephemeralcontainers subresource's rules,
	// on a pod created without them (below).
	ephemeral := internal.Spec.EphemeralContainers
	internal.Spec.EphemeralContainers = nil

	// rest.BeforeCreate, its field errors kept as they are.
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(namespace, internal); err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("metadata", "namespace"), pod.Namespace, err.Error())}
	}
	podregistry.Strategy.PrepareForCreate(ctx, internal)
	errs = rest.ValidateCreate(ctx, internal, podregistry.Strategy)
	if len(ephemeral) == 0 {
		return errs
	}

	// PUT .../pods/{name}/ephemeralcontainers with the stored pod and the
	// ephemeral containers: rest.BeforeUpdate with the strategy the
	// subresource's storage uses.
	internal.ResourceVersion = "1" // as stored
	updated := internal.DeepCopy()
	updated.Spec.EphemeralContainers = ephemeral
	uctx := genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Path: "/api/v1/namespaces/" + namespace + "/pods/" + internal.Name + "/ephemeralcontainers", Verb: "update",
		APIPrefix: "api", APIVersion: "v1", Namespace: namespace, Resource: "pods", Subresource: "ephemeralcontainers", Name: internal.Name,
	})
	podregistry.EphemeralContainersStrategy.PrepareForUpdate(uctx, updated, internal)
	uerrs := rest.ValidateUpdate(uctx, updated, internal, podregistry.EphemeralContainersStrategy)
	if len(errs) == 0 {
		return uerrs
	}
	// The pod itself is refused: its errors, and the ephemeral containers'
	// own (the update validates the rest of the pod again), with the
	// subresource's refusal of a mirror pod (on no field).
	for _, e := range uerrs {
		if strings.HasPrefix(e.Field, "spec.ephemeralContainers") || e.Field == "[]" {
			errs = append(errs, e)
		}
	}
	return errs
}
