package credentials

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfig "k8s.io/kubelet/config/v1"
)

// TestNewPluginKeyringValidates: NewPluginKeyring refuses every config that
// ParsePluginConfig refuses, with kubelet's messages, instead of panicking
// on the first lookup or running a binary outside binDir.
func TestNewPluginKeyringValidates(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"good", "x"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A binary outside binDir that a "../x" name would reach.
	if err := os.WriteFile(filepath.Join(filepath.Dir(bin), "x"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dur := &metav1.Duration{Duration: time.Minute}
	good := func() kubeletconfig.CredentialProvider {
		return kubeletconfig.CredentialProvider{
			Name: "good", MatchImages: []string{"*.registry.io"}, DefaultCacheDuration: dur,
			APIVersion: "credentialprovider.kubelet.k8s.io/v1",
		}
	}
	tests := []struct {
		name string
		cfg  *kubeletconfig.CredentialProviderConfig
		want string
	}{
		{name: "nil config", cfg: nil, want: "config is nil"},
		{name: "no providers", cfg: &kubeletconfig.CredentialProviderConfig{}, want: "providers: Required value"},
		{name: "no defaultCacheDuration", cfg: cfgWith(func(p *kubeletconfig.CredentialProvider) { p.DefaultCacheDuration = nil }, good()),
			want: "providers.defaultCacheDuration: Required value"},
		{name: "negative defaultCacheDuration", cfg: cfgWith(func(p *kubeletconfig.CredentialProvider) {
			p.DefaultCacheDuration = &metav1.Duration{Duration: -time.Second}
		}, good()), want: "must be greater than or equal to 0"},
		{name: "dotdot slash name", cfg: cfgWith(func(p *kubeletconfig.CredentialProvider) { p.Name = "../x" }, good()),
			want: "provider name cannot contain '/'"},
		{name: "dotdot name", cfg: cfgWith(func(p *kubeletconfig.CredentialProvider) { p.Name = ".." }, good()),
			want: "provider name cannot be '..'"},
		{name: "dot name", cfg: cfgWith(func(p *kubeletconfig.CredentialProvider) { p.Name = "." }, good()),
			want: "provider name cannot be '.'"},
		{name: "duplicate", cfg: &kubeletconfig.CredentialProviderConfig{Providers: []kubeletconfig.CredentialProvider{good(), good()}},
			want: `providers.name: Duplicate value: "good"`},
		{name: "empty apiVersion", cfg: cfgWith(func(p *kubeletconfig.CredentialProvider) { p.APIVersion = "" }, good()),
			want: "providers.apiVersion: Required value"},
		{name: "bad apiVersion", cfg: cfgWith(func(p *kubeletconfig.CredentialProvider) { p.APIVersion = "v9" }, good()),
			want: "providers.apiVersion: Unsupported value"},
		{name: "no matchImages", cfg: cfgWith(func(p *kubeletconfig.CredentialProvider) { p.MatchImages = nil }, good()),
			want: "providers.matchImages: Required value"},
		{name: "incomplete tokenAttributes", cfg: cfgWith(func(p *kubeletconfig.CredentialProvider) {
			p.TokenAttributes = &kubeletconfig.ServiceAccountTokenAttributes{ServiceAccountTokenAudience: "a"}
		}, good()), want: "providers.tokenAttributes.requireServiceAccount: Required value"},
		{name: "tokenAttributes without WithServiceAccounts", cfg: cfgWith(func(p *kubeletconfig.CredentialProvider) {
			p.TokenAttributes = &kubeletconfig.ServiceAccountTokenAttributes{ServiceAccountTokenAudience: "a",
				CacheType: kubeletconfig.TokenServiceAccountTokenCacheType, RequireServiceAccount: new(bool)}
		}, good()), want: "provider good has tokenAttributes: service account token mode needs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := NewPluginKeyring(tt.cfg, bin)
			if err == nil {
				k.Lookup("a.registry.io/x")
				t.Fatalf("no error")
			}
			if !errors.Is(err, ErrPluginConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want ErrPluginConfig containing %q", err, tt.want)
			}
		})
	}
}

func cfgWith(f func(*kubeletconfig.CredentialProvider), p kubeletconfig.CredentialProvider) *kubeletconfig.CredentialProviderConfig {
	f(&p)
	return &kubeletconfig.CredentialProviderConfig{Providers: []kubeletconfig.CredentialProvider{p}}
}

// TestNilOptionsFallBack: nil options leave the defaults in place.
func TestNilOptionsFallBack(t *testing.T) {
	k, _ := newPluginKeyring(t, "fail", WithClock(nil), WithErrorHandler(nil))
	if _, ok := k.Lookup("a.registry.io/x"); ok {
		t.Fatal("credentials from a failing plugin")
	}
	n := NewNodeKeyring(t.TempDir(), WithClock(nil), WithErrorHandler(nil))
	n.Lookup("a.registry.io/x")
}
