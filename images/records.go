package images

import (
	"github.com/podstart/podstart/credentials"
	"github.com/podstart/podstart/images/pullrecords"
)

// WithPullRecords turns on kubelet's "ensure secret-pulled images"
// (KEP-2535, KubeletEnsureSecretPulledImages): every pull is recorded in r
// with the credentials that made it, and a pod asking for an image that is
// already present may use it only when r's policy says so or the records
// show the image pulled with one of the pod's credentials; otherwise the
// image is pulled again with the pod's credentials (IfNotPresent), which
// fails without them, or the pod gets ErrImageNeverPull (Never). Without
// this option a present image is used by any pod, as kubelet with the
// feature off. See pullrecords.New.
func WithPullRecords(r *pullrecords.Manager) Option { return func(o *options) { o.records = r } }

// podCredentials is what the pod brings for MustAttemptImagePull: its pull
// secrets' coordinates with a hash of each credential, and the service
// account a plugin was given for it (kubelet: the first one). The node's
// own credentials are not the pod's and do not count.
func podCredentials(creds []credentials.AuthConfig) ([]pullrecords.Secret, *pullrecords.ServiceAccount) {
	var secrets []pullrecords.Secret
	var sa *pullrecords.ServiceAccount
	for _, c := range creds {
		switch {
		case c.Source.Kind == credentials.SourceSecret:
			secrets = append(secrets, pullrecords.Secret{UID: c.Source.UID, Namespace: c.Source.Namespace,
				Name: c.Source.Name, CredentialHash: credentialHash(c)})
		case c.Source.Kind == credentials.SourcePlugin && c.Source.ServiceAccount.Name != "" && sa == nil:
			r := c.Source.ServiceAccount
			sa = &pullrecords.ServiceAccount{UID: r.UID, Namespace: r.Namespace, Name: r.Name}
		}
	}
	return secrets, sa
}

// pullCredentials is what a successful pull is recorded with (kubelet's
// trackedToImagePullCreds): the secret or service account of the
// credential that worked, or, for an anonymous pull or the node's own
// credentials, access for every pod on the node.
func pullCredentials(creds []credentials.AuthConfig, i int) *pullrecords.Credentials {
	if i < 0 || i >= len(creds) {
		return &pullrecords.Credentials{NodePodsAccessible: true}
	}
	c := creds[i]
	switch {
	case c.Source.Kind == credentials.SourceSecret:
		return &pullrecords.Credentials{KubernetesSecrets: []pullrecords.Secret{{UID: c.Source.UID,
			Namespace: c.Source.Namespace, Name: c.Source.Name, CredentialHash: credentialHash(c)}}}
	case c.Source.Kind == credentials.SourcePlugin && c.Source.ServiceAccount.Name != "":
		r := c.Source.ServiceAccount
		return &pullrecords.Credentials{KubernetesServiceAccounts: []pullrecords.ServiceAccount{{UID: r.UID, Namespace: r.Namespace, Name: r.Name}}}
	}
	return &pullrecords.Credentials{NodePodsAccessible: true}
}

// credentialHash is kubelet's AuthConfigHash (credentials.AuthConfig.Hash),
// so a record written here matches kubelet's hash of the same pull
// secret. Only the hash is ever stored.
func credentialHash(c credentials.AuthConfig) string { return c.Hash() }
