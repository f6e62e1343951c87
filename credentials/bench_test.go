package credentials

import (
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// benchConfig has n keys, a quarter of each kind the issue names.
func benchConfig(n int) DockerConfig {
	cfg := DockerConfig{}
	for i := 0; len(cfg) < n; i++ {
		switch i % 4 {
		case 0:
			cfg[fmt.Sprintf("registry%d.example.com", i)] = DockerConfigEntry{Username: "a"}
		case 1:
			cfg[fmt.Sprintf("registry%d.example.com:5000", i)] = DockerConfigEntry{Username: "b"}
		case 2:
			cfg[fmt.Sprintf("*.zone%d.example.net", i)] = DockerConfigEntry{Username: "c"}
		case 3:
			cfg[fmt.Sprintf("quay%d.example.org/team%d", i, i)] = DockerConfigEntry{Username: "d"}
		}
	}
	return cfg
}

var benchImages = []string{
	"registry4.example.com/app/web",
	"registry5.example.com:5000/app/web",
	"host.zone6.example.net/app",
	"quay7.example.org/team7/app",
	"nginx",
	"docker.io/library/nginx:latest",
	"unknown.example.io/app",
}

func BenchmarkLookup(b *testing.B) {
	for _, n := range []int{16, 256, 1024} {
		cfg := benchConfig(n)
		var k BasicKeyring
		k.Add(cfg)
		b.Run(fmt.Sprintf("index/keys=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				k.Lookup(benchImages[i%len(benchImages)])
				i++
			}
		})
		var o oracleKeyring
		o.add(cfg)
		b.Run(fmt.Sprintf("kubelet-linear/keys=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				o.lookup(benchImages[i%len(benchImages)])
				i++
			}
		})
	}
}

// BenchmarkPullSecretKeyring: what each pull pays for its pull secret's
// keyring (a secret of 1,024 keys): parsed every time, as kubelet does,
// against SecretsCache.
func BenchmarkPullSecretKeyring(b *testing.B) {
	cfg := benchConfig(1024)
	data, err := json.Marshal(ConfigFile{Auths: cfg})
	if err != nil {
		b.Fatal(err)
	}
	secrets := []corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "regcred", UID: "u1"},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: data}}}
	b.Run("parse-every-pull", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			k, err := SecretsKeyring(secrets)
			if err != nil {
				b.Fatal(err)
			}
			k.Lookup("registry4.example.com/app/web")
		}
	})
	b.Run("secrets-cache", func(b *testing.B) {
		c := NewSecretsCache(0)
		b.ReportAllocs()
		for b.Loop() {
			k, err := c.Keyring(secrets)
			if err != nil {
				b.Fatal(err)
			}
			k.Lookup("registry4.example.com/app/web")
		}
	})
}
