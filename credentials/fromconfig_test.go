package credentials

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KeyringFromConfigJSON and KeyringFromDockercfg match as the pull-secret
// keyring built from the same bytes does.
func TestKeyringFromBytesMatchesSecrets(t *testing.T) {
	t.Parallel()
	src := Source{Kind: SourceSecret, Namespace: "ns", Name: "s", UID: "uid"}
	meta := metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "uid"}
	cfg := `{"*.example.com":{"username":"glob","password":"a"},"reg.example.com/team":{"auth":"dGVhbTpi"},"https://index.docker.io/v1/":{"username":"hub","password":"c","identitytoken":"tok"}}`
	tests := []struct {
		name   string
		build  func(...Option) (*BasicKeyring, error)
		secret corev1.Secret
	}{
		{name: "config.json", build: func(o ...Option) (*BasicKeyring, error) {
			return KeyringFromConfigJSON([]byte(`{"auths":`+cfg+`}`), src, o...)
		},
			secret: corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":` + cfg + `}`)}}},
		{name: ".dockercfg", build: func(o ...Option) (*BasicKeyring, error) { return KeyringFromDockercfg([]byte(cfg), src, o...) },
			secret: corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeDockercfg, Data: map[string][]byte{corev1.DockerConfigKey: []byte(cfg)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, opts := range [][]Option{nil, {WithTokens()}} {
				got, err := tt.build(opts...)
				if err != nil {
					t.Fatal(err)
				}
				want, err := SecretsKeyring([]corev1.Secret{tt.secret}, opts...)
				if err != nil {
					t.Fatal(err)
				}
				for _, image := range []string{"reg.example.com/team/app", "x.example.com/a", "docker.io/library/nginx", "quay.io/a"} {
					g, gf := got.Lookup(image)
					w, wf := want.Lookup(image)
					if gf != wf || !reflect.DeepEqual(g, w) {
						t.Errorf("Lookup(%q) = %v %v, secret keyring %v %v", image, g, gf, w, wf)
					}
				}
			}
		})
	}
}

func TestKeyringFromBytesErrors(t *testing.T) {
	t.Parallel()
	src := Source{Kind: SourceSecret, Namespace: "ns", Name: "regcred"}
	tests := []struct {
		name    string
		data    string
		src     Source
		wantErr error
		want    string
	}{
		{name: "syntax", data: `{"auths":{"r":{"password":hunter2-secret}}}`, src: src, wantErr: ErrMalformedConfig, want: "secret ns/regcred: malformed docker config"},
		{name: "type", data: `{"auths":{"r":{"password":["hunter2-secret"]}}}`, src: src, wantErr: ErrMalformedConfig, want: "secret ns/regcred: "},
		{name: "bad auth", data: `{"auths":{"r":{"auth":"hunter2-secret!"}}}`, src: src, wantErr: ErrMalformedConfig, want: "secret ns/regcred: "},
		{name: "no source", data: `{`, wantErr: ErrMalformedConfig, want: "malformed docker config"},
		{name: "too large", data: `{"auths":{}}` + strings.Repeat(" ", MaxConfigSize), src: src, wantErr: ErrConfigTooLarge, want: "secret ns/regcred: docker config too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := KeyringFromConfigJSON([]byte(tt.data), tt.src)
			if !errors.Is(err, tt.wantErr) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error %v, want %v starting %q", err, tt.wantErr, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q quotes the config", err)
			}
		})
	}
	ring, err := KeyringFromConfigJSON([]byte(`{"credsStore":"desktop"}`), src)
	if err != nil || ring == nil {
		t.Fatalf("config without auths: %v, %v", ring, err)
	}
	if _, found := ring.Lookup("docker.io/library/nginx"); found {
		t.Error("a config without auths found credentials")
	}
}
