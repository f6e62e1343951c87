package credentials

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const saPluginConfigYAML = `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: sa-plugin
    matchImages: ["*.registry.io"]
    defaultCacheDuration: 10m
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    tokenAttributes:
      serviceAccountTokenAudience: registry.example.com
      cacheType: %s
      requireServiceAccount: %t
%s    env:
      - name: PLUGIN_MODE
        value: %s
`

// saPluginScript writes a plugin that logs each request to dir/requests
// and answers with the username "id-<value of the example.com/identity
// annotation>" (or "anonymous"), by $PLUGIN_MODE.
func saPluginScript(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	write(t, bin, "sa-plugin", `#!/bin/sh
req=$(cat)
echo "$req" >> "$PLUGIN_DIR/requests"
tok=$(printf '%s' "$req" | sed -n 's/.*"serviceAccountToken":"\([^"]*\)".*/\1/p')
id=$(printf '%s' "$req" | sed -n 's/.*"example.com\/identity":"\([^"]*\)".*/\1/p')
user="id-$id"
[ -z "$id" ] && user=anonymous
resp() { echo "{\"kind\":\"CredentialProviderResponse\",\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\",\"cacheKeyType\":\"$1\",\"auth\":{\"*.registry.io\":{\"username\":\"$user\",\"password\":\"$2\"}}}"; }
case "$PLUGIN_MODE" in
  image) resp Image pw ;;
  registry) resp Registry pw ;;
  global) resp Global pw ;;
  echo) resp Image "$tok" ;;
  fail) echo "rejected token $tok" >&2; echo "short $tok" >&2; exit 2 ;;
esac
`)
	os.Chmod(filepath.Join(bin, "sa-plugin"), 0o755)
	t.Setenv("PLUGIN_DIR", dir)
	return bin
}

// fakeCluster stands in for the API server: service accounts, and tokens
// "tok-<sa>-<pod>-<n>" where n (a letter) counts the requests for that pod (so a
// test can refresh a pod's token).
type fakeCluster struct {
	mu       sync.Mutex
	sas      map[string]*corev1.ServiceAccount // "ns/name"
	refresh  map[types.UID]int
	requests []ServiceAccountTokenRequest
	saErr    error
	tokenErr error
}

func newFakeCluster() *fakeCluster {
	c := &fakeCluster{sas: map[string]*corev1.ServiceAccount{}, refresh: map[types.UID]int{}}
	c.addSA("ns", "builder", "uid-builder", map[string]string{"example.com/identity": "builder", "example.com/team": "ci", "other": "x"})
	c.addSA("ns", "web", "uid-web", map[string]string{"example.com/identity": "web"})
	c.addSA("ns", "plain", "uid-plain", nil)
	return c
}

func (c *fakeCluster) addSA(ns, name string, uid types.UID, annotations map[string]string) {
	c.sas[ns+"/"+name] = &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid, Annotations: annotations}}
}

func (c *fakeCluster) getSA(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.saErr != nil {
		return nil, c.saErr
	}
	sa, ok := c.sas[ns+"/"+name]
	if !ok {
		return nil, fmt.Errorf("serviceaccounts %q not found", name)
	}
	return sa, nil
}

func (c *fakeCluster) token(_ context.Context, r ServiceAccountTokenRequest) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = append(c.requests, r)
	if c.tokenErr != nil {
		return "", c.tokenErr
	}
	return fmt.Sprintf("tok-%s-%s-%c", r.ServiceAccountName, r.PodName, 'a'+c.refresh[r.PodUID]), nil
}

func newSAKeyring(t *testing.T, cacheType string, requireSA bool, keys, mode string, opts ...Option) (*PluginKeyring, *fakeCluster, string) {
	t.Helper()
	dir := t.TempDir()
	bin := saPluginScript(t, dir)
	cfg, err := ParsePluginConfig([]byte(fmt.Sprintf(saPluginConfigYAML, cacheType, requireSA, keys, mode)))
	if err != nil {
		t.Fatal(err)
	}
	c := newFakeCluster()
	k, err := NewPluginKeyring(cfg, bin, append([]Option{WithServiceAccounts(c.getSA, c.token)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return k, c, dir
}

const identityKeys = "      requiredServiceAccountAnnotationKeys: [example.com/identity]\n      optionalServiceAccountAnnotationKeys: [example.com/team, example.com/absent]\n"

func pod(name, sa string) PodRef {
	return PodRef{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ServiceAccountName: sa}
}

// TestPluginServiceAccountToken: the token and the annotations reach the
// plugin (required ones, and optional ones that are present); the token
// is requested as kubelet requests it; each service account gets its own
// credentials and cache entry; the credentials name the service account.
func TestPluginServiceAccountToken(t *testing.T) {
	k, c, dir := newSAKeyring(t, "ServiceAccount", true, identityKeys, "image")
	got, found := k.LookupForPod(context.Background(), pod("build-1", "builder"), "a.registry.io/x")
	if !found || got[0].Username != "id-builder" || got[0].Password != "pw" {
		t.Fatalf("builder: %v", got)
	}
	wantSource := Source{Kind: SourcePlugin, Name: "sa-plugin", ServiceAccount: ServiceAccountRef{Namespace: "ns", Name: "builder", UID: "uid-builder"}}
	if got[0].Source != wantSource || got[0].Source.String() != "credential provider plugin sa-plugin for service account ns/builder" {
		t.Fatalf("source %+v (%s)", got[0].Source, got[0].Source)
	}
	reqs := requests(t, dir)
	want := `{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1","image":"a.registry.io/x","serviceAccountToken":"tok-builder-build-1-a","serviceAccountAnnotations":{"example.com/identity":"builder","example.com/team":"ci"}}`
	if len(reqs) != 1 || reqs[0] != want {
		t.Fatalf("requests %q\nwant %q", reqs, want)
	}
	wantTR := ServiceAccountTokenRequest{Namespace: "ns", ServiceAccountName: "builder", ServiceAccountUID: "uid-builder",
		Audience: "registry.example.com", PodName: "build-1", PodUID: "uid-build-1"}
	if len(c.requests) != 1 || c.requests[0] != wantTR {
		t.Fatalf("token requests %+v", c.requests)
	}

	// Another pod of the same service account: cacheType ServiceAccount
	// shares the entry (a token is still requested, as kubelet does).
	if got, _ := k.ForPod(context.Background(), pod("build-2", "builder")).Lookup("a.registry.io/x"); len(got) != 1 || got[0].Username != "id-builder" {
		t.Fatalf("builder, second pod: %v", got)
	}
	// Another service account: its own run and entry.
	if got, _ := k.LookupForPod(context.Background(), pod("web-1", "web"), "a.registry.io/x"); len(got) != 1 || got[0].Username != "id-web" || got[0].Source.ServiceAccount.Name != "web" {
		t.Fatalf("web: %v", got)
	}
	if got, _ := k.LookupForPod(context.Background(), pod("build-3", "builder"), "a.registry.io/x"); len(got) != 1 || got[0].Username != "id-builder" {
		t.Fatalf("builder after web: %v", got)
	}
	if n := len(requests(t, dir)); n != 2 {
		t.Fatalf("%d plugin runs, want 2 (one per service account)", n)
	}
	if n := len(c.requests); n != 4 {
		t.Fatalf("%d token requests, want 4 (one per lookup)", n)
	}
	if n := len(k.providers[0].cache); n != 2 {
		t.Fatalf("%d cache entries, want 2", n)
	}
}

// TestPluginTokenCacheType: cacheType Token caches per token: a new pod or
// a refreshed token runs the plugin again; the same token hits the cache.
// The plugin may then hand the token back as the password.
func TestPluginTokenCacheType(t *testing.T) {
	k, c, dir := newSAKeyring(t, "Token", true, "", "echo")
	lookup := func(p PodRef) string {
		got, found := k.LookupForPod(context.Background(), p, "a.registry.io/x")
		if !found {
			t.Fatalf("no credentials for %+v", p)
		}
		return got[0].Password
	}
	if pw := lookup(pod("build-1", "builder")); pw != "tok-builder-build-1-a" {
		t.Fatalf("password %q", pw)
	}
	lookup(pod("build-1", "builder"))
	if n := len(requests(t, dir)); n != 1 {
		t.Fatalf("%d runs for one token, want 1", n)
	}
	lookup(pod("build-2", "builder"))
	c.mu.Lock()
	c.refresh["uid-build-1"]++
	c.mu.Unlock()
	if pw := lookup(pod("build-1", "builder")); pw != "tok-builder-build-1-b" {
		t.Fatalf("password after refresh %q", pw)
	}
	if n := len(requests(t, dir)); n != 3 {
		t.Fatalf("%d runs for three tokens, want 3", n)
	}
}

// TestPluginServiceAccountCacheKeys: kubelet's Test_CacheKeyGeneration:
// the cache key is the image, registry or global key plus the service
// account's namespace, name, UID and annotations, plus "token" and the
// token's hash for cacheType Token; without tokenAttributes, no service
// account part.
func TestPluginServiceAccountCacheKeys(t *testing.T) {
	saKey := func(cacheType string) string {
		var k keyBuilder
		k.str("ns").str("builder").str("uid-builder").annotations(map[string]string{"example.com/identity": "builder", "example.com/team": "ci"})
		if cacheType == "Token" {
			sum := sha256.Sum256([]byte("tok-builder-build-1-a"))
			k.str("token").str("sha256:" + hex.EncodeToString(sum[:]))
		}
		return k.String()
	}
	for _, mode := range []string{"image", "registry", "global"} {
		base := map[string]string{"image": "a.registry.io/x", "registry": "a.registry.io", "global": globalCacheKey}[mode]
		for _, cacheType := range []string{"", "ServiceAccount", "Token"} {
			t.Run(mode+"-"+cacheType, func(t *testing.T) {
				var k *PluginKeyring
				want := cacheKey(base, "")
				if cacheType == "" {
					k, _ = newPluginKeyring(t, mode)
				} else {
					k, _, _ = newSAKeyring(t, cacheType, true, identityKeys, mode)
					want = cacheKey(base, saKey(cacheType))
				}
				if _, found := k.LookupForPod(context.Background(), pod("build-1", "builder"), "a.registry.io/x"); !found {
					t.Fatal("no credentials")
				}
				p := k.providers[0]
				if _, ok := p.cache[want]; !ok || len(p.cache) != 1 {
					t.Fatalf("cache keys %q, want %q", keys(p.cache), want)
				}
			})
		}
	}
}

func keys(m map[string]cacheEntry) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestPluginWithoutServiceAccount: a pod without a service account (or
// Lookup, which knows no pod) runs a requireServiceAccount: false plugin
// without a token, and a requireServiceAccount: true plugin not at all;
// neither is an error.
func TestPluginWithoutServiceAccount(t *testing.T) {
	var errs []error
	onErr := WithErrorHandler(func(_ string, err error) { errs = append(errs, err) })
	k, c, dir := newSAKeyring(t, "ServiceAccount", false, "      optionalServiceAccountAnnotationKeys: [example.com/identity]\n", "image", onErr)
	got, found := k.LookupForPod(context.Background(), pod("static", ""), "a.registry.io/x")
	if !found || got[0].Username != "anonymous" || got[0].Source.ServiceAccount != (ServiceAccountRef{}) {
		t.Fatalf("got %v", got)
	}
	want := `{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1","image":"a.registry.io/x"}`
	if reqs := requests(t, dir); len(reqs) != 1 || reqs[0] != want {
		t.Fatalf("requests %q", reqs)
	}
	// The same entry serves Lookup; a pod with a service account gets
	// its own.
	k.Lookup("a.registry.io/x")
	if got, _ := k.LookupForPod(context.Background(), pod("web-1", "web"), "a.registry.io/x"); len(got) != 1 || got[0].Username != "id-web" {
		t.Fatalf("web: %v", got)
	}
	if n := len(requests(t, dir)); n != 2 || len(c.requests) != 1 {
		t.Fatalf("%d runs, %d token requests; want 2, 1", n, len(c.requests))
	}

	k2, c2, dir2 := newSAKeyring(t, "ServiceAccount", true, "", "image", onErr)
	if _, found := k2.Lookup("a.registry.io/x"); found {
		t.Fatal("credentials without a service account")
	}
	if _, found := k2.LookupForPod(context.Background(), pod("static", ""), "a.registry.io/x"); found {
		t.Fatal("credentials without a service account")
	}
	if n := len(requests(t, dir2)); n != 0 || len(c2.requests) != 0 {
		t.Fatalf("%d runs, %d token requests, want none", n, len(c2.requests))
	}
	if len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
}

// TestPluginServiceAccountFailures: kubelet's Test_ProvideWithCoordinates
// service account cases. Nothing is returned, the plugin does not run
// unless the failure is its own, and the error never holds the token.
func TestPluginServiceAccountFailures(t *testing.T) {
	errAPI := errors.New("connection refused")
	tests := []struct {
		name      string
		cacheType string
		mode      string
		pod       PodRef
		setup     func(*fakeCluster)
		wantRuns  int
		wantIs    []error
		text      string
	}{
		{name: "no required annotation", mode: "image", pod: pod("p", "plain"), wantIs: []error{ErrServiceAccount, ErrRequiredAnnotation},
			text: "credential provider plugin sa-plugin: pod ns/p (UID uid-p), service account ns/plain: image a.registry.io/x: service account for credential provider plugin: required annotation example.com/identity not found"},
		{name: "no service account", mode: "image", pod: pod("p", "missing"), wantIs: []error{ErrServiceAccount},
			text: `failed to get service account: serviceaccounts "missing" not found`},
		{name: "service account error", mode: "image", pod: pod("p", "builder"), setup: func(c *fakeCluster) { c.saErr = errAPI },
			wantIs: []error{ErrServiceAccount, errAPI}, text: "failed to get service account: connection refused"},
		{name: "token error", mode: "image", pod: pod("p", "builder"), setup: func(c *fakeCluster) { c.tokenErr = errAPI },
			wantIs: []error{ErrServiceAccount, errAPI}, text: "failed to get service account token: connection refused"},
		{name: "token echoed back", mode: "echo", pod: pod("p", "builder"), wantRuns: 1, wantIs: []error{ErrPluginResponse},
			text: "credential provider plugin returned the service account token as the password which is not allowed when service account cache type is not set to 'Token'"},
		{name: "plugin fails", mode: "fail", pod: pod("p", "builder"), wantRuns: 1, wantIs: []error{ErrPluginFailed},
			text: "error execing credential provider plugin sa-plugin for image a.registry.io/x: exit status 2: rejected token <redacted> / short <redacted>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errs []string
			var all []error
			onErr := WithErrorHandler(func(src string, err error) {
				errs = append(errs, src+": "+err.Error())
				all = append(all, err)
			})
			k, c, dir := newSAKeyring(t, "ServiceAccount", true, identityKeys, tt.mode, onErr)
			if tt.setup != nil {
				tt.setup(c)
			}
			if got, found := k.LookupForPod(context.Background(), tt.pod, "a.registry.io/x"); found {
				t.Fatalf("got %v", got)
			}
			if n := len(requests(t, dir)); n != tt.wantRuns {
				t.Fatalf("%d runs, want %d", n, tt.wantRuns)
			}
			if len(all) != 1 || !strings.Contains(errs[0], tt.text) {
				t.Fatalf("errors %q, want one containing %q", errs, tt.text)
			}
			for _, target := range tt.wantIs {
				if !errors.Is(all[0], target) {
					t.Errorf("error %v is not %v", all[0], target)
				}
			}
			if strings.Contains(errs[0], "tok-builder") {
				t.Fatalf("error holds the token: %s", errs[0])
			}
		})
	}
}

// TestPluginServiceAccountConfig: a config with tokenAttributes needs
// WithServiceAccounts; a v1alpha1 or v1beta1 config document cannot carry
// tokenAttributes (kubelet's strict decoding of those versions).
func TestPluginServiceAccountConfig(t *testing.T) {
	doc := fmt.Sprintf(saPluginConfigYAML, "Token", true, "", "image")
	cfg, err := ParsePluginConfig([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	bin := saPluginScript(t, t.TempDir())
	if _, err := NewPluginKeyring(cfg, bin); !errors.Is(err, ErrPluginConfig) || !strings.Contains(err.Error(), "provider sa-plugin has tokenAttributes: service account token mode needs") {
		t.Fatalf("without WithServiceAccounts: %v", err)
	}
	c := newFakeCluster()
	if _, err := NewPluginKeyring(cfg, bin, WithServiceAccounts(c.getSA, nil)); !errors.Is(err, ErrPluginConfig) {
		t.Fatalf("without a token function: %v", err)
	}
	for _, v := range []string{"v1alpha1", "v1beta1"} {
		old := strings.Replace(doc, "kubelet.config.k8s.io/v1", "kubelet.config.k8s.io/"+v, 1)
		if _, err := ParsePluginConfig([]byte(old)); !errors.Is(err, ErrPluginConfig) || !strings.Contains(err.Error(), `strict decoding error: unknown field "providers[0].tokenAttributes"`) {
			t.Errorf("%s: %v", v, err)
		}
	}
}

// TestServiceAccountTokenRequest: TokenRequest builds kubelet's request.
func TestServiceAccountTokenRequest(t *testing.T) {
	tr := ServiceAccountTokenRequest{Namespace: "ns", ServiceAccountName: "sa", ServiceAccountUID: "sa-uid", Audience: "aud", PodName: "p", PodUID: "p-uid"}.TokenRequest()
	if tr.UID != "sa-uid" || len(tr.Spec.Audiences) != 1 || tr.Spec.Audiences[0] != "aud" || tr.Spec.ExpirationSeconds != nil ||
		tr.Spec.BoundObjectRef == nil || *tr.Spec.BoundObjectRef != (authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "p-uid"}) {
		t.Fatalf("%+v", tr)
	}
}

// TestPluginServiceAccountPrints: a per-pod keyring and the credentials a
// plugin returned print without the token, even when the token is the
// password (cacheType Token).
func TestPluginServiceAccountPrints(t *testing.T) {
	k, _, _ := newSAKeyring(t, "Token", true, "", "echo")
	type ctxKey struct{}
	ring := k.ForPod(context.WithValue(context.Background(), ctxKey{}, "tok-in-context"), pod("build-1", "builder"))
	got, _ := ring.Lookup("a.registry.io/x")
	if len(got) != 1 || got[0].Password != "tok-builder-build-1-a" {
		t.Fatalf("got %v", got)
	}
	for _, v := range []any{ring, Union{ring}, got, got[0], k} {
		for _, verb := range leakVerbs {
			if s := fmt.Sprintf(verb, v); strings.Contains(s, "tok-") {
				t.Fatalf("%s of %T prints the token: %s", verb, v, s)
			}
		}
	}
	if s := fmt.Sprint(Union{ring}); s != `Union[PluginKeyring{providers: ["sa-plugin"], credentials redacted} for pod ns/build-1 (service account "builder")]` {
		t.Fatalf("prints %s", s)
	}
}
