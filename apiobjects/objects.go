package apiobjects

import (
	"context"
	"sort"
	"sync"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
)

// Objects is a Source held in memory, for tests and for operators that
// already have the objects (a static pod's Secrets, a cache of their
// own). It answers a missing object with the NotFound error kubelet's
// secret and configmap managers give (`secret "name" not found`), so
// messages built on it read as kubelet's. It also gives ServiceAccounts
// (ServiceAccountGetter), Services (ServiceLister) and ClusterTrustBundles
// (ClusterTrustBundleSource). The zero value is empty and ready; it is safe
// for concurrent use and must not be copied after first use. Objects are
// copied in and out, so neither side sees the other's changes.
type Objects struct {
	mu              sync.RWMutex
	secrets         map[objectKey]*corev1.Secret
	configMaps      map[objectKey]*corev1.ConfigMap
	serviceAccounts map[objectKey]*corev1.ServiceAccount
	services        map[objectKey]*corev1.Service
	trustBundles    map[string]*certificatesv1.ClusterTrustBundle
}

type objectKey struct{ namespace, name string }

// SetSecret adds or replaces a Secret, by its namespace and name.
func (o *Objects) SetSecret(s *corev1.Secret) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.secrets == nil {
		o.secrets = map[objectKey]*corev1.Secret{}
	}
	o.secrets[objectKey{s.Namespace, s.Name}] = s.DeepCopy()
}

// SetConfigMap adds or replaces a ConfigMap, by its namespace and name.
func (o *Objects) SetConfigMap(c *corev1.ConfigMap) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.configMaps == nil {
		o.configMaps = map[objectKey]*corev1.ConfigMap{}
	}
	o.configMaps[objectKey{c.Namespace, c.Name}] = c.DeepCopy()
}

// SetServiceAccount adds or replaces a ServiceAccount, by its namespace
// and name.
func (o *Objects) SetServiceAccount(sa *corev1.ServiceAccount) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.serviceAccounts == nil {
		o.serviceAccounts = map[objectKey]*corev1.ServiceAccount{}
	}
	o.serviceAccounts[objectKey{sa.Namespace, sa.Name}] = sa.DeepCopy()
}

// SetService adds or replaces a Service, by its namespace and name.
func (o *Objects) SetService(svc *corev1.Service) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.services == nil {
		o.services = map[objectKey]*corev1.Service{}
	}
	o.services[objectKey{svc.Namespace, svc.Name}] = svc.DeepCopy()
}

// DeleteService removes a Service; removing a missing one does nothing.
func (o *Objects) DeleteService(namespace, name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.services, objectKey{namespace, name})
}

// ListServices returns copies of the namespace's Services, by name.
func (o *Objects) ListServices(ctx context.Context, namespace string) ([]*corev1.Service, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	var out []*corev1.Service
	for k, svc := range o.services {
		if k.namespace == namespace {
			out = append(out, svc.DeepCopy())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DeleteSecret removes a Secret; removing a missing one does nothing.
func (o *Objects) DeleteSecret(namespace, name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.secrets, objectKey{namespace, name})
}

// DeleteConfigMap removes a ConfigMap; removing a missing one does nothing.
func (o *Objects) DeleteConfigMap(namespace, name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.configMaps, objectKey{namespace, name})
}

// DeleteServiceAccount removes a ServiceAccount; removing a missing one
// does nothing.
func (o *Objects) DeleteServiceAccount(namespace, name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.serviceAccounts, objectKey{namespace, name})
}

// GetSecret returns a copy of the Secret, or a NotFound error.
func (o *Objects) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	if s, ok := o.secrets[objectKey{namespace, name}]; ok {
		return s.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secret"), name)
}

// GetConfigMap returns a copy of the ConfigMap, or a NotFound error.
func (o *Objects) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	if c, ok := o.configMaps[objectKey{namespace, name}]; ok {
		return c.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("configmap"), name)
}

// GetServiceAccount returns a copy of the ServiceAccount, or a NotFound
// error.
func (o *Objects) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	if sa, ok := o.serviceAccounts[objectKey{namespace, name}]; ok {
		return sa.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccount"), name)
}

var (
	_ Source               = (*Objects)(nil)
	_ ServiceAccountGetter = (*Objects)(nil)
	_ ServiceLister        = (*Objects)(nil)
)

// SetClusterTrustBundle adds or replaces a ClusterTrustBundle, by name.
func (o *Objects) SetClusterTrustBundle(b *certificatesv1.ClusterTrustBundle) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.trustBundles == nil {
		o.trustBundles = map[string]*certificatesv1.ClusterTrustBundle{}
	}
	o.trustBundles[b.Name] = b.DeepCopy()
}

// DeleteClusterTrustBundle removes a ClusterTrustBundle; removing a
// missing one does nothing.
func (o *Objects) DeleteClusterTrustBundle(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.trustBundles, name)
}

// GetClusterTrustBundle returns a copy of the ClusterTrustBundle, or the
// NotFound error of client-go's lister
// (`clustertrustbundle.certificates.k8s.io "name" not found`).
func (o *Objects) GetClusterTrustBundle(ctx context.Context, name string) (*certificatesv1.ClusterTrustBundle, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	if b, ok := o.trustBundles[name]; ok {
		return b.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(certificatesv1.Resource("clustertrustbundle"), name)
}

// ListClusterTrustBundles returns copies of the signer's
// ClusterTrustBundles whose labels selector matches, by name.
func (o *Objects) ListClusterTrustBundles(ctx context.Context, signerName string, selector labels.Selector) ([]*certificatesv1.ClusterTrustBundle, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	var out []*certificatesv1.ClusterTrustBundle
	for _, b := range o.trustBundles {
		if b.Spec.SignerName == signerName && selector.Matches(labels.Set(b.Labels)) {
			out = append(out, b.DeepCopy())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

var _ ClusterTrustBundleSource = (*Objects)(nil)
