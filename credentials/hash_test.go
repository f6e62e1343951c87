package credentials_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podstart/podstart/credentials"
)

// TestPluginConfigHash ports the hashes of kubelet v1.37.2's
// TestReadCredentialProviderConfig (pkg/credentialprovider/plugin): the
// same files give the same "sha256:..." label, a file or a directory's
// files in lexical order; an error gives no hash.
func TestPluginConfigHash(t *testing.T) {
	const one = `---
kind: CredentialProviderConfig
apiVersion: kubelet.config.k8s.io/v1alpha1
providers:
  - name: test
    matchImages:
    - "registry.io/foobar"
    defaultCacheDuration: 10m
    apiVersion: credentialprovider.kubelet.k8s.io/v1alpha1
    args:
    - --v=5
    env:
    - name: FOO
      value: BAR`
	const dir1 = `---
kind: CredentialProviderConfig
apiVersion: kubelet.config.k8s.io/v1
providers:
  - name: test1
    matchImages:
    - "registry.io/one"
    defaultCacheDuration: 10m
    apiVersion: credentialprovider.kubelet.k8s.io/v1`
	const dir2 = `---
kind: CredentialProviderConfig
apiVersion: kubelet.config.k8s.io/v1
providers:
  - name: test2
    matchImages:
    - "registry.io/two"
    defaultCacheDuration: 5m
    apiVersion: credentialprovider.kubelet.k8s.io/v1`
	tests := []struct {
		name    string
		files   map[string]string // name → content; one entry named "" is a single file
		want    string
		wantErr bool
	}{
		{name: "one file", files: map[string]string{"": one},
			want: "sha256:8a62755289ba50c4ca9495baab69eb861068503f8bd49b853e8ba6cf95c72bb8"},
		{name: "a directory's files in lexical order", files: map[string]string{"config-001.yaml": dir2, "config-000.yaml": dir1},
			want: "sha256:efef09979a19eee4802fe4b7aa46d5122f16687a8419443647182c1920f76ac9"},
		{name: "other extensions not read", files: map[string]string{"config-001.yaml": dir2, "config-000.yaml": dir1, "notes.txt": "x", "z.md": "y"},
			want: "sha256:efef09979a19eee4802fe4b7aa46d5122f16687a8419443647182c1920f76ac9"},
		{name: "a directory of nothing to read", files: map[string]string{"notes.txt": "x"}, wantErr: true},
		{name: "a file that does not decode", files: map[string]string{"": "kind: Nope"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := dir
			for name, content := range tt.files {
				if name == "" {
					path = filepath.Join(dir, "config.yaml")
					name = "config.yaml"
				}
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfg, hash, err := credentials.LoadPluginConfigWithHash(path)
			if tt.wantErr {
				if err == nil || hash != "" || cfg != nil || !errors.Is(err, credentials.ErrPluginConfig) {
					t.Fatalf("got %v, %q, %v; want an ErrPluginConfig and no hash", cfg, hash, err)
				}
				return
			}
			if err != nil || hash != tt.want {
				t.Fatalf("hash %q, %v; want %q", hash, err, tt.want)
			}
		})
	}
	// PluginConfigHash is the same function over the bytes.
	if got := credentials.PluginConfigHash([]byte(dir1), []byte(dir2)); got != "sha256:efef09979a19eee4802fe4b7aa46d5122f16687a8419443647182c1920f76ac9" {
		t.Errorf("PluginConfigHash = %s", got)
	}
	// The length prefix keeps file boundaries apart.
	if credentials.PluginConfigHash([]byte("ab"), []byte("c")) == credentials.PluginConfigHash([]byte("a"), []byte("bc")) {
		t.Error("file boundaries do not count")
	}
}

// TestAuthConfigHash: kubelet's hashAuthConfig, the hex SHA-256 of the
// JSON of credentialprovider.AuthConfig (its field names and order, empty
// fields left out, encoding/json's escaping); Source is not hashed.
func TestAuthConfigHash(t *testing.T) {
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	tests := []struct {
		name string
		a    credentials.AuthConfig
		json string
	}{
		{name: "empty", a: credentials.AuthConfig{}, json: `{}`},
		{name: "a pull secret's", a: credentials.AuthConfig{Username: "user", Password: "pass", Email: "a@b",
			Source: credentials.Source{Kind: credentials.SourceSecret, Namespace: "ns", Name: "s", UID: "u"}},
			json: `{"username":"user","password":"pass","email":"a@b"}`},
		{name: "every field, in kubelet's order (auth before email)", a: credentials.AuthConfig{Username: "u", Password: "p", Auth: "YTpi",
			Email: "e", ServerAddress: "r.io", IdentityToken: "i", RegistryToken: "t"},
			json: `{"username":"u","password":"p","auth":"YTpi","email":"e","serveraddress":"r.io","identitytoken":"i","registrytoken":"t"}`},
		{name: "HTML escaped as encoding/json does", a: credentials.AuthConfig{Password: "<&>"},
			json: `{"password":"\u003c\u0026\u003e"}`},
		{name: "invalid UTF-8 becomes U+FFFD", a: credentials.AuthConfig{Password: "\xff"},
			json: `{"password":"\ufffd"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := tt.a.Hash(), sum(tt.json); got != want {
				t.Errorf("Hash() = %s, want %s (of %s)", got, want, tt.json)
			}
		})
	}
	// The hash never shows in what the type prints.
	a := credentials.AuthConfig{Username: "u", Password: "hunter2"}
	if s := fmt.Sprintf("%v %+v %#v", a, a, a); strings.Contains(s, a.Hash()) || strings.Contains(s, "hunter2") {
		t.Errorf("printed %q", s)
	}
}
