package apiobjects

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
)

// Source gives the Secrets and ConfigMaps a pod refers to. A missing
// object is an error for which k8s.io/apimachinery's errors.IsNotFound is
// true, as client-go's and listers' are; optional references rely on it.
type Source interface {
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
}

// TokenRequester asks the API server for a service account token: the
// TokenRequest API (POST serviceaccounts/<name>/token), as client-go's
// ServiceAccounts(ns).CreateToken.
type TokenRequester interface {
	CreateToken(ctx context.Context, namespace, serviceAccount string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}
