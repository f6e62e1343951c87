package apiobjects

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/podsync"
)

// Env is a podsync.EnvResolver over a Source: configMapKeyRef and
// secretKeyRef values and configMapRef and secretRef envFrom sources, with
// the rules and messages of kubelet v1.36's makeEnvironmentVariables:
//
//   - an object that is missing (errors.IsNotFound) is skipped when the
//     reference is optional: a value reference answers
//     podsync.ErrSkipEnvVar, so the variable is left out; an envFrom
//     source gives nothing. Any other error, or a missing object that is
//     not optional, is returned as the Source gave it (kubelet's message
//     is the NotFound error's own, `secret "name" not found`);
//   - a missing key is skipped when optional, else a *MissingKeyError
//     ("couldn't find key K in Secret NS/NAME");
//   - envFrom takes a ConfigMap's Data (not BinaryData) and a Secret's
//     Data, every key as it is: kubelet v1.36 neither skips nor reports
//     keys that are not C identifiers (RelaxedEnvironmentVariableValidation
//     is GA, and its InvalidEnvironmentVariableNames event is gone).
//     podsync adds the source's prefix;
//   - within one container each object is fetched once (ForContainer,
//     which podsync calls), as kubelet caches them for one call; a fetch
//     that failed is tried again by the next reference, as in kubelet.
//
// A nil Source answers kubelet's "no kubeClient defined" error, matching
// ErrNoSource. Errors name objects and keys, never a value.
//
// With Services set, Env is also a podsync.ServiceEnvResolver: the
// variables of kubelet's getServiceEnvVarMap (criconfig.ServiceEnv), from
// the "kubernetes" Service of the "default" namespace always, and from
// the Services of the pod's namespace when its enableServiceLinks is true
// or unset (the API server's default; kubelet, which only sees defaulted
// pods, refuses an unset one). A pod using client-go's in-cluster config
// needs KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT from them.
// Without Services no service variable is added, as kubelet without an
// API client adds none.
type Env struct {
	Source Source
	// Services lists Services for service variables; nil adds none.
	Services ServiceLister
	// ServicesSynced, when set, says whether Services has read the
	// Services at least once (an informer's HasSynced). Until it has, a
	// pod that did not come from a file or URL (its
	// kubernetes.io/config.source annotation missing or "api") gets
	// kubelet's error (ErrServicesNotSynced) rather than an environment
	// without KUBERNETES_SERVICE_HOST; a static pod goes ahead.
	ServicesSynced func() bool
}

// ServiceLister lists a namespace's Services (an informer's lister, an
// API client). Env asks for "default" and, with service links, for the
// pod's namespace.
type ServiceLister interface {
	ListServices(ctx context.Context, namespace string) ([]*corev1.Service, error)
}

// ErrServicesNotSynced is kubelet's refusal to build the environment of an
// API pod before the Services were read once (Env.ServicesSynced).
var ErrServicesNotSynced = errors.New("services have not yet been read at least once, cannot construct envvars")

// ErrListServices matches a failure of Env.Services. The message is
// kubelet's, which leaves out the lister's error; errors.Unwrap and
// errors.As reach it.
var ErrListServices = errors.New("failed to list services when setting up env vars")

type listServicesError struct{ err error }

func (e *listServicesError) Error() string   { return ErrListServices.Error() }
func (e *listServicesError) Unwrap() []error { return []error{ErrListServices, e.err} }

// ServiceEnv answers the pod's service variables
// (podsync.ServiceEnvResolver); nil without Services.
func (e Env) ServiceEnv(ctx context.Context, pod *corev1.Pod) (map[string]string, error) {
	if e.Services == nil {
		return nil, nil
	}
	if e.ServicesSynced != nil && !isStaticPod(pod) && !e.ServicesSynced() {
		return nil, ErrServicesNotSynced
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	services, err := e.Services.ListServices(ctx, criconfig.MasterServiceNamespace)
	if err != nil {
		return nil, &listServicesError{err}
	}
	if links && pod.Namespace != criconfig.MasterServiceNamespace {
		more, err := e.Services.ListServices(ctx, pod.Namespace)
		if err != nil {
			return nil, &listServicesError{err}
		}
		services = append(services, more...)
	}
	return criconfig.ServiceEnv(pod.Namespace, links, services), nil
}

// isStaticPod is kubelet's kubetypes.IsStaticPod: a config source
// annotation other than "api".
func isStaticPod(pod *corev1.Pod) bool {
	src, ok := pod.Annotations["kubernetes.io/config.source"]
	return ok && src != "api"
}

// ErrNoSource: an Env without a Source met a reference to an object.
var ErrNoSource = errors.New("no Source of API objects")

// MissingKeyError is a reference to a key that its object lacks. Its
// message is kubelet's.
type MissingKeyError struct {
	Kind      string // "ConfigMap" or "Secret"
	Namespace string
	Name      string
	Key       string
}

func (e *MissingKeyError) Error() string {
	return fmt.Sprintf("couldn't find key %v in %s %v/%v", e.Key, e.Kind, e.Namespace, e.Name)
}

// noSourceError is kubelet's message when it has no API client.
type noSourceError struct{ kind, namespace, name string }

func (e *noSourceError) Error() string {
	return fmt.Sprintf("couldn't get %s %v/%v, no kubeClient defined", e.kind, e.namespace, e.name)
}

func (e *noSourceError) Unwrap() error { return ErrNoSource }

// ValueFrom resolves one configMapKeyRef or secretKeyRef, fetching its
// object.
func (e Env) ValueFrom(ctx context.Context, pod *corev1.Pod, c *corev1.Container, env corev1.EnvVar) (string, error) {
	return e.scope().ValueFrom(ctx, pod, c, env)
}

// EnvFrom resolves one envFrom source, fetching its object.
func (e Env) EnvFrom(ctx context.Context, pod *corev1.Pod, c *corev1.Container, src corev1.EnvFromSource) (map[string]string, error) {
	return e.scope().EnvFrom(ctx, pod, c, src)
}

// ForContainer returns a resolver for one container's environment that
// fetches each object once (podsync.ContainerEnvResolver).
func (e Env) ForContainer(*corev1.Pod, *corev1.Container) podsync.EnvResolver {
	return e.scope()
}

func (e Env) scope() *envScope {
	return &envScope{src: e.Source, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
}

// envScope is one container's resolver: the objects it fetched, by name
// (all in the pod's namespace). Used by one goroutine at a time.
type envScope struct {
	src        Source
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

func (s *envScope) configMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	if cm, ok := s.configMaps[name]; ok {
		return cm, nil
	}
	if s.src == nil {
		return nil, &noSourceError{"configMap", ns, name}
	}
	cm, err := s.src.GetConfigMap(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	s.configMaps[name] = cm
	return cm, nil
}

func (s *envScope) secret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	if sec, ok := s.secrets[name]; ok {
		return sec, nil
	}
	if s.src == nil {
		return nil, &noSourceError{"secret", ns, name}
	}
	sec, err := s.src.GetSecret(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	s.secrets[name] = sec
	return sec, nil
}

func (s *envScope) ValueFrom(ctx context.Context, pod *corev1.Pod, c *corev1.Container, env corev1.EnvVar) (string, error) {
	vf := env.ValueFrom
	switch {
	case vf != nil && vf.ConfigMapKeyRef != nil:
		ref := vf.ConfigMapKeyRef
		optional := ref.Optional != nil && *ref.Optional
		cm, err := s.configMap(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if optional && apierrors.IsNotFound(err) {
				return "", podsync.ErrSkipEnvVar
			}
			return "", err
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			if optional {
				return "", podsync.ErrSkipEnvVar
			}
			return "", &MissingKeyError{Kind: "ConfigMap", Namespace: pod.Namespace, Name: ref.Name, Key: ref.Key}
		}
		return v, nil
	case vf != nil && vf.SecretKeyRef != nil:
		ref := vf.SecretKeyRef
		optional := ref.Optional != nil && *ref.Optional
		sec, err := s.secret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if optional && apierrors.IsNotFound(err) {
				return "", podsync.ErrSkipEnvVar
			}
			return "", err
		}
		v, ok := sec.Data[ref.Key]
		if !ok {
			if optional {
				return "", podsync.ErrSkipEnvVar
			}
			return "", &MissingKeyError{Kind: "Secret", Namespace: pod.Namespace, Name: ref.Name, Key: ref.Key}
		}
		return string(v), nil
	}
	return "", fmt.Errorf("environment variable %q of container %q: valueFrom has no configMapKeyRef or secretKeyRef, the sources apiobjects.Env resolves", env.Name, c.Name)
}

func (s *envScope) EnvFrom(ctx context.Context, pod *corev1.Pod, c *corev1.Container, src corev1.EnvFromSource) (map[string]string, error) {
	switch {
	case src.ConfigMapRef != nil:
		ref := src.ConfigMapRef
		cm, err := s.configMap(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if ref.Optional != nil && *ref.Optional && apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
		out := make(map[string]string, len(cm.Data))
		for k, v := range cm.Data {
			out[k] = v
		}
		return out, nil
	case src.SecretRef != nil:
		ref := src.SecretRef
		sec, err := s.secret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if ref.Optional != nil && *ref.Optional && apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
		out := make(map[string]string, len(sec.Data))
		for k, v := range sec.Data {
			out[k] = string(v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("container %q has an envFrom source with neither configMapRef nor secretRef", c.Name)
}

var (
	_ podsync.EnvResolver          = Env{}
	_ podsync.ContainerEnvResolver = Env{}
	_ podsync.ServiceEnvResolver   = Env{}
)
