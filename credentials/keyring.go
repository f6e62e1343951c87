package credentials

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// SourceKind says what kind of place a credential came from.
type SourceKind string

// Kinds of credential sources.
const (
	SourceNodeFile SourceKind = "node-file" // a docker config file on the node
	SourceSecret   SourceKind = "secret"    // a pod pull secret
	SourceHelper   SourceKind = "helper"    // a docker credential helper
	SourcePlugin   SourceKind = "plugin"    // an exec credential provider plugin
)

// Source is where a credential came from, for logs and audit: never the
// credential itself.
type Source struct {
	Kind      SourceKind
	Path      string // node file path
	Namespace string // secret namespace
	Name      string // secret name, helper name or plugin name
	UID       string // secret UID
	// ServiceAccount is, for a plugin in service-account token mode, the
	// service account whose token the plugin was given (kubelet's
	// ServiceAccountCoordinates); zero otherwise.
	ServiceAccount ServiceAccountRef
}

// String names the source for people, e.g. "secret ns/name".
func (s Source) String() string {
	switch s.Kind {
	case SourceNodeFile:
		return "node file " + s.Path
	case SourceSecret:
		return "secret " + s.Namespace + "/" + s.Name
	case SourceHelper:
		return "credential helper " + s.Name
	case SourcePlugin:
		if s.ServiceAccount.Name != "" {
			return "credential provider plugin " + s.Name + " for service account " + s.ServiceAccount.Namespace + "/" + s.ServiceAccount.Name
		}
		return "credential provider plugin " + s.Name
	}
	return "unknown source"
}

// AuthConfig is one credential to try for a pull, with the fields of CRI's
// AuthConfig and where it came from.
type AuthConfig struct {
	Username      string
	Password      string
	Auth          string
	Email         string
	ServerAddress string
	IdentityToken string
	RegistryToken string
	Source        Source
}

// String never prints secrets, so an AuthConfig is safe in a log line.
func (a AuthConfig) String() string {
	return fmt.Sprintf("AuthConfig{Username:%q, from %s}", a.Username, a.Source)
}

// GoString never prints secrets, even with %#v.
func (a AuthConfig) GoString() string { return a.String() }

// Keyring answers which credentials to try, in order, for an image
// repository ("docker.io/library/nginx"). found is len(creds) > 0.
type Keyring interface {
	Lookup(image string) (creds []AuthConfig, found bool)
}

// defaultRegistryKey is the key "https://index.docker.io/v1/" becomes; its
// records are the Docker Hub fallback.
const defaultRegistryKey = "index.docker.io"

// BasicKeyring is kubelet's BasicDockerKeyring: registry keys normalised at
// Add, every matching key's credentials returned most specific key first,
// and the Docker Hub fallback when nothing matched. Unlike kubelet, it
// builds an index at Add so that Lookup does not parse every key. It is
// safe for concurrent use; Lookup takes no lock.
//
// The zero value is an empty keyring, ready to use: Lookup finds nothing
// and Add initialises it. It keeps kubelet's fields only (identitytoken
// and registrytoken are dropped); a keyring that keeps them comes from
// KeyringFromConfigJSON, KeyringFromDockercfg or SecretsKeyring with
// WithTokens.
type BasicKeyring struct {
	mu      sync.Mutex // serialises Add
	records map[string][]AuthConfig
	tokens  bool
	idx     atomic.Pointer[index]
}

// Add adds every entry of cfg under its normalised key. Entries whose key
// is not a URL are skipped, as kubelet does. Keys are added in sorted order
// (kubelet: map order), so credentials under one key are deterministic.
func (k *BasicKeyring) Add(cfg DockerConfig) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.records == nil {
		k.records = map[string][]AuthConfig{}
	}
	locs := make([]string, 0, len(cfg))
	for loc := range cfg {
		locs = append(locs, loc)
	}
	sort.Strings(locs)
	for _, loc := range locs {
		key, ok := NormalizeKey(loc)
		if !ok {
			continue
		}
		e := cfg[loc]
		a := AuthConfig{Username: e.Username, Password: e.Password, Email: e.Email, Source: e.Source}
		if k.tokens {
			a.IdentityToken, a.RegistryToken = e.IdentityToken, e.RegistryToken
		}
		k.records[key] = append(k.records[key], a)
	}
	k.idx.Store(buildIndex(k.records))
}

// NormalizeKey turns a registry key into kubelet's keyring key: "https://"
// is assumed, a leading /v1/ or /v2/ path element is dropped, and the key is
// host (with port) plus the remaining path unless that is empty or "/".
// It reports false for a key that is not a URL.
func NormalizeKey(loc string) (string, bool) {
	value := loc
	if !strings.HasPrefix(value, "https://") && !strings.HasPrefix(value, "http://") {
		value = "https://" + value
	}
	parsed, err := url.Parse(value)
	if err != nil {
		return "", false
	}
	path := parsed.Path
	if strings.HasPrefix(path, "/v2/") || strings.HasPrefix(path, "/v1/") {
		path = path[3:]
	}
	if path != "" && path != "/" {
		return parsed.Host + path, true
	}
	return parsed.Host, true
}

// Lookup implements Keyring.
func (k *BasicKeyring) Lookup(image string) ([]AuthConfig, bool) {
	idx := k.idx.Load()
	if idx == nil {
		return nil, false
	}
	return idx.lookup(image)
}

// index: every key parsed once, bucketed by what a target host must have
// for the key to possibly match: the same label count, the same port, and
// the key's trailing literal labels. A lookup checks one bucket per suffix
// length of the target's host, so its cost does not grow with the number
// of keys.
type index struct {
	buckets  map[bucketKey][]*entry
	fallback []AuthConfig // records under "index.docker.io"
}

type bucketKey struct {
	labels int    // number of host labels
	port   string // port, "" for none
	suffix string // the trailing literal labels, joined by "."
	n      int    // how many trailing labels the suffix holds
}

type entry struct {
	rank  int      // position in kubelet's reverse-sorted index
	globs []string // leading labels that must glob-match (may be literal)
	path  string   // the key's URL path, a string prefix of the target's
	creds []AuthConfig
}

func buildIndex(records map[string][]AuthConfig) *index {
	keys := make([]string, 0, len(records))
	for key := range records {
		keys = append(keys, key)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(keys)))
	idx := &index{buckets: map[bucketKey][]*entry{}, fallback: records[defaultRegistryKey]}
	for rank, key := range keys {
		// Kubelet re-parses the stored key at every lookup; a key that
		// does not parse again never matches.
		hostname, port, path, ok := parseSlow(key)
		if !ok {
			continue
		}
		labels := strings.Split(hostname, ".")
		n := 0
		for n < len(labels) && !isGlob(labels[len(labels)-1-n]) {
			n++
		}
		bk := bucketKey{labels: len(labels), port: port, suffix: strings.Join(labels[len(labels)-n:], "."), n: n}
		idx.buckets[bk] = append(idx.buckets[bk], &entry{rank: rank, globs: labels[:len(labels)-n], path: path, creds: records[key]})
	}
	return idx
}

func isGlob(label string) bool { return strings.ContainsAny(label, `*?[\`) }

func (idx *index) lookup(image string) ([]AuthConfig, bool) { return idx.lookupCounted(image, nil) }

// lookupCounted is lookup, adding to *ops (when not nil) one per entry
// checked and one per comparison of the sort: the work a lookup does, for
// tests to measure its growth without a clock.
func (idx *index) lookupCounted(image string, ops *int) ([]AuthConfig, bool) {
	hostname, port, path, ok := parseTarget(image)
	var hits [16]*entry
	matched := hits[:0]
	if ok {
		labels := strings.Count(hostname, ".") + 1
		// Walk suffixes from the whole host ("a.b.c", n=3) to none ("", n=0).
		start := 0
		for n := labels; n >= 0; n-- {
			suffix := hostname[start:]
			if n == 0 {
				suffix = ""
			}
			bucket := idx.buckets[bucketKey{labels: labels, port: port, suffix: suffix, n: n}]
			if ops != nil {
				*ops += len(bucket)
			}
			for _, e := range bucket {
				if e.matches(hostname, path) {
					matched = append(matched, e)
				}
			}
			if n > 0 {
				if dot := strings.IndexByte(hostname[start:], '.'); dot >= 0 {
					start += dot + 1
				}
			}
		}
	}
	if len(matched) == 0 {
		if len(idx.fallback) > 0 && isDefaultRegistryMatch(image) {
			return append([]AuthConfig(nil), idx.fallback...), true
		}
		return nil, false
	}
	// Order by rank: O(m log m) in the m matches, however many there are
	// and in whatever order the buckets gave them.
	total := 0
	for i := range matched {
		total += len(matched[i].creds)
	}
	if ops == nil {
		slices.SortFunc(matched, func(a, b *entry) int { return a.rank - b.rank })
	} else {
		slices.SortFunc(matched, func(a, b *entry) int { *ops++; return a.rank - b.rank })
	}
	out := make([]AuthConfig, 0, total)
	for _, e := range matched {
		out = append(out, e.creds...)
	}
	return out, true
}

// matches checks the parts the bucket did not: the path prefix and the
// leading (glob) labels.
func (e *entry) matches(hostname, path string) bool {
	if !strings.HasPrefix(path, e.path) {
		return false
	}
	for _, g := range e.globs {
		dot := strings.IndexByte(hostname, '.')
		label := hostname
		if dot >= 0 {
			label, hostname = hostname[:dot], hostname[dot+1:]
		}
		if ok, err := filepath.Match(g, label); !ok || err != nil {
			return false
		}
	}
	return true
}

// parseTarget splits an image into hostname, port and path exactly as
// kubelet's url.Parse("https://"+image) and net.SplitHostPort do. Images
// made only of the characters image names use take a path that does not
// allocate; anything else goes through the standard library.
func parseTarget(image string) (hostname, port, path string, ok bool) {
	for i := 0; i < len(image); i++ {
		c := image[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_' || c == ':' || c == '/') {
			return parseSlow(image)
		}
	}
	authority := image
	if slash := strings.IndexByte(image, '/'); slash >= 0 {
		authority, path = image[:slash], image[slash:]
	}
	colon := strings.IndexByte(authority, ':')
	if colon < 0 {
		return authority, "", path, true
	}
	// url.Parse takes everything after the first colon as the port and
	// rejects it unless it is all digits (so one colon at most remains).
	for i := colon + 1; i < len(authority); i++ {
		if authority[i] < '0' || authority[i] > '9' {
			return "", "", "", false
		}
	}
	return authority[:colon], authority[colon+1:], path, true
}

func parseSlow(s string) (hostname, port, path string, ok bool) {
	u, err := url.Parse("https://" + s)
	if err != nil {
		return "", "", "", false
	}
	hostname, port, err = net.SplitHostPort(u.Host)
	if err != nil {
		hostname, port = u.Host, ""
	}
	return hostname, port, u.Path, true
}

// isDefaultRegistryMatch reports whether image pulls from Docker Hub, by
// kubelet's rule: the part before the first "/" is empty (no), absent
// (yes), docker.io or index.docker.io (yes), or has neither "." nor ":".
func isDefaultRegistryMatch(image string) bool {
	first, _, found := strings.Cut(image, "/")
	switch {
	case first == "":
		return false
	case !found:
		return true
	case first == "docker.io" || first == "index.docker.io":
		return true
	}
	return !strings.ContainsAny(first, ".:")
}

// Union queries keyrings in order and concatenates their results; nil
// keyrings are skipped and a keyring's own found flag is ignored, as in
// kubelet's unionDockerKeyring.
type Union []Keyring

// PodKeyring is a Keyring whose answers depend on the pod that pulls: a
// PluginKeyring with a provider in service-account token mode, or a Union
// holding one. The images package narrows it to the pod (ForPod) before
// each lookup.
type PodKeyring interface {
	Keyring
	ForPod(ctx context.Context, pod PodRef) Keyring
}

var (
	_ PodKeyring = (*PluginKeyring)(nil)
	_ PodKeyring = Union(nil)
)

// ForPod returns u with every PodKeyring in it narrowed to pod.
func (u Union) ForPod(ctx context.Context, pod PodRef) Keyring {
	out := make(Union, len(u))
	for i, k := range u {
		if pk, ok := k.(PodKeyring); ok {
			k = pk.ForPod(ctx, pod)
		}
		out[i] = k
	}
	return out
}

// Lookup implements Keyring.
func (u Union) Lookup(image string) ([]AuthConfig, bool) {
	var out []AuthConfig
	for _, k := range u {
		if k == nil {
			continue
		}
		creds, _ := k.Lookup(image)
		out = append(out, creds...)
	}
	return out, len(out) > 0
}
