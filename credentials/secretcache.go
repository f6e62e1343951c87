package credentials

import (
	"crypto/sha256"
	"encoding/binary"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// DefaultSecretsCacheSize is how many distinct pull-secret sets a
// SecretsCache keeps.
const DefaultSecretsCacheSize = 256

// SecretsCache keeps the keyrings SecretsKeyring builds, by the secrets'
// content: the same pull secrets (same type, coordinates and docker
// config bytes) give the same keyring without parsing again, so a pod's
// tenth container, or its next sync, pays a hash instead of a parse.
// Kubelet rebuilds the keyring on every pull. A changed secret has other
// bytes and so another entry; the oldest entries go beyond the size. It
// is safe for concurrent use.
type SecretsCache struct {
	opts []Option
	max  int

	mu      sync.Mutex
	entries map[[32]byte]secretsEntry
	order   [][32]byte // insertion order, for eviction
}

type secretsEntry struct {
	ring *BasicKeyring
	err  error
}

// NewSecretsCache returns a cache of at most size keyrings (size <= 0:
// DefaultSecretsCacheSize) built with opts.
func NewSecretsCache(size int, opts ...Option) *SecretsCache {
	if size <= 0 {
		size = DefaultSecretsCacheSize
	}
	return &SecretsCache{opts: opts, max: size, entries: map[[32]byte]secretsEntry{}}
}

// Keyring is SecretsKeyring(secrets, opts...), from the cache when these
// secrets were seen before. Errors (a malformed secret) are kept too.
func (c *SecretsCache) Keyring(secrets []corev1.Secret) (*BasicKeyring, error) {
	key := secretsKey(secrets)
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.mu.Unlock()
		return e.ring, e.err
	}
	c.mu.Unlock()
	ring, err := SecretsKeyring(secrets, c.opts...)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok {
		if len(c.order) >= c.max {
			delete(c.entries, c.order[0])
			c.order = c.order[1:]
		}
		c.entries[key] = secretsEntry{ring: ring, err: err}
		c.order = append(c.order, key)
	}
	return ring, err
}

// MakeKeyring is MakeKeyring with the secrets' keyring from the cache.
func (c *SecretsCache) MakeKeyring(secrets []corev1.Secret, node Keyring) (Keyring, error) {
	ring, err := c.Keyring(secrets)
	return withNode(ring, node, err)
}

// secretsKey hashes what SecretsKeyring reads of each secret, in order,
// with lengths so no two different inputs run together.
func secretsKey(secrets []corev1.Secret) [32]byte {
	h := sha256.New()
	var n [8]byte
	field := func(b []byte) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for i := range secrets {
		s := &secrets[i]
		field([]byte(s.Type))
		field([]byte(s.Namespace))
		field([]byte(s.Name))
		field([]byte(s.UID))
		field(secretData(s, corev1.DockerConfigJsonKey))
		field(secretData(s, corev1.DockerConfigKey))
	}
	var key [32]byte
	h.Sum(key[:0])
	return key
}
