package diff

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/kubernetes/pkg/credentialprovider"
	"k8s.io/kubernetes/pkg/credentialprovider/plugin"

	"github.com/podstart/podstart/credentials"
)

// The hashes kubelet writes or exports, which podstart's callers need to
// equal kubelet's (KEP-2535 pull records are kubelet's on-disk format):
//
//   - credentials.AuthConfig.Hash with credentialprovider's AuthConfigHash
//     (NewTrackedAuthConfig, KubeletEnsureSecretPulledImages on as in
//     v1.37), on random credentials and on what both sides' pull-secret
//     keyrings return for random secrets;
//   - credentials.LoadPluginConfigWithHash's hash with the hash label of
//     kubelet's kubelet_credential_provider_config_info metric, which
//     RegisterCredentialProviderPlugins sets, on random configuration
//     files and directories.

// TestCredentialHash compares AuthConfig.Hash with kubelet's AuthConfigHash
// on random credentials: every field, JSON and HTML escapes, control
// bytes, invalid UTF-8.
func TestCredentialHash(t *testing.T) {
	r := newRand(t)
	n := cases(20000)
	d := differences{t: t}
	empty := 0
	for range n {
		field := func() string {
			if r.IntN(3) == 0 {
				return ""
			}
			return trickyString(r, 6)
		}
		ours := credentials.AuthConfig{Username: field(), Password: field(), Auth: field(), Email: field(),
			ServerAddress: field(), IdentityToken: field(), RegistryToken: field(),
			Source: credentials.Source{Kind: credentials.SourceSecret, Namespace: "ns", Name: "s", UID: "uid"}}
		theirs := credentialprovider.AuthConfig{Username: ours.Username, Password: ours.Password, Auth: ours.Auth, Email: ours.Email,
			ServerAddress: ours.ServerAddress, IdentityToken: ours.IdentityToken, RegistryToken: ours.RegistryToken}
		want := credentialprovider.NewTrackedAuthConfig(&theirs, &credentialprovider.CredentialSource{
			Secret: &credentialprovider.SecretCoordinates{UID: "uid", Namespace: "ns", Name: "s"}}).AuthConfigHash
		if want == "" {
			empty++
		}
		if got := ours.Hash(); got != want {
			d.add("Hash(%q) = %s, kubelet %s", []string{ours.Username, ours.Password, ours.Auth, ours.Email,
				ours.ServerAddress, ours.IdentityToken, ours.RegistryToken}, got, want)
		}
	}
	if empty > 0 {
		t.Fatalf("kubelet gave no hash for %d credentials: is KubeletEnsureSecretPulledImages off?", empty)
	}
	d.report(n, "credential hashes")
	t.Logf("%d random credentials: the same hash", n)
}

// TestSecretKeyringHashes compares the hashes of what the two sides'
// pull-secret keyrings return for random secrets and images: those are
// the hashes a pull record stores, so they also depend on which fields
// each keyring fills (kubelet's: username, password and email).
func TestSecretKeyringHashes(t *testing.T) {
	r := newRand(t)
	n, images := cases(5000), 10
	d := differences{t: t}
	hashes := 0
	for range n {
		tt := &tagTable{}
		list, ours, ourErr, theirs, theirErr := secretKeyrings(r, agreeing, tt)
		if ourErr != nil || theirErr != nil {
			if (ourErr != nil) != (theirErr != nil) {
				d.add("MakeKeyring error %v, kubelet's %v", ourErr, theirErr)
			}
			continue
		}
		for range images {
			image := randomImage(r, tt)
			var got, want []string
			if ours != nil {
				c, _ := ours.Lookup(image)
				for _, a := range c {
					got = append(got, a.Hash())
				}
			}
			if theirs != nil {
				c, _ := theirs.Lookup(image)
				for _, a := range c {
					want = append(want, a.AuthConfigHash)
				}
			}
			// Order within one registry key is compared by
			// TestPullSecretKeyring; here the multiset of hashes.
			slices.Sort(got)
			slices.Sort(want)
			hashes += len(want)
			if !slices.Equal(got, want) {
				d.add("%d secrets %s: Lookup(%q) hashes %v, kubelet %v", len(list), describeSecrets(list), image, got, want)
			}
		}
	}
	d.report(n*images, "pull-secret lookups' hashes")
	t.Logf("%d lookups over random pull secrets: %d credential hashes, the same", n*images, hashes)
}

// providerSerial names every provider this process registers with kubelet
// uniquely: kubelet's registry is global and panics on a name seen twice.
var providerSerial int

// hashTestImages are the only matchImages the hash test registers: no
// image of the other tests matches them, so kubelet's global plugin list
// growing here never changes what TestPluginKeyring sees.
var hashTestImages = []string{"hash.invalid", "*.hash.invalid", "r.hash.invalid:5000", "hash.invalid/team", "*.*.hash.invalid"}

// randomProviderConfig writes one CredentialProviderConfig document, YAML
// or JSON in varied layouts (comments, indentation, key order, quoting,
// document markers, CRLF), with one or two valid providers.
func randomProviderConfig(r *rand.Rand) []byte {
	type env struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	type provider struct {
		Name                 string   `json:"name"`
		MatchImages          []string `json:"matchImages"`
		DefaultCacheDuration string   `json:"defaultCacheDuration"`
		APIVersion           string   `json:"apiVersion"`
		Args                 []string `json:"args,omitempty"`
		Env                  []env    `json:"env,omitempty"`
	}
	var ps []provider
	for range 1 + r.IntN(2) {
		providerSerial++
		p := provider{
			Name:                 fmt.Sprintf("hash-%d", providerSerial),
			MatchImages:          []string{pick(r, hashTestImages)},
			DefaultCacheDuration: pick(r, []string{"0s", "10m", "1h30m", "5s", "90s"}),
			APIVersion:           "credentialprovider.kubelet.k8s.io/" + pick(r, []string{"v1", "v1beta1", "v1alpha1"}),
		}
		for range r.IntN(3) {
			p.Args = append(p.Args, printable(trickyString(r, 4)))
		}
		for range r.IntN(2) {
			p.Env = append(p.Env, env{Name: "E" + fmt.Sprint(r.IntN(9)), Value: printable(trickyString(r, 4))})
		}
		ps = append(ps, p)
	}
	apiVersion := "kubelet.config.k8s.io/" + pick(r, []string{"v1", "v1beta1", "v1alpha1"})
	if r.IntN(2) == 0 {
		doc := map[string]any{"kind": "CredentialProviderConfig", "apiVersion": apiVersion, "providers": ps}
		var b []byte
		if r.IntN(2) == 0 {
			b, _ = json.Marshal(doc)
		} else {
			b, _ = json.MarshalIndent(doc, pick(r, []string{"", " "}), pick(r, []string{"  ", "\t", "    "}))
		}
		if r.IntN(2) == 0 {
			b = append(b, '\n')
		}
		return b
	}
	var sb strings.Builder
	nl := pick(r, []string{"\n", "\n", "\r\n"})
	if r.IntN(2) == 0 {
		sb.WriteString("---" + nl)
	}
	if r.IntN(3) == 0 {
		sb.WriteString("# " + printable(trickyString(r, 5)) + nl)
	}
	head := []string{"kind: CredentialProviderConfig", "apiVersion: " + apiVersion}
	if r.IntN(2) == 0 {
		head[0], head[1] = head[1], head[0]
	}
	for _, h := range head {
		sb.WriteString(h + nl)
	}
	sb.WriteString("providers:" + nl)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) } // JSON strings are YAML strings
	for _, p := range ps {
		sb.WriteString("  - name: " + p.Name + nl)
		sb.WriteString("    matchImages:" + nl + "    - " + q(p.MatchImages[0]) + nl)
		sb.WriteString("    defaultCacheDuration: " + p.DefaultCacheDuration + nl)
		sb.WriteString("    apiVersion: " + p.APIVersion + nl)
		if len(p.Args) > 0 {
			sb.WriteString("    args:" + nl)
			for _, a := range p.Args {
				sb.WriteString("    - " + q(a) + nl)
			}
		}
		if len(p.Env) > 0 {
			sb.WriteString("    env:" + nl)
			for _, e := range p.Env {
				sb.WriteString("    - name: " + e.Name + nl + "      value: " + q(e.Value) + nl)
			}
		}
	}
	s := sb.String()
	if r.IntN(3) == 0 {
		s = strings.TrimSuffix(s, nl)
	}
	return []byte(s)
}

// printable keeps what YAML allows unescaped in a document: valid UTF-8
// without control characters (JSON's quoting leaves DEL raw).
func printable(s string) string {
	return strings.Map(func(c rune) rune {
		if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || c == 0x2028 || c == 0x2029 || c == 0xfeff {
			return -1
		}
		return c
	}, strings.ToValidUTF8(s, ""))
}

// writeProviderConfig lays out a random configuration: one file, or a
// directory of one to three documents with names sorting in varied ways,
// beside files and a directory neither side reads. It returns the path
// to load and the providers' names.
func writeProviderConfig(t *testing.T, r *rand.Rand, dir string) string {
	t.Helper()
	if r.IntN(3) == 0 {
		path := filepath.Join(dir, pick(r, []string{"config.yaml", "config.json", "c.yml", "plain"}))
		if err := os.WriteFile(path, randomProviderConfig(r), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cfgDir := filepath.Join(dir, "conf")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	names := []string{"a.yaml", "B.yml", "c.json", "10.yaml", "2.yaml", "_x.json", "a-b.yaml", "a.b.yml"}
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for _, n := range names[:1+r.IntN(3)] {
		if err := os.WriteFile(filepath.Join(cfgDir, n), randomProviderConfig(r), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r.IntN(2) == 0 { // read by neither
		os.WriteFile(filepath.Join(cfgDir, pick(r, []string{"notes.txt", "x.YAML", "y.json.bak"})), []byte("not: [a config"), 0o644)
		os.MkdirAll(filepath.Join(cfgDir, "sub.yaml"), 0o755)
	}
	return cfgDir
}

// kubeletConfigHash is the hash label of kubelet's
// kubelet_credential_provider_config_info metric.
func kubeletConfigHash(t *testing.T) string {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "kubelet_credential_provider_config_info" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "hash" {
					return l.GetValue()
				}
			}
		}
	}
	return ""
}

// TestPluginConfigHash compares LoadPluginConfigWithHash's hash with the
// one kubelet's RegisterCredentialProviderPlugins records for its metric,
// on random configuration files and directories (each provider gets an
// empty executable, as kubelet wants one for each).
func TestPluginConfigHash(t *testing.T) {
	r := newRand(t)
	n := cases(150)
	d := differences{t: t}
	dirs, providers, refused := 0, 0, 0
	for i := range n {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
		bin := filepath.Join(dir, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		first := providerSerial + 1
		path := writeProviderConfig(t, r, dir)
		for i := first; i <= providerSerial; i++ {
			if err := os.WriteFile(filepath.Join(bin, fmt.Sprintf("hash-%d", i)), nil, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cfg, got, err := credentials.LoadPluginConfigWithHash(path)
		theirErr := plugin.RegisterCredentialProviderPlugins(path, bin, nil, nil)
		if err != nil || theirErr != nil {
			if err == nil || theirErr == nil {
				d.add("%s: error %v, kubelet's %v", path, err, theirErr)
			}
			refused++
			continue
		}
		providers += len(cfg.Providers)
		if filepath.Base(path) == "conf" {
			dirs++
		}
		if want := kubeletConfigHash(t); got != want {
			d.add("%s: hash %s, kubelet %s", path, got, want)
		}
	}
	d.report(n, "credential provider configurations' hashes")
	t.Logf("%d configurations: %d refused by both, %d loaded (%d directories, %d providers) with the same hash", n, refused, n-refused, dirs, providers)
}
