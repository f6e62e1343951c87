package credentials

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzParseConfig: any input parses or fails with ErrMalformedConfig,
// never panics, and a failure never quotes the input's strings.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"auths":{"reg.io":{"username":"u","password":"p"}}}`))
	f.Add([]byte(`{"reg.io":{"auth":"Zm9vOmJhcg=="}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cf, err := ParseConfigJSON(data)
		if err == nil && cf == nil {
			t.Fatal("nil config without error")
		}
		_, err2 := ParseDockercfg(data)
		for _, e := range []error{err, err2} {
			if e == nil {
				continue
			}
			// The message may name fields, never input values: check
			// that no quoted string from the input longer than 8 bytes
			// appears in it.
			for _, part := range strings.Split(string(data), `"`) {
				if len(part) > 8 && strings.Contains(e.Error(), part) && !strings.Contains(part, "auth") {
					t.Fatalf("error %q quotes input %q", e, part)
				}
			}
		}
	})
}

// FuzzLookup: for any key and image, the index agrees with kubelet's
// linear matcher.
func FuzzLookup(f *testing.F) {
	f.Add("registry.example.com", "registry.example.com/app")
	f.Add("*.example.com:5000/team", "a.example.com:5000/team/x")
	f.Add("https://index.docker.io/v1/", "nginx")
	f.Add("[::1]:5000", "[::1]:5000/x")
	f.Fuzz(func(t *testing.T, key, image string) {
		cfg := DockerConfig{key: {Username: "k"}, "other.io": {Username: "o"}}
		var k BasicKeyring
		k.Add(cfg)
		var o oracleKeyring
		o.add(cfg)
		got, gf := k.Lookup(image)
		want, wf := o.lookup(image)
		if gf != wf || !reflect.DeepEqual(users(got), users(want)) {
			t.Fatalf("key %q image %q: index %v, oracle %v", key, image, users(got), users(want))
		}
	})
}
