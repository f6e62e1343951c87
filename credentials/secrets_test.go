package credentials

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func secret(name string, typ corev1.SecretType, key, data string) corev1.Secret {
	return corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Type:       typ, Data: map[string][]byte{key: []byte(data)},
	}
}

func TestSecretsKeyring(t *testing.T) {
	t.Parallel()
	node := &BasicKeyring{}
	node.Add(cfgOf("reg.io", "node", "https://index.docker.io/v1/", "nodehub"))
	tests := []struct {
		name    string
		secrets []corev1.Secret
		image   string
		want    []string
	}{
		{"dockerconfigjson before node", []corev1.Secret{secret("s", corev1.SecretTypeDockerConfigJson, ".dockerconfigjson", `{"auths":{"reg.io":{"username":"sec"}}}`)}, "reg.io/x", []string{"sec", "node"}},
		{"dockercfg before node", []corev1.Secret{secret("s", corev1.SecretTypeDockercfg, ".dockercfg", `{"reg.io":{"username":"sec"}}`)}, "reg.io/x", []string{"sec", "node"}},
		{"type and key mismatch ignored", []corev1.Secret{secret("s", corev1.SecretTypeDockerConfigJson, ".dockercfg", `{"reg.io":{"username":"sec"}}`)}, "reg.io/x", []string{"node"}},
		{"other types ignored", []corev1.Secret{secret("s", corev1.SecretTypeOpaque, ".dockerconfigjson", `{"auths":{"reg.io":{"username":"sec"}}}`)}, "reg.io/x", []string{"node"}},
		{"empty data ignored", []corev1.Secret{secret("s", corev1.SecretTypeDockerConfigJson, ".dockerconfigjson", ``)}, "reg.io/x", []string{"node"}},
		{"secrets ordered by key specificity, not secret order", []corev1.Secret{
			secret("a", corev1.SecretTypeDockercfg, ".dockercfg", `{"reg.io":{"username":"host"}}`),
			secret("b", corev1.SecretTypeDockercfg, ".dockercfg", `{"reg.io/team":{"username":"team"}}`),
		}, "reg.io/team/x", []string{"team", "host", "node"}},
		{"equal keys in secret order", []corev1.Secret{
			secret("a", corev1.SecretTypeDockercfg, ".dockercfg", `{"reg.io":{"username":"first"}}`),
			secret("b", corev1.SecretTypeDockercfg, ".dockercfg", `{"reg.io":{"username":"second"}}`),
		}, "reg.io/x", []string{"first", "second", "node"}},
		{"fallback evaluated per keyring", []corev1.Secret{secret("s", corev1.SecretTypeDockercfg, ".dockercfg", `{"https://index.docker.io/v1/":{"username":"sechub"}}`)}, "nginx", []string{"sechub", "nodehub"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := MakeKeyring(tt.secrets, node)
			if err != nil {
				t.Fatal(err)
			}
			got, found := k.Lookup(tt.image)
			if !found || !reflect.DeepEqual(users(got), tt.want) {
				t.Fatalf("Lookup = %v, want %v", users(got), tt.want)
			}
		})
	}
}

func TestSecretProvenance(t *testing.T) {
	t.Parallel()
	k, _ := MakeKeyring([]corev1.Secret{secret("pull", corev1.SecretTypeDockerConfigJson, ".dockerconfigjson", `{"auths":{"reg.io":{"auth":"dTpw"}}}`)}, nil)
	got, _ := k.Lookup("reg.io/x")
	if len(got) != 1 || got[0].Source != (Source{Kind: SourceSecret, Namespace: "ns", Name: "pull", UID: "uid-pull"}) || got[0].Password != "p" {
		t.Fatalf("got %+v", got)
	}
}

func TestNoSecretsReturnsNode(t *testing.T) {
	t.Parallel()
	node := &BasicKeyring{}
	if k, err := MakeKeyring(nil, node); err != nil || k != Keyring(node) {
		t.Fatalf("MakeKeyring(nil) = %v, %v", k, err)
	}
	if k, err := MakeKeyring(nil, nil); err != nil {
		t.Fatal(err)
	} else if _, found := k.Lookup("nginx"); found {
		t.Fatal("nil node found credentials")
	}
}

func TestMalformedSecret(t *testing.T) {
	t.Parallel()
	for _, data := range []string{`{"auths":{"reg.io":{"password":"hunter2"`, `{"auths":{"reg.io":{"auth":"aHVudGVyMg=="}}}`, `{"auths":{"reg.io":{"auth":"hunter2!"}}}`} {
		_, err := MakeKeyring([]corev1.Secret{
			secret("ok", corev1.SecretTypeDockercfg, ".dockercfg", `{"reg.io":{}}`),
			secret("bad", corev1.SecretTypeDockerConfigJson, ".dockerconfigjson", data),
		}, nil)
		if !errors.Is(err, ErrMalformedSecret) || !errors.Is(err, ErrMalformedConfig) || !strings.Contains(err.Error(), "ns/bad") {
			t.Fatalf("err = %v", err)
		}
		for _, leak := range []string{"hunter2", "aHVudGVy"} {
			if strings.Contains(err.Error(), leak) {
				t.Fatalf("error leaks the secret: %v", err)
			}
		}
	}
}

func TestTokensOptIn(t *testing.T) {
	t.Parallel()
	s := []corev1.Secret{secret("s", corev1.SecretTypeDockerConfigJson, ".dockerconfigjson", `{"auths":{"reg.io":{"identitytoken":"tok","registrytoken":"rt"}}}`)}
	k, _ := MakeKeyring(s, nil)
	got, _ := k.Lookup("reg.io/x")
	if got[0].IdentityToken != "" || got[0].RegistryToken != "" {
		t.Fatal("tokens carried without WithTokens (kubelet drops them)")
	}
	k, _ = MakeKeyring(s, nil, WithTokens())
	got, _ = k.Lookup("reg.io/x")
	if got[0].IdentityToken != "tok" || got[0].RegistryToken != "rt" {
		t.Fatalf("tokens dropped with WithTokens: %+v", got[0])
	}
}

// A pull secret written with stringData, as in a YAML file, is read as the
// API server would store it: stringData merged over data, stringData
// winning. Without the merge it was skipped and the pull went anonymous.
func TestSecretStringData(t *testing.T) {
	t.Parallel()
	const (
		jsonSec = `{"auths":{"reg.io":{"username":"string"}}}`
		jsonDat = `{"auths":{"reg.io":{"username":"data"}}}`
		cfgSec  = `{"reg.io":{"username":"string"}}`
	)
	withString := func(s corev1.Secret, key, value string) corev1.Secret {
		s.StringData = map[string]string{key: value}
		return s
	}
	only := func(typ corev1.SecretType, key, value string) corev1.Secret {
		return corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Type: typ, StringData: map[string]string{key: value}}
	}
	tests := []struct {
		name    string
		secret  corev1.Secret
		want    []string // users found for reg.io/x; nil: none
		wantErr bool
	}{
		{"dockerconfigjson in stringData only", only(corev1.SecretTypeDockerConfigJson, ".dockerconfigjson", jsonSec), []string{"string"}, false},
		{"dockercfg in stringData only", only(corev1.SecretTypeDockercfg, ".dockercfg", cfgSec), []string{"string"}, false},
		{"stringData wins over data", withString(secret("s", corev1.SecretTypeDockerConfigJson, ".dockerconfigjson", jsonDat), ".dockerconfigjson", jsonSec), []string{"string"}, false},
		{"data kept when stringData has other keys", withString(secret("s", corev1.SecretTypeDockerConfigJson, ".dockerconfigjson", jsonDat), "note", "x"), []string{"data"}, false},
		{"empty stringData value wins, secret skipped", withString(secret("s", corev1.SecretTypeDockerConfigJson, ".dockerconfigjson", jsonDat), ".dockerconfigjson", ""), nil, false},
		{"malformed stringData is an error", withString(secret("s", corev1.SecretTypeDockerConfigJson, ".dockerconfigjson", jsonDat), ".dockerconfigjson", `{"auths":`), nil, true},
		{"opaque secret with stringData skipped", only(corev1.SecretTypeOpaque, ".dockerconfigjson", jsonSec), nil, false},
		{"type and key mismatch in stringData skipped", only(corev1.SecretTypeDockerConfigJson, ".dockercfg", cfgSec), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := MakeKeyring([]corev1.Secret{tt.secret}, nil)
			if tt.wantErr {
				if !errors.Is(err, ErrMalformedSecret) || !strings.Contains(err.Error(), "ns/s") {
					t.Fatalf("err = %v, want ErrMalformedSecret naming ns/s", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, found := k.Lookup("reg.io/x")
			if found != (tt.want != nil) || !reflect.DeepEqual(users(got), tt.want) {
				t.Fatalf("Lookup = %v (found %v), want %v", users(got), found, tt.want)
			}
		})
	}
}

// Pull secrets kubelet accepts are accepted: fields it does not read
// (tokens, helpers) do not fail the secret whatever their type.
func TestSecretsIgnoreUnreadFields(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		`{"auths":{"r.example.com":{"username":"u","password":"p","identitytoken":5}}}`,
		`{"auths":{"r.example.com":{"username":"u","password":"p","registrytoken":{"x":1}}}}`,
		`{"auths":{"r.example.com":{"username":"u","password":"p"}},"credHelpers":[]}`,
		`{"auths":{"r.example.com":{"username":"u","password":"p"}},"credsStore":7}`,
	} {
		s := secret("s", corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, doc)
		for _, opts := range [][]Option{nil, {WithTokens()}} {
			kr, err := SecretsKeyring([]corev1.Secret{s}, opts...)
			if err != nil {
				t.Fatalf("%s: %v", doc, err)
			}
			creds, ok := kr.Lookup("r.example.com/app")
			if !ok || len(creds) != 1 || creds[0].Username != "u" || creds[0].IdentityToken != "" {
				t.Fatalf("%s: %v %v", doc, creds, ok)
			}
		}
	}
}

func TestSecretsCache(t *testing.T) {
	t.Parallel()
	c := NewSecretsCache(2)
	a := secret("a", corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, `{"auths":{"r.io":{"username":"u1","password":"p"}}}`)
	k1, err := c.Keyring([]corev1.Secret{a})
	if err != nil {
		t.Fatal(err)
	}
	if k2, _ := c.Keyring([]corev1.Secret{a}); k2 != k1 {
		t.Fatal("same secret parsed again")
	}
	changed := secret("a", corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, `{"auths":{"r.io":{"username":"u2","password":"p"}}}`)
	k3, _ := c.Keyring([]corev1.Secret{changed})
	if got, _ := k3.Lookup("r.io/x"); k3 == k1 || len(got) != 1 || got[0].Username != "u2" {
		t.Fatalf("changed secret: %v", got)
	}
	bad := secret("bad", corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, `{`)
	if _, err := c.Keyring([]corev1.Secret{bad}); !errors.Is(err, ErrMalformedSecret) {
		t.Fatalf("malformed: %v", err)
	}
	// Size 2: the first entry went when the third came.
	if k4, _ := c.Keyring([]corev1.Secret{a}); k4 == k1 {
		t.Fatal("entry kept beyond the cache size")
	}
	if kr, err := c.MakeKeyring(nil, nil); err != nil || kr == nil {
		t.Fatalf("no secrets, no node: %v %v", kr, err)
	}
}
