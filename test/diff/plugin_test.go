package diff

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
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

var providerNameRE = regexp.MustCompile(`hash-[0-9]+`)

// mutateProviderConfig breaks a valid document (randomProviderConfig) in
// up to three ways at once: kind, apiVersion, unknown or duplicate fields,
// wrong types, bad YAML or JSON, and what validation refuses.
func mutateProviderConfig(r *rand.Rand, doc string) string {
	yamlDoc := !strings.HasPrefix(strings.TrimLeft(doc, " \t\r\n"), "{")
	for range r.IntN(4) {
		switch r.IntN(13) {
		case 0:
			doc = strings.Replace(doc, "CredentialProviderConfig", pick(r, []string{"Other", "ImagePullIntent", "ImagePulledRecord",
				"KubeletConfiguration", "credentialproviderconfig", ""}), 1)
		case 1:
			for _, v := range []string{"kubelet.config.k8s.io/v1alpha1", "kubelet.config.k8s.io/v1beta1", "kubelet.config.k8s.io/v1"} {
				if strings.Contains(doc, v) {
					doc = strings.Replace(doc, v, pick(r, []string{"kubelet.config.k8s.io/v2", "foobar/v1alpha1", "v1",
						"kubelet.config.k8s.io/", "a/b/c", "", "kubelet.config.k8s.io/v1alpha1", "kubelet.config.k8s.io/v1beta1"}), 1)
					break
				}
			}
		case 2: // unknown fields
			if yamlDoc {
				doc = strings.Replace(doc, "    apiVersion: credentialprovider", pick(r, []string{"    bogus: 1\n", "    zeta: x\n    alpha: y\n"})+"    apiVersion: credentialprovider", 1)
			} else {
				doc = strings.Replace(doc, `"providers"`, `"extra":1,"providers"`, 1)
			}
		case 3: // a duplicate key
			if yamlDoc {
				doc = strings.TrimRight(doc, "\r\n") + "\nkind: CredentialProviderConfig\n"
			} else {
				doc = strings.Replace(doc, "{", `{"kind":"CredentialProviderConfig",`, 1)
			}
		case 4: // wrong types
			doc = strings.Replace(doc, "10m", pick(r, []string{"5", "true", "[1]", "10x", "-1m"}), 1)
		case 5:
			doc += pick(r, []string{"providers: [\n", "\t- x", "}", ": :"})
		case 6: // token mode, in whatever config version
			if yamlDoc {
				doc = strings.Replace(doc, "    apiVersion: credentialprovider", "    tokenAttributes:\n      serviceAccountTokenAudience: x\n      cacheType: Token\n      requireServiceAccount: false\n    apiVersion: credentialprovider", 1)
			}
		case 7: // validation
			doc = strings.Replace(doc, "hash-", pick(r, []string{"a b-", "x/y-", "hash-"}), 1)
		case 8:
			doc = strings.Replace(doc, "credentialprovider.kubelet.k8s.io/v1", "credentialprovider.kubelet.k8s.io/v0", 1)
		case 9:
			for _, img := range hashTestImages {
				doc = strings.Replace(doc, `"`+img+`"`, pick(r, []string{`"%invalid%"`, `""`, `"a b"`}), 1)
			}
		case 10: // no kind
			doc = strings.Replace(doc, "kind: CredentialProviderConfig", "", 1)
			doc = strings.Replace(doc, `"kind":"CredentialProviderConfig",`, "", 1)
		case 12: // a provider's name given twice
			if names := providerNameRE.FindAllString(doc, -1); len(names) > 1 {
				doc = strings.Replace(doc, names[1], names[0], 1)
			}
		case 11:
			doc = pick(r, []string{"", "[1,2]", "null", "{}", "---\n", "kind: 3\napiVersion: kubelet.config.k8s.io/v1\n", `{"kind":`})
		}
	}
	return doc
}

// normalizePluginConfigError reduces both sides' errors to kubelet's
// decode and validation text: kubelet's without "error decoding config
// <path>: ", "failed to validate credential provider config: ", its
// scheme's name or the quoted document (podstart's deliberate
// differences, see credentials.ParsePluginConfig); podstart's without
// "<path>: invalid credential provider config: ".
func normalizePluginConfigError(err error, path string, kubelet bool) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if kubelet {
		s = strings.TrimPrefix(s, fmt.Sprintf("error decoding config %q: ", path))
		s = strings.TrimPrefix(s, "failed to validate credential provider config: ")
		if i := strings.Index(s, ` in scheme "`); i >= 0 && strings.HasPrefix(s, "no kind ") {
			s = s[:i]
		}
		for _, m := range []string{"Object 'Kind' is missing", "Object 'apiVersion' is missing"} {
			if strings.HasPrefix(s, m+" in '") {
				s = m
			}
		}
		return s
	}
	s = strings.TrimPrefix(s, path+": ")
	return strings.TrimPrefix(s, "invalid credential provider config: ")
}

// TestPluginConfigErrors compares credentials.LoadPluginConfig's errors
// with those of kubelet's config decoding and validation (what
// RegisterCredentialProviderPlugins returns) on random broken documents:
// the same documents refused, with the same text.
func TestPluginConfigErrors(t *testing.T) {
	r := newRand(t)
	n := cases(2000)
	d := differences{t: t}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	refused, loaded, otherKinds := 0, 0, 0
	texts := map[string]bool{}
	for i := range n {
		first := providerSerial + 1
		doc := mutateProviderConfig(r, string(randomProviderConfig(r)))
		for j := first; j <= providerSerial; j++ {
			for _, prefix := range []string{"hash-", "a b-", "x/y-"} {
				os.WriteFile(filepath.Join(bin, fmt.Sprintf("%s%d", prefix, j)), nil, 0o755)
			}
		}
		path := filepath.Join(dir, fmt.Sprintf("c%d.yaml", i))
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		_, ourErr := credentials.LoadPluginConfig(path)
		theirErr := plugin.RegisterCredentialProviderPlugins(path, bin, nil, nil)
		got, want := normalizePluginConfigError(ourErr, path, false), normalizePluginConfigError(theirErr, path, true)
		if theirErr != nil && (got == `failed to decode "KubeletConfiguration" (wrong Kind)` || got == `failed to decode "SerializedNodeConfigSource" (wrong Kind)`) {
			// Podstart refuses these kinds without strictly decoding them
			// first (their types would bring component-base).
			otherKinds++
			refused++
			continue
		}
		if got != want {
			d.add("document %q:\n  podstart: %s\n  kubelet:  %s", doc, got, want)
		}
		if theirErr != nil {
			refused++
			texts[want] = true
		} else {
			loaded++
		}
	}
	d.report(n, "broken credential provider configurations' errors")
	t.Logf("%d documents: %d refused by kubelet (%d distinct texts; %d of another kind, refused by podstart for its kind), %d loaded; the same from podstart",
		n, refused, len(texts), otherKinds, loaded)
}
