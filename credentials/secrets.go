package credentials

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// ErrMalformedSecret: a pull secret of a docker type does not parse. The
// error names the secret, never its contents.
var ErrMalformedSecret = errors.New("malformed image pull secret")

// SecretsKeyring builds one keyring from the docker-config pull secrets, in
// order. As in kubelet, a secret is used when its type is
// kubernetes.io/dockerconfigjson with a non-empty ".dockerconfigjson" key,
// or kubernetes.io/dockercfg with a non-empty ".dockercfg" key; any other
// secret is skipped. It returns nil when no secret was used, and an error
// naming the first secret that does not parse.
//
// A secret's stringData (as written in a YAML file that never went through
// an API server) is merged over its data as the API server does on write:
// a key in stringData wins over the same key in data. Kubelet only ever
// sees stored secrets, so it reads data alone; without the merge such a
// secret would be skipped and the pull would go out anonymously.
func SecretsKeyring(secrets []corev1.Secret, opts ...Option) (*BasicKeyring, error) {
	o := newOptions(opts)
	var ring *BasicKeyring
	for i := range secrets {
		s := &secrets[i]
		var cfg DockerConfig
		if data := secretData(s, corev1.DockerConfigJsonKey); s.Type == corev1.SecretTypeDockerConfigJson && len(data) > 0 {
			cf, err := ParseConfigJSON(data)
			if err != nil {
				return nil, secretError(s, err)
			}
			cfg = cf.Auths
		} else if data := secretData(s, corev1.DockerConfigKey); s.Type == corev1.SecretTypeDockercfg && len(data) > 0 {
			c, err := ParseDockercfg(data)
			if err != nil {
				return nil, secretError(s, err)
			}
			cfg = c
		} else {
			continue
		}
		cfg.setSource(Source{Kind: SourceSecret, Namespace: s.Namespace, Name: s.Name, UID: string(s.UID)})
		if ring == nil {
			ring = &BasicKeyring{tokens: o.tokens}
		}
		ring.Add(cfg)
	}
	return ring, nil
}

// secretData is s's value under key as the API server stores it:
// stringData merged over data, stringData winning.
func secretData(s *corev1.Secret, key string) []byte {
	if v, ok := s.StringData[key]; ok {
		return []byte(v)
	}
	return s.Data[key]
}

func secretError(s *corev1.Secret, err error) error {
	return fmt.Errorf("%w %s/%s: %w", ErrMalformedSecret, s.Namespace, s.Name, err)
}

// MakeKeyring is kubelet's MakeDockerKeyring: the pull secrets' keyring
// first, then node (which may be nil). With no usable secret it returns
// node itself.
func MakeKeyring(secrets []corev1.Secret, node Keyring, opts ...Option) (Keyring, error) {
	ring, err := SecretsKeyring(secrets, opts...)
	return withNode(ring, node, err)
}

// withNode puts the secrets' keyring before node's, as MakeKeyring does.
func withNode(ring *BasicKeyring, node Keyring, err error) (Keyring, error) {
	if err != nil {
		return nil, err
	}
	if ring == nil {
		if node == nil {
			return Union(nil), nil
		}
		return node, nil
	}
	return Union{ring, node}, nil
}

// KeyringFromConfigJSON builds a keyring from the content of a
// config.json (a kubernetes.io/dockerconfigjson secret's
// ".dockerconfigjson" data, or a node's config.json), its entries
// labelled with source, so that an operator holding a secret's bytes gets
// the same matching kubelet applies to that secret. Look it up with the
// image's Repository. A config without "auths" gives an empty keyring. An
// error matches ErrMalformedConfig or ErrConfigTooLarge, names source,
// and never quotes the content. WithTokens is the only option it reads.
func KeyringFromConfigJSON(data []byte, source Source, opts ...Option) (*BasicKeyring, error) {
	cf, err := ParseConfigJSON(data)
	if err != nil {
		return nil, sourceError(source, err)
	}
	return keyringFrom(cf.Auths, source, opts), nil
}

// KeyringFromDockercfg is KeyringFromConfigJSON for the legacy .dockercfg
// content (a kubernetes.io/dockercfg secret's ".dockercfg" data): a map of
// registry key to entry, with no "auths" object around it.
func KeyringFromDockercfg(data []byte, source Source, opts ...Option) (*BasicKeyring, error) {
	cfg, err := ParseDockercfg(data)
	if err != nil {
		return nil, sourceError(source, err)
	}
	return keyringFrom(cfg, source, opts), nil
}

func keyringFrom(cfg DockerConfig, source Source, opts []Option) *BasicKeyring {
	cfg.setSource(source)
	ring := &BasicKeyring{tokens: newOptions(opts).tokens}
	ring.Add(cfg)
	return ring
}

// sourceError names the source (never its content) before err.
func sourceError(source Source, err error) error {
	if source == (Source{}) {
		return err
	}
	return fmt.Errorf("%s: %w", source, err)
}
