package apiobjects

import (
	"context"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// testSource is a Source of Secrets and ConfigMaps held in maps (keyed
// "namespace/name"), whose missing objects are NotFound errors with the
// message of kubelet's watch-based managers (secret "x" not found); err,
// when set, fails every Get.
type testSource struct {
	mu         sync.Mutex
	secrets    map[string]*corev1.Secret
	configMaps map[string]*corev1.ConfigMap
	err        error
	gets       int
}

func newTestSource(objs ...any) *testSource {
	s := &testSource{secrets: map[string]*corev1.Secret{}, configMaps: map[string]*corev1.ConfigMap{}}
	for _, o := range objs {
		s.put(o)
	}
	return s
}

func (s *testSource) put(o any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch o := o.(type) {
	case *corev1.Secret:
		s.secrets[o.Namespace+"/"+o.Name] = o
	case *corev1.ConfigMap:
		s.configMaps[o.Namespace+"/"+o.Name] = o
	}
}

func (s *testSource) GetSecret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	if s.err != nil {
		return nil, s.err
	}
	if o, ok := s.secrets[ns+"/"+name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secret"), name)
}

func (s *testSource) GetConfigMap(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	if s.err != nil {
		return nil, s.err
	}
	if o, ok := s.configMaps[ns+"/"+name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("configmap"), name)
}

// testRequester is the API server's TokenRequest as kubelet's projected
// test fakes it: the token names namespace, service account, expiration
// and audiences; the API's defaults are an hour and "https://api".
type testRequester struct {
	mu    sync.Mutex
	calls int
	err   error
	clock clock.PassiveClock
}

func (r *testRequester) CreateToken(_ context.Context, ns, sa string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.err != nil {
		return nil, r.err
	}
	out := tr.DeepCopy()
	if out.Spec.ExpirationSeconds == nil {
		out.Spec.ExpirationSeconds = ptr.To[int64](3600)
	}
	if len(out.Spec.Audiences) == 0 {
		out.Spec.Audiences = []string{"https://api"}
	}
	now := time.Now()
	if r.clock != nil {
		now = r.clock.Now()
	}
	out.Status.Token = fmt.Sprintf("%v:%v:%d:%v", ns, sa, *out.Spec.ExpirationSeconds, out.Spec.Audiences)
	out.Status.ExpirationTimestamp = metav1.NewTime(now.Add(time.Duration(*out.Spec.ExpirationSeconds) * time.Second))
	return out, nil
}

func (r *testRequester) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}
