package credentials

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfig "k8s.io/kubelet/config/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

const pluginConfigYAML = `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: %s
    matchImages: ["*.registry.io", "reg.example.com:5000"]
    defaultCacheDuration: 10m
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args: ["--flag"]
    env:
      - name: PLUGIN_MODE
        value: %s
`

// pluginScript writes a plugin that logs each request to dir/requests and
// answers according to $PLUGIN_MODE.
func pluginScript(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	write(t, bin, "fake-plugin", `#!/bin/sh
req=$(cat)
echo "$* $req" >> "$PLUGIN_DIR/requests"
resp() { echo "{\"kind\":\"CredentialProviderResponse\",\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\",\"cacheKeyType\":\"$1\",$2\"auth\":{\"*.registry.io\":{\"username\":\"plugin-user\",\"password\":\"s3cret\"}}}"; }
case "$PLUGIN_MODE" in
  image) resp Image "" ;;
  registry) resp Registry "" ;;
  global) resp Global "" ;;
  nocache) resp Image '"cacheDuration":"0s",' ;;
  badkey) resp Bogus "" ;;
  garbage) echo 'not json s3cret' ;;
  wrongversion) echo '{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1","cacheKeyType":"Image"}' ;;
  unknownfield) echo '{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"Image","extra":"s3cret"}' ;;
  fail) echo "denied" >&2; exit 3 ;;
  hang) exec sleep 30 ;;
  wait) read x < "$PLUGIN_DIR/release"; resp Image '"cacheDuration":"0s",' ;;
esac
`)
	os.Chmod(filepath.Join(bin, "fake-plugin"), 0o755)
	t.Setenv("PLUGIN_DIR", dir)
	return bin
}

func newPluginKeyring(t *testing.T, mode string, opts ...Option) (*PluginKeyring, string) {
	t.Helper()
	dir := t.TempDir()
	bin := pluginScript(t, dir)
	cfg, err := ParsePluginConfig([]byte(fmt.Sprintf(pluginConfigYAML, "fake-plugin", mode)))
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewPluginKeyring(cfg, bin, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return k, dir
}

func requests(t *testing.T, dir string) []string {
	data, _ := os.ReadFile(filepath.Join(dir, "requests"))
	s := strings.TrimSpace(string(data))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestPluginLookupAndCacheKeys(t *testing.T) {
	tests := []struct {
		mode     string
		lookups  []string
		wantRuns int
	}{
		{"image", []string{"a.registry.io/x", "a.registry.io/x", "a.registry.io/y"}, 2},
		{"registry", []string{"a.registry.io/x", "a.registry.io/y", "b.registry.io/x"}, 2},
		{"global", []string{"a.registry.io/x", "b.registry.io/y"}, 1},
		{"nocache", []string{"a.registry.io/x", "a.registry.io/x"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			k, dir := newPluginKeyring(t, tt.mode)
			for _, img := range tt.lookups {
				got, found := k.Lookup(img)
				if !found || got[0].Username != "plugin-user" || got[0].Password != "s3cret" || got[0].Source != (Source{Kind: SourcePlugin, Name: "fake-plugin"}) {
					t.Fatalf("Lookup(%s) = %+v", img, got)
				}
			}
			reqs := requests(t, dir)
			if len(reqs) != tt.wantRuns {
				t.Fatalf("%d plugin runs, want %d: %q", len(reqs), tt.wantRuns, reqs)
			}
			want := `--flag {"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1","image":"a.registry.io/x"}`
			if reqs[0] != want {
				t.Fatalf("request %q\nwant    %q", reqs[0], want)
			}
		})
	}
}

func TestPluginMatchGateAndReturnedGlobs(t *testing.T) {
	k, dir := newPluginKeyring(t, "image")
	// Not in matchImages: the plugin does not run.
	if _, found := k.Lookup("other.io/x"); found || len(requests(t, dir)) != 0 {
		t.Fatal("plugin ran for an unmatched image")
	}
	// Matched by matchImages, but the returned auth key *.registry.io does
	// not match the image: no credentials, as in kubelet.
	if got, found := k.Lookup("reg.example.com:5000/x"); found {
		t.Fatalf("got %v", got)
	}
	if len(requests(t, dir)) != 1 {
		t.Fatal("plugin did not run for a matched image")
	}
}

func TestPluginCacheExpiry(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	k, dir := newPluginKeyring(t, "image", WithClock(clk))
	k.Lookup("a.registry.io/x")
	clk.Step(10*time.Minute - time.Nanosecond)
	k.Lookup("a.registry.io/x")
	clk.Step(time.Nanosecond)
	k.Lookup("a.registry.io/x")
	if n := len(requests(t, dir)); n != 2 {
		t.Fatalf("%d runs, want 2 (cached for defaultCacheDuration)", n)
	}
}

func TestPluginBadOutput(t *testing.T) {
	tests := []struct {
		mode    string
		wantErr error
		text    string
	}{
		{"garbage", ErrPluginResponse, "error decoding credential provider plugin response from stdout"},
		{"wrongversion", ErrPluginResponse, "did not match expected apiVersion:credentialprovider.kubelet.k8s.io/v1, actual apiVersion:credentialprovider.kubelet.k8s.io/v1beta1"},
		{"unknownfield", ErrPluginResponse, "error decoding credential provider plugin response from stdout"},
		{"badkey", ErrPluginResponse, `unknown cacheKeyType "Bogus"`},
		{"fail", ErrPluginFailed, "error execing credential provider plugin fake-plugin for image a.registry.io/x: exit status 3: denied"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			var errs []error
			k, _ := newPluginKeyring(t, tt.mode, WithErrorHandler(func(_ string, err error) { errs = append(errs, err) }))
			if got, found := k.Lookup("a.registry.io/x"); found {
				t.Fatalf("got %v", got)
			}
			if len(errs) != 1 || !errors.Is(errs[0], tt.wantErr) || !strings.Contains(errs[0].Error(), tt.text) {
				t.Fatalf("errors = %v, want %v containing %q", errs, tt.wantErr, tt.text)
			}
			if strings.Contains(errs[0].Error(), "s3cret") {
				t.Fatalf("error leaks output: %v", errs[0])
			}
		})
	}
}

func TestPluginHangTimesOut(t *testing.T) {
	var errs []error
	k, _ := newPluginKeyring(t, "hang", WithPluginTimeout(300*time.Millisecond), WithErrorHandler(func(_ string, err error) { errs = append(errs, err) }))
	if _, found := k.Lookup("a.registry.io/x"); found {
		t.Fatal("found credentials from a hung plugin")
	}
	if len(errs) != 1 || !errors.Is(errs[0], ErrPluginFailed) || !strings.Contains(errs[0].Error(), "timed out after 300ms") {
		t.Fatalf("errors = %v", errs)
	}
}

// TestPluginCoalescesConcurrentLookups: ten concurrent lookups of one image
// run the plugin once. The plugin blocks on a FIFO until every lookup has
// joined the in-flight call.
func TestPluginCoalescesConcurrentLookups(t *testing.T) {
	k, dir := newPluginKeyring(t, "wait")
	fifo := filepath.Join(dir, "release")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	p := k.providers[0]
	var wg sync.WaitGroup
	results := make(chan bool, 10)
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, found := k.Lookup("a.registry.io/x")
			results <- found
		}()
	}
	for p.inflight.Load() < 10 {
		goruntime.Gosched()
	}
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("go\n")
	f.Close()
	wg.Wait()
	close(results)
	for found := range results {
		if !found {
			t.Fatal("a coalesced lookup got no credentials")
		}
	}
	if n := len(requests(t, dir)); n != 1 {
		t.Fatalf("plugin ran %d times for 10 concurrent lookups", n)
	}
}

func TestPluginConfigValidation(t *testing.T) {
	t.Parallel()
	base := func(provider string) string {
		return "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n" + provider
	}
	ok := "  - name: p\n    matchImages: [\"*.io\"]\n    defaultCacheDuration: 1m\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n"
	tests := []struct{ name, doc, want string }{
		{"valid", base(ok), ""},
		{"no providers", "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: []\n", "at least 1 item in plugins is required"},
		{"unknown field", base(ok + "    bogus: 1\n"), `unknown field "providers[0].bogus"`},
		// kubelet v1.37.2's decode errors (TestReadCredentialProviderConfig).
		{"wrong kind", "apiVersion: kubelet.config.k8s.io/v1\nkind: Other\nproviders: []\n", `no kind "Other" is registered for version "kubelet.config.k8s.io/v1"`},
		{"wrong group", "apiVersion: foobar/v1alpha1\nkind: CredentialProviderConfig\nproviders: []\n", `no kind "CredentialProviderConfig" is registered for version "foobar/v1alpha1"`},
		{"unknown version", "apiVersion: kubelet.config.k8s.io/v2\nkind: CredentialProviderConfig\nproviders: []\n", `no kind "CredentialProviderConfig" is registered for version "kubelet.config.k8s.io/v2"`},
		{"another kind of the scheme", "apiVersion: kubelet.config.k8s.io/v1alpha1\nkind: ImagePullIntent\n", `failed to decode "ImagePullIntent" (wrong Kind)`},
		{"another kind, strict first", "apiVersion: kubelet.config.k8s.io/v1alpha1\nkind: ImagePullIntent\nproviders: []\n", `strict decoding error: unknown field "providers"`},
		{"no kind, the document not quoted", "apiVersion: kubelet.config.k8s.io/v1\nproviders: [{args: [s3cr3t]}]\n", "invalid credential provider config: Object 'Kind' is missing"},
		{"no apiVersion", "kind: CredentialProviderConfig\nproviders: []\n", "invalid credential provider config: Object 'apiVersion' is missing"},
		{"two unknown fields, joined as kubelet", base(ok + "    foo: 1\n    bar: 2\n"), `strict decoding error: unknown field "providers[0].bar", unknown field "providers[0].foo"`},
		{"duplicate YAML key", base(ok) + "kind: CredentialProviderConfig\n", "strict decoding error: yaml: unmarshal errors:\n  line 8: key \"kind\" already set in map"},
		{"duplicate JSON key", `{"kind":"CredentialProviderConfig","kind":"CredentialProviderConfig","apiVersion":"kubelet.config.k8s.io/v1","providers":[]}`, `strict decoding error: duplicate field "kind"`},
		{"not an object", "[1,2]", `couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" }`},
		{"JSON syntax", `{"kind":`, "couldn't get version/kind; json parse error: unexpected end of JSON input"},
		{"wrong type", "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: 3\n", "json: cannot unmarshal number into Go struct field CredentialProviderConfig.providers of type []v1.CredentialProvider"},
		{"slash in name", base(strings.Replace(ok, "name: p", "name: foo/../bar", 1)), `provider name cannot contain '/'`},
		{"dot name", base(strings.Replace(ok, "name: p", "name: ..", 1)), `cannot be '..'`},
		{"space in name", base(strings.Replace(ok, "name: p", `name: "a b"`, 1)), "cannot contain spaces"},
		{"duplicate", base(ok + ok), `Duplicate value: "p"`},
		{"bad apiVersion", base(strings.Replace(ok, "credentialprovider.kubelet.k8s.io/v1", "v9", 1)), `Unsupported value: "v9"`},
		{"bad matchImage", base(strings.Replace(ok, `"*.io"`, `"%invalid%"`, 1)), `match image is invalid: parse "https://%invalid%": invalid URL escape "%in"`},
		{"negative duration", base(strings.Replace(ok, "1m", "-1m", 1)), `"-1m0s": must be greater than or equal to 0`},
		{"missing duration", base(strings.Replace(ok, "    defaultCacheDuration: 1m\n", "", 1)), "providers.defaultCacheDuration: Required value"},
		{"token mode", base(ok + "    tokenAttributes:\n      serviceAccountTokenAudience: x\n      cacheType: ServiceAccount\n      requireServiceAccount: true\n"), ""},
		{"token mode incomplete", base(ok + "    tokenAttributes:\n      serviceAccountTokenAudience: x\n"),
			"providers.tokenAttributes.requireServiceAccount: Required value, providers.tokenAttributes.cacheType: Required value"},
		{"token mode, v1beta1 config", strings.Replace(base(ok+"    tokenAttributes:\n      serviceAccountTokenAudience: x\n"), "config.k8s.io/v1", "config.k8s.io/v1beta1", 1),
			`strict decoding error: unknown field "providers[0].tokenAttributes"`},
	}
	for _, tt := range tests {
		_, err := ParsePluginConfig([]byte(tt.doc))
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrPluginConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestValidateTokenAttributes: kubelet v1.36's
// TestValidateCredentialProviderConfig cases for tokenAttributes
// (pkg/credentialprovider/plugin/config_test.go), with its exact messages.
func TestValidateTokenAttributes(t *testing.T) {
	t.Parallel()
	provider := func(apiVersion string, ta kubeletconfig.ServiceAccountTokenAttributes) *kubeletconfig.CredentialProviderConfig {
		return &kubeletconfig.CredentialProviderConfig{Providers: []kubeletconfig.CredentialProvider{{
			Name: "foobar", MatchImages: []string{"foobar.registry.io"}, DefaultCacheDuration: &metav1.Duration{Duration: time.Minute},
			APIVersion: apiVersion, TokenAttributes: &ta,
		}}}
	}
	const v1 = "credentialprovider.kubelet.k8s.io/v1"
	const badKey = `Invalid value: "cantendwithadash-": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`
	tests := []struct {
		name string
		cfg  *kubeletconfig.CredentialProviderConfig
		want string
	}{
		{"empty audience", provider(v1, kubeletconfig.ServiceAccountTokenAttributes{
			CacheType: kubeletconfig.TokenServiceAccountTokenCacheType, RequireServiceAccount: ptr.To(true),
		}), `providers.tokenAttributes.serviceAccountTokenAudience: Required value`},
		{"empty cacheType", provider(v1, kubeletconfig.ServiceAccountTokenAttributes{
			ServiceAccountTokenAudience: "audience", RequireServiceAccount: ptr.To(true),
		}), `providers.tokenAttributes.cacheType: Required value: cacheType is required to be set when tokenAttributes is specified. Supported values are: ServiceAccount, Token`},
		{"invalid cacheType", provider(v1, kubeletconfig.ServiceAccountTokenAttributes{
			ServiceAccountTokenAudience: "audience", CacheType: "invalid-cache-type", RequireServiceAccount: ptr.To(true),
		}), `providers.tokenAttributes.cacheType: Unsupported value: "invalid-cache-type": supported values: "ServiceAccount", "Token"`},
		{"no requireServiceAccount", provider(v1, kubeletconfig.ServiceAccountTokenAttributes{
			ServiceAccountTokenAudience: "audience", CacheType: kubeletconfig.TokenServiceAccountTokenCacheType,
		}), `providers.tokenAttributes.requireServiceAccount: Required value`},
		{"required key not a qualified name", provider(v1, kubeletconfig.ServiceAccountTokenAttributes{
			ServiceAccountTokenAudience: "audience", CacheType: kubeletconfig.TokenServiceAccountTokenCacheType, RequireServiceAccount: ptr.To(true),
			RequiredServiceAccountAnnotationKeys: []string{"cantendwithadash-", "now-with-dashes/simple"},
		}), `providers.tokenAttributes.requiredServiceAccountAnnotationKeys: ` + badKey},
		{"optional key not a qualified name", provider(v1, kubeletconfig.ServiceAccountTokenAttributes{
			ServiceAccountTokenAudience: "audience", CacheType: kubeletconfig.ServiceAccountServiceAccountTokenCacheType, RequireServiceAccount: ptr.To(true),
			OptionalServiceAccountAnnotationKeys: []string{"cantendwithadash-", "now-with-dashes/simple"},
		}), `providers.tokenAttributes.optionalServiceAccountAnnotationKeys: ` + badKey},
		{"duplicate required keys", provider(v1, kubeletconfig.ServiceAccountTokenAttributes{
			ServiceAccountTokenAudience: "audience", CacheType: kubeletconfig.TokenServiceAccountTokenCacheType, RequireServiceAccount: ptr.To(true),
			RequiredServiceAccountAnnotationKeys: []string{"now-with-dashes/simple", "now-with-dashes/simple"},
		}), `providers.tokenAttributes.requiredServiceAccountAnnotationKeys: Duplicate value: "now-with-dashes/simple"`},
		{"duplicate optional keys", provider(v1, kubeletconfig.ServiceAccountTokenAttributes{
			ServiceAccountTokenAudience: "audience", CacheType: kubeletconfig.ServiceAccountServiceAccountTokenCacheType, RequireServiceAccount: ptr.To(true),
			OptionalServiceAccountAnnotationKeys: []string{"now-with-dashes/simple", "now-with-dashes/simple"},
		}), `providers.tokenAttributes.optionalServiceAccountAnnotationKeys: Duplicate value: "now-with-dashes/simple"`},
		{"key both required and optional", provider(v1, kubeletconfig.ServiceAccountTokenAttributes{
			ServiceAccountTokenAudience: "audience", CacheType: kubeletconfig.TokenServiceAccountTokenCacheType, RequireServiceAccount: ptr.To(true),
			RequiredServiceAccountAnnotationKeys: []string{"now-with-dashes/simple-1", "now-with-dashes/simple-2"},
			OptionalServiceAccountAnnotationKeys: []string{"now-with-dashes/simple-2", "now-with-dashes/simple-3"},
		}), `providers.tokenAttributes: Invalid value: ["now-with-dashes/simple-2"]: annotation keys cannot be both required and optional`},
		{"required keys without requireServiceAccount", provider(v1, kubeletconfig.ServiceAccountTokenAttributes{
			ServiceAccountTokenAudience: "audience", CacheType: kubeletconfig.ServiceAccountServiceAccountTokenCacheType, RequireServiceAccount: ptr.To(false),
			RequiredServiceAccountAnnotationKeys: []string{"now-with-dashes/simple-1", "now-with-dashes/simple-2"},
		}), `providers.tokenAttributes.requiredServiceAccountAnnotationKeys: Forbidden: requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set`},
		{"valid", provider(v1, kubeletconfig.ServiceAccountTokenAttributes{
			ServiceAccountTokenAudience: "audience", CacheType: kubeletconfig.TokenServiceAccountTokenCacheType, RequireServiceAccount: ptr.To(true),
			RequiredServiceAccountAnnotationKeys: []string{"now-with-dashes/simple-1", "now-with-dashes/simple-2"},
			OptionalServiceAccountAnnotationKeys: []string{"now-with-dashes/simple-3"},
		}), ""},
		{"v1alpha1 plugin API", provider("credentialprovider.kubelet.k8s.io/v1alpha1", kubeletconfig.ServiceAccountTokenAttributes{
			ServiceAccountTokenAudience: "audience", CacheType: kubeletconfig.TokenServiceAccountTokenCacheType, RequireServiceAccount: ptr.To(true),
			RequiredServiceAccountAnnotationKeys: []string{"now-with-dashes/simple"},
		}), `providers.tokenAttributes: Forbidden: tokenAttributes is only supported for credentialprovider.kubelet.k8s.io/v1 API version`},
		{"v1beta1 plugin API", provider("credentialprovider.kubelet.k8s.io/v1beta1", kubeletconfig.ServiceAccountTokenAttributes{
			ServiceAccountTokenAudience: "audience", CacheType: kubeletconfig.ServiceAccountServiceAccountTokenCacheType, RequireServiceAccount: ptr.To(true),
			RequiredServiceAccountAnnotationKeys: []string{"now-with-dashes/simple"},
		}), `providers.tokenAttributes: Forbidden: tokenAttributes is only supported for credentialprovider.kubelet.k8s.io/v1 API version`},
		// Not in kubelet's table: every rule at once, in kubelet's order.
		{"all at once", provider("credentialprovider.kubelet.k8s.io/v1beta1", kubeletconfig.ServiceAccountTokenAttributes{
			RequireServiceAccount: ptr.To(false), RequiredServiceAccountAnnotationKeys: []string{"a", "a"}, OptionalServiceAccountAnnotationKeys: []string{"a"},
		}), `[providers.tokenAttributes.serviceAccountTokenAudience: Required value, ` +
			`providers.tokenAttributes: Forbidden: tokenAttributes is only supported for credentialprovider.kubelet.k8s.io/v1 API version, ` +
			`providers.tokenAttributes.requiredServiceAccountAnnotationKeys: Forbidden: requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set, ` +
			`providers.tokenAttributes.requiredServiceAccountAnnotationKeys: Duplicate value: "a", ` +
			`providers.tokenAttributes: Invalid value: ["a"]: annotation keys cannot be both required and optional, ` +
			`providers.tokenAttributes.cacheType: Required value: cacheType is required to be set when tokenAttributes is specified. Supported values are: ServiceAccount, Token]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := validatePluginConfig(tt.cfg); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestLoadPluginConfigDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc := func(name string) string {
		return fmt.Sprintf("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n  - name: %s\n    matchImages: [\"*.io\"]\n    defaultCacheDuration: 1m\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n", name)
	}
	write(t, dir, "b.yaml", doc("second"))
	write(t, dir, "a.json", `{"apiVersion":"kubelet.config.k8s.io/v1","kind":"CredentialProviderConfig","providers":[{"name":"first","matchImages":["*.io"],"defaultCacheDuration":"1m","apiVersion":"credentialprovider.kubelet.k8s.io/v1"}]}`)
	write(t, dir, "ignored.txt", "junk")
	cfg, err := LoadPluginConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Providers) != 2 || cfg.Providers[0].Name != "first" || cfg.Providers[1].Name != "second" {
		t.Fatalf("providers = %+v", cfg.Providers)
	}
	write(t, dir, "c.yml", doc("first"))
	if _, err := LoadPluginConfig(dir); err == nil || !strings.Contains(err.Error(), `duplicate provider name "first"`) {
		t.Fatalf("duplicate across files: %v", err)
	}
	empty := t.TempDir()
	if _, err := LoadPluginConfig(empty); err == nil || !strings.Contains(err.Error(), "no configuration files found") {
		t.Fatalf("empty dir: %v", err)
	}
	if _, err := LoadPluginConfig(""); err == nil || !strings.Contains(err.Error(), "path is empty") {
		t.Fatalf("empty path: %v", err)
	}
	if _, err := NewPluginKeyring(cfg, filepath.Join(dir, "nope")); err == nil || !strings.Contains(err.Error(), "did not exist") {
		t.Fatalf("missing bin dir: %v", err)
	}
	if _, err := NewPluginKeyring(cfg, dir); err == nil || !strings.Contains(err.Error(), "plugin binary executable") {
		t.Fatalf("missing binary: %v", err)
	}
}

// A ConfigMap volume: the files are symlinks into a "..data" directory;
// kubelet reads any non-directory, and so does LoadPluginConfig.
func TestLoadPluginConfigSymlinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := filepath.Join(dir, "..2026_11_24")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, data, "providers.yaml", "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n  - name: ecr\n    matchImages: [\"*.io\"]\n    defaultCacheDuration: 1m\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n")
	if err := os.Symlink("..2026_11_24", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/providers.yaml", filepath.Join(dir, "providers.yaml")); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadPluginConfig(dir)
	if err != nil || len(cfg.Providers) != 1 || cfg.Providers[0].Name != "ecr" {
		t.Fatalf("ConfigMap-style dir: %+v, %v", cfg, err)
	}
}

// Expired entries of images never looked up again are swept every 15
// minutes, as kubelet does, so a long-running agent's cache stays bounded.
func TestPluginCachePurged(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	k, _ := newPluginKeyring(t, "image", WithClock(clk))
	for i := 0; i < 20; i++ {
		k.Lookup(fmt.Sprintf("a.registry.io/img%d", i))
	}
	p := k.providers[0]
	size := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.cache)
	}
	if n := size(); n != 20 {
		t.Fatalf("%d cached, want 20", n)
	}
	clk.Step(16 * time.Minute) // past the 10 min cache duration and the purge interval
	k.Lookup("a.registry.io/other")
	if n := size(); n != 1 {
		t.Fatalf("%d cached after the purge interval, want 1", n)
	}
}

// Every plugin's answer goes into one keyring, looked up once, as
// kubelet's externalCredentialProviderKeyring: a more specific match from
// a later plugin comes before a broader one from an earlier plugin, and
// the index.docker.io fallback applies to all plugins' answers at once.
func TestPluginsMergedIntoOneKeyring(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	for name, auth := range map[string]string{
		"broad":    `"reg.example.com":{"username":"broad","password":"p1"},"docker.io":{"username":"hub-a","password":"p3"}`,
		"specific": `"reg.example.com/team":{"username":"specific","password":"p2"},"index.docker.io":{"username":"hub-b","password":"p4"}`,
	} {
		write(t, bin, name, "#!/bin/sh\ncat >/dev/null\necho '{\"kind\":\"CredentialProviderResponse\",\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\",\"cacheKeyType\":\"Image\",\"auth\":{"+auth+"}}'\n")
		os.Chmod(filepath.Join(bin, name), 0o755)
	}
	cfg, err := ParsePluginConfig([]byte(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: broad
    matchImages: ["reg.example.com", "docker.io"]
    defaultCacheDuration: 10m
    apiVersion: credentialprovider.kubelet.k8s.io/v1
  - name: specific
    matchImages: ["reg.example.com", "docker.io"]
    defaultCacheDuration: 10m
    apiVersion: credentialprovider.kubelet.k8s.io/v1
`))
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewPluginKeyring(cfg, bin)
	if err != nil {
		t.Fatal(err)
	}
	users := func(image string) []string {
		got, _ := k.Lookup(image)
		var out []string
		for _, c := range got {
			out = append(out, c.Username+"@"+c.Source.Name)
		}
		return out
	}
	if got, want := users("reg.example.com/team/app"), []string{"specific@specific", "broad@broad"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("reg.example.com/team/app: %v, want %v", got, want)
	}
	// Kubelet's keyring falls back to index.docker.io only when no key
	// matched: one keyring finds docker.io and stops there, where a lookup
	// per plugin also gave the other plugin's index.docker.io entry.
	if got, want := users("docker.io/library/nginx"), []string{"hub-a@broad"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("docker.io: %v, want %v", got, want)
	}
}
