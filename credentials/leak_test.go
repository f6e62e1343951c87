package credentials

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	leakUser = "leakuser"
	leakPass = "Hunter2-Pa55word-xyzzy"
)

// leakForms are the password in every encoding a scan looks for.
func leakForms() []string {
	up := leakUser + ":" + leakPass
	return []string{
		leakPass,
		base64.StdEncoding.EncodeToString([]byte(up)), base64.RawStdEncoding.EncodeToString([]byte(up)),
		base64.StdEncoding.EncodeToString([]byte(leakPass)), base64.RawStdEncoding.EncodeToString([]byte(leakPass)),
		hex.EncodeToString([]byte(leakPass)), strings.ToUpper(hex.EncodeToString([]byte(leakPass))),
		hex.EncodeToString([]byte(up)),
	}
}

var leakVerbs = []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"}

// TestLeakScan renders every value of this package that holds the known
// password with every verb, and collects every error and error-handler
// message of failing secrets, files, plugins and helpers: the password
// appears in none, in any encoding.
func TestLeakScan(t *testing.T) {
	dir := isolate(t)
	auth := base64.StdEncoding.EncodeToString([]byte(leakUser + ":" + leakPass))
	good := fmt.Sprintf(`{"auths":{"reg.io":{"auth":%q},"*.reg.io":{"username":%q,"password":%q,"identitytoken":%q}}}`, auth, leakUser, leakPass, leakPass)

	var mu sync.Mutex
	var texts []string
	add := func(what, s string) {
		mu.Lock()
		defer mu.Unlock()
		texts = append(texts, what+": "+s)
	}
	onErr := WithErrorHandler(func(src string, err error) { add("handler "+src, err.Error()) })

	// Node files: a good one, and a root whose file is malformed around
	// the password.
	root := filepath.Join(dir, "root")
	write(t, root, "config.json", strings.Replace(good, `"credsStore":"x"`, "", 1)[:len(good)-1]+`,"credsStore":"leaky"}`)
	bad := filepath.Join(dir, "bad")
	write(t, bad, "config.json", `{"auths":{"reg.io":{"auth":"`+leakPass+`"}}}`)
	write(t, bad, ".dockercfg", `{"reg.io":{"password":`+leakPass+`}}`)

	// A helper that fails printing the password and an Authorization header.
	helperScript(t, dir, "leaky", fmt.Sprintf("read server\necho 'login failed for %s:%s Authorization: Basic %s password=%s'\nexit 1\n", leakUser, leakPass, auth, leakPass))

	node := NewNodeKeyring(root, onErr, WithHelpers(5*time.Second), WithTokens())
	node.Lookup("reg.io/app")
	badNode := NewNodeKeyring(bad, onErr)
	badNode.Lookup("reg.io/app")
	if _, _, err := ReadDockerConfigFile(bad); err != nil {
		add("ReadDockerConfigFile", err.Error())
		add("ReadDockerConfigFile %+v", fmt.Sprintf("%+v", err))
	}

	// Secrets: good, and malformed in several ways.
	secret := func(name, typ, key, data string) corev1.Secret {
		return corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Type: corev1.SecretType(typ), Data: map[string][]byte{key: []byte(data)}}
	}
	secrets := []corev1.Secret{secret("good", string(corev1.SecretTypeDockerConfigJson), corev1.DockerConfigJsonKey, good)}
	ring, err := MakeKeyring(secrets, node, WithTokens())
	if err != nil {
		t.Fatal(err)
	}
	basic, _ := SecretsKeyring(secrets, WithTokens())
	for _, data := range []string{
		`{"auths":{"reg.io":{"auth":"` + leakPass + `"}}}`,
		`{"auths":{"reg.io":{"password":` + leakPass + `}}}`,
		`{"auths":{"reg.io":{"password":"` + leakPass,
		`{"auths":{"reg.io":{"password":["` + leakPass + `"]}}}`,
		`{"auths":{"reg.io":{"auth":"` + base64.StdEncoding.EncodeToString([]byte(leakPass)) + `"}}}`,
	} {
		for _, typ := range [][2]string{{string(corev1.SecretTypeDockerConfigJson), corev1.DockerConfigJsonKey}, {string(corev1.SecretTypeDockercfg), corev1.DockerConfigKey}} {
			if _, err := MakeKeyring([]corev1.Secret{secret("bad", typ[0], typ[1], data)}, nil); err != nil {
				add("MakeKeyring", err.Error())
				add("MakeKeyring %+v", fmt.Sprintf("%+v", err))
			}
		}
	}

	// Plugins: one that answers with the password, one that fails printing it.
	bin := filepath.Join(dir, "plugins")
	write(t, bin, "answer", fmt.Sprintf(`#!/bin/sh
cat >/dev/null
echo '{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"Registry","auth":{"*.reg.io":{"username":"%s","password":"%s"}}}'
`, leakUser, leakPass))
	write(t, bin, "fail", fmt.Sprintf("#!/bin/sh\ncat >/dev/null\necho 'GET /v2/ Authorization: Basic %s' >&2\necho 'user %s:%s rejected' >&2\necho 'token %s' >&2\nexit 1\n",
		auth, leakUser, leakPass, hex.EncodeToString([]byte(leakPass))))
	os.Chmod(filepath.Join(bin, "answer"), 0o755)
	os.Chmod(filepath.Join(bin, "fail"), 0o755)
	cfg, err := ParsePluginConfig([]byte(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - {name: answer, matchImages: ["*.reg.io"], defaultCacheDuration: 10m, apiVersion: credentialprovider.kubelet.k8s.io/v1}
  - {name: fail, matchImages: ["*.reg.io"], defaultCacheDuration: 10m, apiVersion: credentialprovider.kubelet.k8s.io/v1}
`))
	if err != nil {
		t.Fatal(err)
	}
	plugins, err := NewPluginKeyring(cfg, bin, onErr)
	if err != nil {
		t.Fatal(err)
	}
	creds, _ := Union{ring, plugins}.Lookup("a.reg.io/app")
	if len(creds) == 0 {
		t.Fatal("no credentials found: the scan would prove nothing")
	}
	cf, err := ParseConfigJSON([]byte(good))
	if err != nil {
		t.Fatal(err)
	}

	values := map[string]any{
		"*BasicKeyring": basic, "MakeKeyring": ring, "*NodeKeyring": node, "*PluginKeyring": plugins,
		"Union": Union{ring, plugins}, "[]AuthConfig": creds, "AuthConfig": creds[0], "*AuthConfig": &creds[0],
		"*ConfigFile": cf, "ConfigFile": *cf, "DockerConfig": cf.Auths, "DockerConfigEntry": cf.Auths["reg.io"],
	}
	for name, v := range values {
		for _, verb := range leakVerbs {
			add(name+" "+verb, fmt.Sprintf(verb, v))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(texts) < 20 {
		t.Fatalf("only %d texts captured", len(texts))
	}
	for _, s := range texts {
		for _, form := range leakForms() {
			if strings.Contains(s, form) {
				t.Errorf("leak of %q in %s", form, s)
			}
		}
	}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "plain message kept", in: "credentials not found in native keychain\n", want: "credentials not found in native keychain"},
		{name: "header redacted", in: "denied: Authorization: Basic Zm9vOmJhcg==", want: "denied: Authorization: <redacted> <redacted>"},
		{name: "opaque words redacted", in: "user bob:Secr3t failed 401", want: "user <redacted> failed 401"},
		{name: "lines joined", in: "one\n\ntwo\n", want: "one / two"},
		{name: "empty", in: "", want: "(no output)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summarize([]byte(tt.in)); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	if got := summarize([]byte(strings.Repeat("word ", 1<<20))); len(got) > maxSummary+4 {
		t.Fatalf("summary of 5 MiB is %d bytes", len(got))
	}
}
