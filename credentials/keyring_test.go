package credentials

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

func users(creds []AuthConfig) []string {
	var out []string
	for _, c := range creds {
		out = append(out, c.Username)
	}
	return out
}

func cfgOf(pairs ...string) DockerConfig {
	cfg := DockerConfig{}
	for i := 0; i < len(pairs); i += 2 {
		cfg[pairs[i]] = DockerConfigEntry{Username: pairs[i+1], Password: "pw-" + pairs[i+1]}
	}
	return cfg
}

func TestNormalizeKey(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"https://index.docker.io/v1/", "index.docker.io"},
		{"quay.io/v2/foo", "quay.io/foo"},
		{"http://foo.example.com/", "foo.example.com"},
		{"foo.io/v1", "foo.io/v1"},
		{"registry.example.com:5000", "registry.example.com:5000"},
		{"Registry.Example.COM/Team", "Registry.Example.COM/Team"},
		{"https://quay.io/v1/", "quay.io"},
		{"quay.io?x=1#frag", "quay.io"},
		{"*.example.com/team", "*.example.com/team"},
	}
	for _, tt := range tests {
		if got, ok := NormalizeKey(tt.in); !ok || got != tt.want {
			t.Errorf("NormalizeKey(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
	if _, ok := NormalizeKey("%zz"); ok {
		t.Error("a key that is not a URL was accepted")
	}
}

// TestLookup holds kubelet's keyring rules and the reference's surprises.
func TestLookup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		cfg   DockerConfig
		image string
		want  []string
	}{
		{"exact host", cfgOf("registry.example.com", "a"), "registry.example.com/foo", []string{"a"}},
		{"host without path matches any path", cfgOf("registry.example.com", "a"), "registry.example.com/foo/bar", []string{"a"}},
		{"https scheme stripped", cfgOf("https://registry.example.com", "a"), "registry.example.com/foo", []string{"a"}},
		{"v1 and v2 prefixes dropped", cfgOf("https://quay.io/v2/team", "a"), "quay.io/team/app", []string{"a"}},
		{"all matching keys, most specific first", cfgOf("bar.example.com/pong", "grace", "bar.example.com", "ada"), "bar.example.com/pong", []string{"grace", "ada"}},
		{"path is a string prefix, not per segment", cfgOf("bar.example.com/pong", "grace"), "bar.example.com/pongz", []string{"grace"}},
		{"path prefix across a tag", cfgOf("reg.io/foo", "a"), "reg.io/foo/bar:tag", []string{"a"}},
		{"longer path does not match shorter image", cfgOf("reg.io/foo/bar", "a"), "reg.io/foo", nil},
		{"port must be equal", cfgOf("registry.example.com:5000", "a"), "registry.example.com/foo", nil},
		{"no default port inference", cfgOf("host:443", "a"), "host/foo", nil},
		{"image port needs key port", cfgOf("host", "a"), "host:443/foo", nil},
		{"equal ports", cfgOf("host:5000", "a"), "host:5000/foo", []string{"a"}},
		{"glob label", cfgOf("*.kubernetes.io", "a"), "prefix.kubernetes.io/x", []string{"a"}},
		{"glob needs the same label count", cfgOf("*.kubernetes.io", "a"), "kubernetes.io/x", nil},
		{"glob inside a label matches fewer labels", cfgOf("*kubernetes.io", "a"), "kubernetes.io/x", []string{"a"}},
		{"partial glob", cfgOf("*-good.kubernetes.io", "a"), "prefix-good.kubernetes.io/x", []string{"a"}},
		{"glob does not cross labels", cfgOf("k*.io", "a"), "quay.io/x", nil},
		// Surprise: keys are parsed as URLs, so "?" starts a query and "["
		// makes the host invalid: those globs never match in a host.
		{"question mark is a URL query", cfgOf("reg?.io", "a"), "reg1.io/x", nil},
		{"character class is not a valid host", cfgOf("reg[0-9].io", "a"), "reg7.io/x", nil},
		{"malformed glob never matches", cfgOf("reg[.io", "a"), "reg[.io/x", nil},
		{"specific host before glob", cfgOf("registry.example.com", "exact", "*.example.com", "glob"), "registry.example.com/x", []string{"exact", "glob"}},
		{"glob in the middle", cfgOf("a.*.example.com", "a"), "a.b.example.com/x", []string{"a"}},
		{"glob last label", cfgOf("registry.*", "a"), "registry.io/x", []string{"a"}},
		{"glob with port", cfgOf("*.example.com:5000", "a"), "r.example.com:5000/x", []string{"a"}},
		{"host case is kept", cfgOf("Registry.example.com", "a"), "registry.example.com/x", nil},
		{"docker.io key matches normalised repo", cfgOf("docker.io", "a"), "docker.io/library/nginx", []string{"a"}},
		{"index.docker.io only via fallback for docker.io repos", cfgOf("https://index.docker.io/v1/", "hub"), "docker.io/library/nginx", []string{"hub"}},
		{"fallback for bare name", cfgOf("https://index.docker.io/v1/", "hub"), "nginx", []string{"hub"}},
		{"fallback for user/repo", cfgOf("https://index.docker.io/v1/", "hub"), "foo/bar", []string{"hub"}},
		{"fallback surprise: localhost", cfgOf("https://index.docker.io/v1/", "hub"), "localhost/foo", []string{"hub"}},
		{"no fallback for a registry host", cfgOf("https://index.docker.io/v1/", "hub"), "registry.tld/foo/bar", nil},
		{"no fallback for a host with port", cfgOf("https://index.docker.io/v1/", "hub"), "registry:5000/foo", nil},
		{"no fallback for myhostdocker.io", cfgOf("https://index.docker.io/v1/", "hub"), "myhostdocker.io/foo/bar", nil},
		{"no fallback for empty first part", cfgOf("https://index.docker.io/v1/", "hub"), "/foo", nil},
		{"fallback only when nothing matched", cfgOf("https://index.docker.io/v1/", "hub", "docker.io", "d"), "docker.io/library/nginx", []string{"d"}},
		{"registry-1.docker.io is no fallback key", cfgOf("registry-1.docker.io", "r"), "nginx", nil},
		{"image with tag but no slash does not parse", cfgOf("nginx", "a"), "nginx:latest", nil},
		{"fallback still applies to unparsable image", cfgOf("https://index.docker.io/v1/", "hub"), "nginx:latest", []string{"hub"}},
		{"IPv6 without port never matches itself", cfgOf("[::1]", "a"), "[::1]/x", nil},
		{"IPv6 with port works", cfgOf("[::1]:5000", "a"), "[::1]:5000/x", []string{"a"}},
		{"two spellings, one key", cfgOf("quay.io", "a", "https://quay.io/v1/", "b"), "quay.io/x", []string{"b", "a"}},
		{"unknown host", cfgOf("registry.example.com", "a"), "other.example.com/x", nil},
		{"key that is not a URL is skipped", cfgOf("%zz", "bad", "good.io", "g"), "good.io/x", []string{"g"}},
		{"digest reference parses oddly and still matches like kubelet", cfgOf("sha256", "odd"), "nginx@sha256:abc", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var k BasicKeyring
			k.Add(tt.cfg)
			got, found := k.Lookup(tt.image)
			if !reflect.DeepEqual(users(got), tt.want) || found != (len(tt.want) > 0) {
				t.Errorf("Lookup(%q) = %v, %v; want %v", tt.image, users(got), found, tt.want)
			}
			var o oracleKeyring
			o.add(tt.cfg)
			ogot, _ := o.lookup(tt.image)
			if !reflect.DeepEqual(users(ogot), users(got)) {
				t.Errorf("oracle disagrees: %v vs %v", users(ogot), users(got))
			}
		})
	}
}

func TestAddAccumulates(t *testing.T) {
	t.Parallel()
	var k BasicKeyring
	k.Add(cfgOf("reg.io", "first"))
	k.Add(cfgOf("reg.io", "second", "reg.io/team", "team"))
	got, _ := k.Lookup("reg.io/team/app")
	if want := []string{"team", "first", "second"}; !reflect.DeepEqual(users(got), want) {
		t.Fatalf("got %v, want %v", users(got), want)
	}
	// The result is a copy: changing it does not change the keyring.
	got[0].Username = "mutated"
	if again, _ := k.Lookup("reg.io/team/app"); again[0].Username != "team" {
		t.Fatal("Lookup returned the keyring's own storage")
	}
}

func TestEmptyKeyring(t *testing.T) {
	t.Parallel()
	var k BasicKeyring
	if got, found := k.Lookup("nginx"); got != nil || found {
		t.Fatalf("empty keyring returned %v, %v", got, found)
	}
}

func TestUnion(t *testing.T) {
	t.Parallel()
	var a, b BasicKeyring
	a.Add(cfgOf("reg.io", "a"))
	b.Add(cfgOf("*.io", "b"))
	u := Union{&a, nil, &b}
	got, found := u.Lookup("reg.io/x")
	if !found || !reflect.DeepEqual(users(got), []string{"a", "b"}) {
		t.Fatalf("Union = %v, %v", users(got), found)
	}
	if _, found := (Union{}).Lookup("reg.io/x"); found {
		t.Fatal("empty union found something")
	}
}

func TestAuthConfigNeverPrintsSecrets(t *testing.T) {
	t.Parallel()
	a := AuthConfig{Username: "u", Password: "hunter2", IdentityToken: "tok3n", Auth: "YXV0aA==", Source: Source{Kind: SourceSecret, Namespace: "ns", Name: "s"}}
	e := DockerConfigEntry{Username: "u", Password: "hunter2", IdentityToken: "tok3n"}
	for _, s := range []string{fmt.Sprint(a), fmt.Sprintf("%v %+v %#v %s", a, a, a, a), fmt.Sprintf("%v %+v %#v", e, e, e), fmt.Sprint([]AuthConfig{a})} {
		for _, secret := range []string{"hunter2", "tok3n", "YXV0aA=="} {
			if strings.Contains(s, secret) {
				t.Errorf("%q leaks %q", s, secret)
			}
		}
	}
	if !strings.Contains(fmt.Sprint(a), "secret ns/s") {
		t.Errorf("provenance missing: %v", a)
	}
}

// TestLookupAgreesWithOracle is the property test: random keys and images,
// the indexed keyring and kubelet's linear matcher agree exactly.
func TestLookupAgreesWithOracle(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(1))
	labels := []string{"reg", "example", "com", "io", "*", "r*", "?eg", "[a-r]eg", "docker", "index", "quay", "a-b", "x_y", "", "Reg", "[", `\*`}
	paths := []string{"", "/", "/team", "/team/app", "/v1/", "/v2/team", "/te", "/team/app:tag"}
	ports := []string{"", ":5000", ":443", ":", ":x"}
	schemes := []string{"", "", "https://", "http://"}
	host := func(glob bool) string {
		n := 1 + rng.Intn(4)
		var parts []string
		for i := 0; i < n; i++ {
			l := labels[rng.Intn(len(labels))]
			if !glob {
				l = strings.Trim(l, "*?[]\\")
			}
			parts = append(parts, l)
		}
		return strings.Join(parts, ".")
	}
	for round := 0; round < 400; round++ {
		cfg := DockerConfig{}
		for i := 0; i < 1+rng.Intn(12); i++ {
			key := schemes[rng.Intn(len(schemes))] + host(true) + ports[rng.Intn(len(ports))] + paths[rng.Intn(len(paths))]
			cfg[key] = DockerConfigEntry{Username: fmt.Sprintf("u%d", i)}
		}
		if rng.Intn(4) == 0 {
			cfg["https://index.docker.io/v1/"] = DockerConfigEntry{Username: "hub"}
		}
		var k BasicKeyring
		k.Add(cfg)
		var o oracleKeyring
		o.add(cfg)
		for j := 0; j < 30; j++ {
			image := host(rng.Intn(5) == 0) + ports[rng.Intn(len(ports))] + paths[rng.Intn(len(paths))]
			if rng.Intn(6) == 0 {
				image = []string{"nginx", "foo/bar", "localhost/x", "docker.io/library/nginx", "nginx:latest", "a@b/c", "[::1]:5000/x", "reg.io/x%41", "reg.io?x"}[rng.Intn(9)]
			}
			got, gf := k.Lookup(image)
			want, wf := o.lookup(image)
			if gf != wf || !reflect.DeepEqual(users(got), users(want)) {
				t.Fatalf("keys %v, image %q: index %v %v, oracle %v %v", keysOf(cfg), image, users(got), gf, users(want), wf)
			}
		}
	}
}

func keysOf(cfg DockerConfig) []string {
	var out []string
	for k := range cfg {
		out = append(out, k)
	}
	return out
}
