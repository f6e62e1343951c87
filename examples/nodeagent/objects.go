package main

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/podstart/podstart/apiobjects"
)

// apiObjects is the API client as an apiobjects.Source (Secrets,
// ConfigMaps), ServiceLister, ServiceAccountGetter, TokenRequester and
// PodCertificateClient.
// Volumes and env read Secrets and ConfigMaps through objectWatches, which
// watches them as kubelet's managers do and GETs here only before a
// watch's first list. A missing object is reported as kubelet's
// secret and configmap managers report it (`secret "x" not found`, where
// client-go says "secrets"), so a pod's CreateContainerConfigError reads
// as kubelet's.
type apiObjects struct{ client kubernetes.Interface }

func (o apiObjects) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	s, err := o.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	return s, singular(err, "secret", name)
}

func (o apiObjects) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	c, err := o.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	return c, singular(err, "configmap", name)
}

func (o apiObjects) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return o.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (o apiObjects) CreateToken(ctx context.Context, namespace, serviceAccount string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	return o.client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, serviceAccount, req, metav1.CreateOptions{})
}

// CreatePodCertificateRequest and GetPodCertificateRequest serve the pod
// certificate manager (kubelet reads requests through an informer; a Get
// of the one pending request is the simple version).
func (o apiObjects) CreatePodCertificateRequest(ctx context.Context, req *certificatesv1.PodCertificateRequest) (*certificatesv1.PodCertificateRequest, error) {
	return o.client.CertificatesV1().PodCertificateRequests(req.Namespace).Create(ctx, req, metav1.CreateOptions{})
}

func (o apiObjects) GetPodCertificateRequest(ctx context.Context, namespace, name string) (*certificatesv1.PodCertificateRequest, error) {
	return o.client.CertificatesV1().PodCertificateRequests(namespace).Get(ctx, name, metav1.GetOptions{})
}

// ListServices lists from the API server. The agent reads Services from
// an informer's cache instead (serviceCache), as kubelet does.
func (o apiObjects) ListServices(ctx context.Context, namespace string) ([]*corev1.Service, error) {
	list, err := o.client.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Service, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// serviceCache is an apiobjects.ServiceLister over an informer's cache
// of every Service (kubelet's serviceLister).
type serviceCache struct{ lister corelisters.ServiceLister }

func (c serviceCache) ListServices(_ context.Context, namespace string) ([]*corev1.Service, error) {
	return c.lister.Services(namespace).List(labels.Everything())
}

func singular(err error, resource, name string) error {
	if apierrors.IsNotFound(err) {
		return apierrors.NewNotFound(corev1.Resource(resource), name)
	}
	return err
}

var (
	_ apiobjects.Source               = apiObjects{}
	_ apiobjects.ServiceAccountGetter = apiObjects{}
	_ apiobjects.TokenRequester       = apiObjects{}
	_ apiobjects.ServiceLister        = apiObjects{}
	_ apiobjects.ServiceLister        = serviceCache{}
	_ apiobjects.PodCertificateClient = apiObjects{}
)
