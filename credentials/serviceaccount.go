package credentials

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeletconfig "k8s.io/kubelet/config/v1"
)

// ErrServiceAccount: a plugin in service-account token mode (KEP-4412)
// could not be given what it needs: the pod's service account could not be
// read, lacks an annotation the plugin requires, or no token could be
// requested for it. The caller's own error, if any, is wrapped as well.
var ErrServiceAccount = errors.New("service account for credential provider plugin")

// ErrRequiredAnnotation: the pod's service account lacks an annotation
// that the provider's requiredServiceAccountAnnotationKeys names, so the
// plugin did not run. Such an error also matches ErrServiceAccount. Kubelet
// logs it at verbosity 5 only: a required annotation is how a workload
// opts in to a plugin.
var ErrRequiredAnnotation = errors.New("required service account annotation not found")

// PodRef is the pod an image is pulled for, as kubelet hands it to its
// plugin keyring: namespace, name, UID and spec.serviceAccountName. A
// plugin in service-account token mode is given a token of that service
// account, bound to the pod.
type PodRef struct {
	Namespace          string
	Name               string
	UID                types.UID
	ServiceAccountName string
}

// ServiceAccountRef names the service account whose token a plugin was
// given (kubelet's ServiceAccountCoordinates).
type ServiceAccountRef struct {
	Namespace string
	Name      string
	UID       string
}

// ServiceAccountFunc returns a service account, as kubelet reads it from
// the API server (an informer's lister fits). Its UID goes into the cache
// key and the token request; the annotations named by the provider's
// tokenAttributes go to the plugin. It must not return a token or a secret
// in its error.
type ServiceAccountFunc func(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)

// ServiceAccountTokenRequest is what kubelet asks the API server for when
// a plugin runs in service-account token mode: a token of the service
// account Namespace/ServiceAccountName (whose UID must be
// ServiceAccountUID), for Audience, bound to the pod PodName (PodUID).
type ServiceAccountTokenRequest struct {
	Namespace          string
	ServiceAccountName string
	ServiceAccountUID  types.UID
	Audience           string
	PodName            string
	PodUID             types.UID
}

// TokenRequest is r as kubelet builds it: the service account's UID as a
// precondition, the audience, a binding to the pod and the API server's
// default expiry. Pass it to
// ServiceAccounts(r.Namespace).CreateToken(ctx, r.ServiceAccountName, ...).
func (r ServiceAccountTokenRequest) TokenRequest() *authenticationv1.TokenRequest {
	return &authenticationv1.TokenRequest{
		ObjectMeta: metav1.ObjectMeta{UID: r.ServiceAccountUID},
		Spec: authenticationv1.TokenRequestSpec{
			Audiences: []string{r.Audience},
			BoundObjectRef: &authenticationv1.BoundObjectReference{
				APIVersion: "v1",
				Kind:       "Pod",
				Name:       r.PodName,
				UID:        r.PodUID,
			},
		},
	}
}

// ServiceAccountTokenFunc returns a service account token for req (the
// TokenRequest's status.token). It is called on every lookup for a pod
// with a service account, cached credentials or not, as kubelet does, so
// it should reuse a token while it is fresh, as kubelet's token manager
// does. It must not put the token in its error.
type ServiceAccountTokenFunc func(ctx context.Context, req ServiceAccountTokenRequest) (token string, err error)

// WithServiceAccounts gives PluginKeyring what service-account token mode
// (a provider with tokenAttributes, KEP-4412) needs and kubelet reads from
// the API server: the pod's service account and a token for it. Without
// it, NewPluginKeyring refuses a config with tokenAttributes. Both are
// called from concurrent lookups.
func WithServiceAccounts(getServiceAccount ServiceAccountFunc, getToken ServiceAccountTokenFunc) Option {
	return func(o *options) { o.getServiceAccount, o.getToken = getServiceAccount, getToken }
}

// tokenMode is a provider's tokenAttributes, checked.
type tokenMode struct {
	audience  string
	requireSA bool
	required  []string
	optional  []string
	cacheType kubeletconfig.ServiceAccountTokenCacheType
	getSA     ServiceAccountFunc
	getToken  ServiceAccountTokenFunc
}

func newTokenMode(t *kubeletconfig.ServiceAccountTokenAttributes, o options) *tokenMode {
	if t == nil || t.ServiceAccountTokenAudience == "" {
		return nil
	}
	return &tokenMode{
		audience:  t.ServiceAccountTokenAudience,
		requireSA: *t.RequireServiceAccount,
		required:  slices.Clone(t.RequiredServiceAccountAnnotationKeys),
		optional:  slices.Clone(t.OptionalServiceAccountAnnotationKeys),
		cacheType: t.CacheType,
		getSA:     o.getServiceAccount,
		getToken:  o.getToken,
	}
}

// saRequest is what a lookup in token mode gives the plugin, and the keys
// it is cached and coalesced under. The token is only ever written to the
// plugin's stdin.
type saRequest struct {
	token       string
	annotations map[string]string
	ref         ServiceAccountRef
	cacheKey    string // the service account part of cache keys
	flightKey   string // the service account part of the singleflight key
}

// errSkip: the plugin is not to run and nothing is wrong (kubelet returns
// no credentials and no error).
var errSkip = errors.New("skip")

// resolve gathers the service account's UID, annotations and token for a
// lookup for pod, as kubelet's pluginProvider.provide does. It returns nil
// when the plugin is to run without a token (no service account and
// requireServiceAccount false), errSkip when it is not to run at all (no
// service account and requireServiceAccount true), and an error wrapping
// ErrServiceAccount otherwise.
func (m *tokenMode) resolve(ctx context.Context, pod PodRef) (*saRequest, error) {
	if pod.ServiceAccountName == "" {
		if m.requireSA {
			return nil, errSkip
		}
		return nil, nil
	}
	sa, err := m.getSA(ctx, pod.Namespace, pod.ServiceAccountName)
	if err == nil && sa == nil {
		err = errors.New("no service account returned")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: failed to get service account: %w", ErrServiceAccount, err)
	}
	annotations := make(map[string]string, len(m.required)+len(m.optional))
	for _, k := range m.required {
		v, ok := sa.Annotations[k]
		if !ok {
			return nil, fmt.Errorf("%w: %w", ErrServiceAccount, requiredAnnotationError(k))
		}
		annotations[k] = v
	}
	for _, k := range m.optional {
		if v, ok := sa.Annotations[k]; ok {
			annotations[k] = v
		}
	}
	token, err := m.getToken(ctx, ServiceAccountTokenRequest{
		Namespace: pod.Namespace, ServiceAccountName: pod.ServiceAccountName, ServiceAccountUID: sa.UID,
		Audience: m.audience, PodName: pod.Name, PodUID: pod.UID,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: failed to get service account token: %w", ErrServiceAccount, err)
	}
	hash := ""
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		hash = "sha256:" + hex.EncodeToString(sum[:])
	}
	// Kubelet's service account cache key: namespace, name, UID and the
	// annotations given to the plugin; with cacheType Token, the token's
	// hash as well, so every new token (each pod, each refresh) gets its
	// own entry.
	var k keyBuilder
	k.str(pod.Namespace).str(pod.ServiceAccountName).str(string(sa.UID)).annotations(annotations)
	if m.cacheType == kubeletconfig.TokenServiceAccountTokenCacheType {
		k.str("token").str(hash)
	}
	cacheKey := k.String()
	// Kubelet coalesces on image, token hash and annotations; the service
	// account's key is added so that coalesced lookups share one source.
	var f keyBuilder
	f.str(cacheKey).str(hash)
	return &saRequest{
		token:       token,
		annotations: annotations,
		ref:         ServiceAccountRef{Namespace: pod.Namespace, Name: pod.ServiceAccountName, UID: string(sa.UID)},
		cacheKey:    cacheKey,
		flightKey:   f.String(),
	}, nil
}

// requiredAnnotationError: the service account lacks an annotation that
// the provider's requiredServiceAccountAnnotationKeys names.
type requiredAnnotationError string

func (e requiredAnnotationError) Error() string {
	return fmt.Sprintf("required annotation %s not found", string(e))
}

func (e requiredAnnotationError) Is(target error) bool { return target == ErrRequiredAnnotation }

// keyBuilder joins strings unambiguously: each is length-prefixed.
type keyBuilder struct{ b []byte }

func (k *keyBuilder) str(s string) *keyBuilder {
	k.b = binary.AppendUvarint(k.b, uint64(len(s)))
	k.b = append(k.b, s...)
	return k
}

func (k *keyBuilder) annotations(m map[string]string) *keyBuilder {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	k.b = binary.AppendUvarint(k.b, uint64(len(keys)))
	for _, key := range keys {
		k.str(key).str(m[key])
	}
	return k
}

func (k *keyBuilder) String() string { return string(k.b) }

// cacheKey is kubelet's generateCacheKey: the image, registry or global
// key, then the service account's part ("" when no token was used).
func cacheKey(base, saKey string) string {
	var k keyBuilder
	return k.str(base).str(saKey).String()
}

// redactToken removes token from s; a plugin's stderr is summarised into
// errors, and a plugin might echo what it was given.
func redactToken(s []byte, token string) []byte {
	if token == "" {
		return s
	}
	return []byte(strings.ReplaceAll(string(s), token, "<redacted>"))
}
