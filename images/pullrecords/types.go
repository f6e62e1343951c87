package pullrecords

import (
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The record types have the fields and JSON names of kubelet's own
// (k8s.io/kubelet/config/v1beta1 ImagePullIntent, ImagePulledRecord …), so
// the files written here are the files kubelet v1.37.2 reads and writes.
// They are declared here because k8s.io/kubelet/config/v1beta1 brings in
// k8s.io/component-base (logging and tracing configuration) for types a
// pull record never uses.

// Intent is kubelet's ImagePullIntent: an image (as a pod wrote it) being
// pulled.
type Intent struct {
	metav1.TypeMeta `json:",inline"`
	Image           string `json:"image"`
}

// PulledRecord is kubelet's ImagePulledRecord: an image reference the
// manager pulled and, per image name (the pod's image without tag or
// digest), the credentials it was pulled with.
type PulledRecord struct {
	metav1.TypeMeta   `json:",inline"`
	LastUpdatedTime   metav1.Time            `json:"lastUpdatedTime"`
	ImageRef          string                 `json:"imageRef"`
	CredentialMapping map[string]Credentials `json:"credentialMapping,omitempty"`
}

// Credentials is kubelet's ImagePullCredentials: pull secrets (by
// coordinates and a hash of the credential), service accounts (a credential
// provider plugin in service-account token mode), or NodePodsAccessible
// (the node's own credentials, or none: any pod may use the image).
type Credentials struct {
	KubernetesSecrets         []Secret         `json:"kubernetesSecrets,omitempty"`
	KubernetesServiceAccounts []ServiceAccount `json:"kubernetesServiceAccounts,omitempty"`
	NodePodsAccessible        bool             `json:"nodePodsAccessible,omitempty"`
}

// Secret is kubelet's ImagePullSecret: a pull secret's coordinates and the
// hex SHA-256 of the credential it gave (never the credential itself).
type Secret struct {
	UID            string `json:"uid"`
	Namespace      string `json:"namespace"`
	Name           string `json:"name"`
	CredentialHash string `json:"credentialHash"`
}

// ServiceAccount is kubelet's ImagePullServiceAccount.
type ServiceAccount struct {
	UID       string `json:"uid"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// DeepCopy copies r.
func (r *PulledRecord) DeepCopy() *PulledRecord {
	if r == nil {
		return nil
	}
	out := *r
	if r.CredentialMapping != nil {
		out.CredentialMapping = maps.Clone(r.CredentialMapping)
		for k, c := range out.CredentialMapping {
			c.KubernetesSecrets = slices.Clone(c.KubernetesSecrets)
			c.KubernetesServiceAccounts = slices.Clone(c.KubernetesServiceAccounts)
			out.CredentialMapping[k] = c
		}
	}
	return &out
}
