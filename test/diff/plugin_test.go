package diff

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/kubernetes/pkg/credentialprovider"
	"k8s.io/kubernetes/pkg/credentialprovider/plugin"

	"github.com/podstart/podstart/credentials"
)

// Three plugins with overlapping matchImages, so that an image is answered
// by none, one or several of them.
const pluginDiffConfig = `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: p0
    matchImages: ["*.example.com", "example.com", "r.io", "*.r.io", "r.io:5000"]
    defaultCacheDuration: 10m
    apiVersion: credentialprovider.kubelet.k8s.io/v1
  - name: p1
    matchImages: ["docker.io", "index.docker.io", "*.docker.io", "localhost:5000", "127.0.0.1:5000", "gcr.io", "*.gcr.io"]
    defaultCacheDuration: 10m
    apiVersion: credentialprovider.kubelet.k8s.io/v1
  - name: p2
    matchImages: ["*", "*.*", "*.*.*", "*.*.*.*", "*:5000", "*.*:5000"]
    defaultCacheDuration: 10m
    apiVersion: credentialprovider.kubelet.k8s.io/v1
`

// TestPluginKeyring compares credentials.PluginKeyring with kubelet's
// externalCredentialProviderKeyring (RegisterCredentialProviderPlugins,
// NewExternalCredentialProviderDockerKeyring): the same exec plugins, each
// answering with random registry keys (no caching, so every lookup runs
// them), looked up with random images. Both run each plugin, so this tier
// is smaller than the in-process ones; the merging itself is BasicKeyring's,
// compared on 100,000 lookups by TestPullSecretKeyring.
func TestPluginKeyring(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	names := []string{"p0", "p1", "p2"}
	for _, n := range names {
		script := fmt.Sprintf("#!/bin/sh\ncat >/dev/null\ncat %q\n", filepath.Join(dir, n+".json"))
		if err := os.WriteFile(filepath.Join(bin, n), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(pluginDiffConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := plugin.RegisterCredentialProviderPlugins(cfgPath, bin, nil, nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := credentials.LoadPluginConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := credentials.NewPluginKeyring(cfg, bin)
	if err != nil {
		t.Fatal(err)
	}
	theirs := plugin.NewExternalCredentialProviderDockerKeyring("ns", "pod", "uid", "")

	r := newRand(t)
	configs, images := cases(300), 10
	d := differences{t: t}
	found, several := 0, 0
	for range configs {
		tt := &tagTable{}
		for i, n := range names {
			if err := os.WriteFile(filepath.Join(dir, n+".json"), []byte(randomPluginResponse(r, tt, i)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for range images {
			image := randomImage(r, tt)
			got, gotOK := ours.Lookup(image)
			want, wantOK := theirs.Lookup(image)
			if wantOK {
				found++
			}
			if len(want) > 1 {
				several++
			}
			g := tt.canonical(pluginCreds(got, nil))
			w := tt.canonical(pluginCreds(nil, want))
			if gotOK != wantOK || !slices.Equal(g, w) {
				d.add("plugin keyring Lookup(%q) = %v %v, kubelet %v %v", image, g, gotOK, w, wantOK)
			}
		}
	}
	d.report(configs*images, "plugin keyring lookups")
	t.Logf("%d lookups through 3 exec plugins: %d found credentials, %d more than one", configs*images, found, several)
}

// randomPluginResponse answers with random registry keys, each entry's
// password its tag (plugin answers carry no email).
func randomPluginResponse(r *rand.Rand, tt *tagTable, provider int) string {
	if r.IntN(25) == 0 {
		return pick(r, []string{"", "{", "not json", `{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"Bogus"}`})
	}
	var fields []string
	seen := map[string]bool{}
	for range r.IntN(5) {
		loc := randomKey(r)
		if seen[loc] {
			continue
		}
		seen[loc] = true
		fields = append(fields, fmt.Sprintf("%s:{\"username\":%s,\"password\":%s}", jsonString(loc), jsonString(pick(r, []string{"u", "", "user"})), jsonString(tt.newTag(provider, loc))))
	}
	return `{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"` +
		pick(r, []string{"Image", "Registry", "Global"}) + `","cacheDuration":"0s","auth":{` + strings.Join(fields, ",") + `}}`
}

// pluginCreds puts the tag (the password) where canonical reads it.
func pluginCreds(ours []credentials.AuthConfig, theirs []credentialprovider.TrackedAuthConfig) []cred {
	var out []cred
	for _, c := range ours {
		out = append(out, cred{User: c.Username, Email: c.Password})
	}
	for _, c := range theirs {
		out = append(out, cred{User: c.Username, Email: c.Password})
	}
	return out
}
