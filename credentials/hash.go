package credentials

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// authConfigJSON has the fields of kubelet's credentialprovider.AuthConfig,
// with its JSON names, in its order: the order is part of the hash.
type authConfigJSON struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	Email         string `json:"email,omitempty"`
	ServerAddress string `json:"serveraddress,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// Hash is kubelet v1.37.2's AuthConfigHash (credentialprovider's
// hashAuthConfig, set by NewTrackedAuthConfig with
// KubeletEnsureSecretPulledImages on): the lower-case hex SHA-256 of the
// credential's JSON (encoding/json, empty fields left out; Source is not
// part of it). It is the credentialHash of a secret in kubelet's image pull
// records (pullrecords.Secret.CredentialHash), so records written with it
// are the records kubelet writes. It is a digest of the secret, not the
// secret, but a weak password can be guessed from it: keep it where
// kubelet keeps it, out of events.
func (a AuthConfig) Hash() string {
	b, err := json.Marshal(authConfigJSON{Username: a.Username, Password: a.Password, Auth: a.Auth, Email: a.Email,
		ServerAddress: a.ServerAddress, IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken})
	if err != nil { // strings always marshal; kubelet returns "" too
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// PluginConfigHash is the hash kubelet v1.37.2 computes over the raw
// bytes of a credential provider configuration and exports as the hash
// label of its kubelet_credential_provider_config_info metric:
// "sha256:<hex>" of, for each file in the order LoadPluginConfig reads
// them (the file itself, or the directory's .json, .yaml and .yml files in
// lexical order), the file's length as a big-endian uint64 followed by its
// bytes. files holds those contents in that order; LoadPluginConfigWithHash
// computes it over the files it decodes.
func PluginConfigHash(files ...[]byte) string {
	h := sha256.New()
	var n [8]byte
	for _, data := range files {
		binary.BigEndian.PutUint64(n[:], uint64(len(data)))
		h.Write(n[:])
		h.Write(data)
	}
	return fmt.Sprintf("sha256:%x", h.Sum(nil))
}
