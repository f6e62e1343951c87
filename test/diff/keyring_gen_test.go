package diff

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sort"
	"strings"
)

// Registry keys and image names are drawn from one small vocabulary, so
// that most lookups match some key: globs, ports, paths, schemes, the
// Docker Hub forms, IP and IPv6 hosts, and the characters ("?", "[", "%")
// that trip URL parsing.
var (
	keySchemes = []string{"", "", "", "https://", "http://", "HTTPS://", "ftp://"}
	keyHosts   = []string{
		"r.io", "example.com", "registry.example.com", "*.example.com", "*.r.io", "reg*.example.com",
		"r?.io", "[r].io", "index.docker.io", "docker.io", "registry-1.docker.io", "localhost", "127.0.0.1",
		"[::1]", "gcr.io", "*.gcr.io", "us.gcr.io", "*", "*.*", "Registry.Example.com", "quay.io", "",
		"a.b.c.d", "*.b.c.d", "x%41.io",
	}
	keyPorts = []string{"", "", "", ":5000", ":443", ":", ":x"}
	keyPaths = []string{
		"", "", "", "/", "/v1/", "/v2/", "/team", "/team/app", "/v2/team", "/v1/team/app", "/te", "/team/",
		"/library", "/library/nginx", "/v1", "/%zz", "/Team",
	}
	imageHosts = []string{
		"", "", "r.io", "example.com", "registry.example.com", "a.example.com", "b.r.io", "index.docker.io",
		"docker.io", "registry-1.docker.io", "localhost", "localhost:5000", "127.0.0.1:5000", "[::1]:5000",
		"[::1]", "gcr.io", "us.gcr.io", "eu.gcr.io", "quay.io", "r.io:5000", "r.io:443", "Registry.Example.com",
		"a.b.c.d", "x.b.c.d", "regx.example.com",
	}
	imagePaths = []string{"nginx", "library/nginx", "team/app", "team", "te", "team/app/sub", "foo", "Team/app"}
	imageTags  = []string{"", "", "", ":latest", ":1", "@sha256:abc"}
)

func randomKey(r *rand.Rand) string {
	if r.IntN(30) == 0 {
		return trickyString(r, 4)
	}
	return pick(r, keySchemes) + pick(r, keyHosts) + pick(r, keyPorts) + pick(r, keyPaths)
}

// randomImage is an image name; three in four are made from one of the
// generated registry keys, so that they are likely to match it or to just
// miss it.
func randomImage(r *rand.Rand, tt *tagTable) string {
	if len(tt.tags) > 0 && r.IntN(4) != 0 {
		return imageNear(r, pick(r, tt.tags).loc)
	}
	if r.IntN(30) == 0 {
		return trickyString(r, 4)
	}
	host := pick(r, imageHosts)
	if host == "" {
		return pick(r, imagePaths) + pick(r, imageTags)
	}
	return host + "/" + pick(r, imagePaths) + pick(r, imageTags)
}

// imageNear turns a registry key into an image name near it: scheme and
// /v1/ or /v2/ dropped, globs filled in, a path or tag appended.
func imageNear(r *rand.Rand, loc string) string {
	for _, scheme := range []string{"https://", "http://"} {
		loc = strings.TrimPrefix(loc, scheme)
	}
	for strings.Contains(loc, "*") {
		loc = strings.Replace(loc, "*", pick(r, []string{"a", "reg", "x.y", "", "us"}), 1)
	}
	if host, path, ok := strings.Cut(loc, "/"); ok && (strings.HasPrefix(path, "v1/") || strings.HasPrefix(path, "v2/")) {
		loc = host + "/" + path[len("v1/"):]
	}
	return strings.TrimSuffix(loc, "/") + pick(r, []string{"", "/app", "/team/app", "app", ":1", "/x:latest", "/"})
}

// entryTag identifies a generated entry in a keyring's answer (through its
// email, which every generated entry carries), so that kubelet's order of
// entries under one key, which is map order, can be put in podstart's
// documented order: by secret, then by raw key.
type entryTag struct {
	secret int    // index of the secret (or config) the entry came from
	loc    string // its raw registry key
	key    string // the key it is stored under in kubelet's keyring
}

type tagTable struct {
	tags []entryTag
}

func (tt *tagTable) newTag(secret int, loc string) string {
	tt.tags = append(tt.tags, entryTag{secret: secret, loc: loc, key: storedKey(loc)})
	return fmt.Sprintf("t%d", len(tt.tags)-1)
}

func (tt *tagTable) lookup(email string) (entryTag, bool) {
	var i int
	if _, err := fmt.Sscanf(email, "t%d", &i); err != nil || i < 0 || i >= len(tt.tags) {
		return entryTag{}, false
	}
	return tt.tags[i], true
}

// storedKey is the key a registry location is stored under (kubelet's
// BasicDockerKeyring.Add), written here independently of podstart's
// NormalizeKey. It is used only to group kubelet's answer.
func storedKey(loc string) string {
	v := loc
	if !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") {
		v = "https://" + v
	}
	u, err := url.Parse(v)
	if err != nil {
		return "\x00invalid"
	}
	p := u.Path
	if strings.HasPrefix(p, "/v1/") || strings.HasPrefix(p, "/v2/") {
		p = p[len("/v1"):]
	}
	if p == "" || p == "/" {
		return u.Host
	}
	return u.Host + p
}

// cred is what both keyrings return that kubelet uses for a pull.
type cred struct{ User, Pass, Email string }

// canonical sorts each run of credentials stored under one key by (secret,
// raw key), leaving the order of keys as it is.
func (tt *tagTable) canonical(creds []cred) []cred {
	out := append([]cred(nil), creds...)
	tag := func(c cred) entryTag { t, _ := tt.lookup(c.Email); return t }
	for i := 0; i < len(out); {
		j := i + 1
		for j < len(out) && tag(out[j]).key == tag(out[i]).key {
			j++
		}
		run := out[i:j]
		sort.SliceStable(run, func(a, b int) bool {
			ta, tb := tag(run[a]), tag(run[b])
			if ta.secret != tb.secret {
				return ta.secret < tb.secret
			}
			return ta.loc < tb.loc
		})
		i = j
	}
	return out
}

// configClass says which fields a generated config may hold.
type configClass int

const (
	// agreeing: only what kubelet decodes (username, password, email, auth,
	// auths, HttpHeaders, in any letter case and with any JSON type), plus
	// fields kubelet ignores, with the JSON types podstart's decoder
	// expects where it decodes them (identitytoken, registrytoken,
	// credsStore, credHelpers).
	agreeing configClass = iota
	// ignoredFieldsWrongType: as agreeing, but the fields kubelet ignores
	// may have any JSON type (issue 15: podstart refuses the whole config).
	ignoredFieldsWrongType
)

func randomCase(r *rand.Rand, name string) string {
	switch r.IntN(4) {
	case 0:
		return strings.ToUpper(name)
	case 1:
		return strings.ToUpper(name[:1]) + name[1:]
	}
	return name
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func randomWrongType(r *rand.Rand) string {
	return pick(r, []string{"5", "true", "[]", "{}", `{"a":1}`, `["x"]`, "1.5"})
}

func randomAuth(r *rand.Rand) string {
	u, p := trickyString(r, 2), trickyString(r, 2)
	if r.IntN(8) == 0 { // not usable: the whole config is refused
		switch r.IntN(3) {
		case 0:
			return base64.StdEncoding.EncodeToString([]byte(u + p)) // no colon
		case 1:
			return "!!not base64"
		default:
			return base64.StdEncoding.EncodeToString([]byte(u+":"+p)) + " "
		}
	}
	switch r.IntN(5) {
	case 0:
		return base64.RawStdEncoding.EncodeToString([]byte(u + ":" + p))
	case 1:
		s := base64.StdEncoding.EncodeToString([]byte(u + ":" + p))
		return s[:len(s)/2] + "\n" + s[len(s)/2:]
	case 2:
		return ""
	}
	return base64.StdEncoding.EncodeToString([]byte(u + ":" + p))
}

// randomEntry is one registry entry's JSON, tagged through its email.
func randomEntry(r *rand.Rand, class configClass, tag string) string {
	if r.IntN(40) == 0 {
		return pick(r, []string{"5", `"x"`, "[]"}) // no tag needed: the config is refused
	}
	var fields []string
	if r.IntN(4) != 0 {
		fields = append(fields, jsonString(randomCase(r, "username"))+":"+jsonString(trickyString(r, 3)))
	}
	if r.IntN(4) != 0 {
		fields = append(fields, jsonString(randomCase(r, "password"))+":"+jsonString(trickyString(r, 3)))
	}
	if r.IntN(3) == 0 {
		fields = append(fields, jsonString(randomCase(r, "auth"))+":"+jsonString(randomAuth(r)))
	}
	if r.IntN(40) == 0 {
		fields = append(fields, jsonString(randomCase(r, "username"))+":"+randomWrongType(r))
	}
	if r.IntN(5) == 0 {
		fields = append(fields, jsonString(pick(r, []string{"serveraddress", "x-extra", "Provider"}))+":"+randomWrongType(r))
	}
	for _, f := range []string{"identitytoken", "registrytoken"} {
		if r.IntN(5) == 0 {
			v := jsonString(trickyString(r, 3))
			if class == ignoredFieldsWrongType && r.IntN(2) == 0 {
				v = randomWrongType(r)
			}
			fields = append(fields, jsonString(randomCase(r, f))+":"+v)
		}
	}
	fields = append(fields, jsonString(randomCase(r, "email"))+":"+jsonString(tag))
	r.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
	return "{" + strings.Join(fields, ",") + "}"
}

// randomAuths is a map of registry key to entry, as in .dockercfg.
func randomAuths(r *rand.Rand, class configClass, tt *tagTable, secret int) string {
	seen := map[string]bool{}
	var fields []string
	var locs []string
	for range r.IntN(7) {
		loc := randomKey(r)
		if len(locs) > 0 && r.IntN(3) == 0 {
			// A variant of an earlier key: the same stored key, or a
			// more or less specific one.
			loc = pick(r, []string{"", "https://", "http://"}) + strings.TrimPrefix(pick(r, locs), "https://") +
				pick(r, []string{"", "/", "/v2/", "/team", "/app"})
		}
		locs = append(locs, loc)
		if seen[loc] {
			continue
		}
		seen[loc] = true
		fields = append(fields, jsonString(loc)+":"+randomEntry(r, class, tt.newTag(secret, loc)))
	}
	return "{" + strings.Join(fields, ",") + "}"
}

// randomDockercfg is .dockercfg content, sometimes not a valid one.
func randomDockercfg(r *rand.Rand, class configClass, tt *tagTable, secret int) string {
	if r.IntN(20) == 0 {
		return pick(r, []string{"", "null", "[]", "{", `{"r.io":`})
	}
	return randomAuths(r, class, tt, secret)
}

// randomConfigJSON is config.json content, sometimes not a valid one.
func randomConfigJSON(r *rand.Rand, class configClass, tt *tagTable, secret int) string {
	if r.IntN(20) == 0 {
		return pick(r, []string{"", "null", "[]", "{", "{}", `{"auths":null}`, `{"auths":[]}`, `{"auths":5}`})
	}
	var fields []string
	if r.IntN(10) != 0 {
		fields = append(fields, jsonString(randomCase(r, "auths"))+":"+randomAuths(r, class, tt, secret))
	}
	if r.IntN(6) == 0 {
		v := `{"X-Meta":"1"}`
		if r.IntN(10) == 0 {
			v = randomWrongType(r) // kubelet decodes HttpHeaders too: both refuse
		}
		fields = append(fields, `"HttpHeaders":`+v)
	}
	if r.IntN(5) == 0 {
		v := `"desktop"`
		if class == ignoredFieldsWrongType && r.IntN(2) == 0 {
			v = randomWrongType(r)
		}
		fields = append(fields, jsonString(randomCase(r, "credsStore"))+":"+v)
	}
	if r.IntN(5) == 0 {
		v := `{"r.io":"ecr-login"}`
		if class == ignoredFieldsWrongType && r.IntN(2) == 0 {
			v = pick(r, []string{"5", "[]", `"x"`, `{"r.io":5}`})
		}
		fields = append(fields, jsonString(randomCase(r, "credHelpers"))+":"+v)
	}
	if r.IntN(5) == 0 {
		fields = append(fields, `"psFormat":`+randomWrongType(r))
	}
	r.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
	return "{" + strings.Join(fields, ",") + "}"
}
