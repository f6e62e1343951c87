package credentials

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfig "k8s.io/kubelet/config/v1"
)

// FuzzParseConfig: any input parses or fails with ErrMalformedConfig,
// never panics, and a failure never quotes the input's strings.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"auths":{"reg.io":{"username":"u","password":"p"}}}`))
	f.Add([]byte(`{"reg.io":{"auth":"Zm9vOmJhcg=="}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cf, err := ParseConfigJSON(data)
		if err == nil && cf == nil {
			t.Fatal("nil config without error")
		}
		_, err2 := ParseDockercfg(data)
		for _, e := range []error{err, err2} {
			if e == nil {
				continue
			}
			// The message may name fields, never input values: check
			// that no quoted string from the input longer than 8 bytes
			// appears in it.
			for _, part := range strings.Split(string(data), `"`) {
				if len(part) > 8 && strings.Contains(e.Error(), part) && !strings.Contains(part, "auth") {
					t.Fatalf("error %q quotes input %q", e, part)
				}
			}
		}
	})
}

// FuzzLookup: for any key and image, the index agrees with kubelet's
// linear matcher.
func FuzzLookup(f *testing.F) {
	f.Add("registry.example.com", "registry.example.com/app")
	f.Add("*.example.com:5000/team", "a.example.com:5000/team/x")
	f.Add("https://index.docker.io/v1/", "nginx")
	f.Add("[::1]:5000", "[::1]:5000/x")
	f.Fuzz(func(t *testing.T, key, image string) {
		cfg := DockerConfig{key: {Username: "k"}, "other.io": {Username: "o"}}
		var k BasicKeyring
		k.Add(cfg)
		var o oracleKeyring
		o.add(cfg)
		got, gf := k.Lookup(image)
		want, wf := o.lookup(image)
		if gf != wf || !reflect.DeepEqual(users(got), users(want)) {
			t.Fatalf("key %q image %q: index %v, oracle %v", key, image, users(got), users(want))
		}
	})
}

// FuzzPluginConfig: any document either fails ParsePluginConfig or passes
// NewPluginKeyring's validation; a config built field by field never makes
// NewPluginKeyring panic, and one it accepts has every field a lookup
// needs (no later panic) and no binary outside binDir.
func FuzzPluginConfig(f *testing.F) {
	f.Add([]byte("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n  - {name: p, matchImages: [\"*.io\"], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}\n"),
		"p", "credentialprovider.kubelet.k8s.io/v1", "*.io", true)
	f.Add([]byte("{}"), "../p", "", "[", false)
	f.Add([]byte("providers: [{name: ..}]"), "..", "credentialprovider.kubelet.k8s.io/v1beta1", "reg.io:5000/x", true)
	f.Add([]byte("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n  - {name: p, matchImages: [\"*.io\"], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1, tokenAttributes: {serviceAccountTokenAudience: a, cacheType: Token, requireServiceAccount: false, optionalServiceAccountAnnotationKeys: [a/b]}}\n"),
		"p", "credentialprovider.kubelet.k8s.io/v1", "*.io", true)
	f.Fuzz(func(t *testing.T, doc []byte, name, apiVersion, match string, withDuration bool) {
		bin := t.TempDir()
		if err := os.WriteFile(filepath.Join(bin, "p"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		check := func(cfg *kubeletconfig.CredentialProviderConfig) {
			k, err := NewPluginKeyring(cfg, bin, WithServiceAccounts(
				func(context.Context, string, string) (*corev1.ServiceAccount, error) {
					return &corev1.ServiceAccount{}, nil
				},
				func(context.Context, ServiceAccountTokenRequest) (string, error) { return "", nil }))
			if err != nil {
				if !errors.Is(err, ErrPluginConfig) {
					t.Fatalf("error %v is not ErrPluginConfig", err)
				}
				return
			}
			for _, p := range k.providers {
				if p.cfg.DefaultCacheDuration == nil || filepath.Dir(p.path) != filepath.Clean(bin) || (p.cfg.TokenAttributes != nil) != (p.token != nil) {
					t.Fatalf("accepted provider %+v at %s", p.cfg, p.path)
				}
			}
			_ = fmt.Sprintf("%v %+v %#v", k, k, k)
		}
		if cfg, err := ParsePluginConfig(doc); err == nil {
			check(cfg)
		}
		p := kubeletconfig.CredentialProvider{Name: name, APIVersion: apiVersion, MatchImages: []string{match}}
		if withDuration {
			p.DefaultCacheDuration = &metav1.Duration{Duration: time.Minute}
		}
		check(&kubeletconfig.CredentialProviderConfig{Providers: []kubeletconfig.CredentialProvider{p}})
	})
}
