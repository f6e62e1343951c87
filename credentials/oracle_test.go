package credentials

import (
	"net"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
)

// oracleKeyring is a straightforward transcription of kubelet's
// BasicDockerKeyring, kept as the reference the indexed keyring must agree
// with: every key re-parsed and matched on every lookup.
type oracleKeyring struct {
	index []string
	creds map[string][]AuthConfig
}

func (o *oracleKeyring) add(cfg DockerConfig) {
	if o.creds == nil {
		o.creds = map[string][]AuthConfig{}
	}
	locs := make([]string, 0, len(cfg))
	for loc := range cfg {
		locs = append(locs, loc)
	}
	sort.Strings(locs)
	for _, loc := range locs {
		value := loc
		if !strings.HasPrefix(value, "https://") && !strings.HasPrefix(value, "http://") {
			value = "https://" + value
		}
		parsed, err := url.Parse(value)
		if err != nil {
			continue
		}
		p := parsed.Path
		if strings.HasPrefix(p, "/v2/") || strings.HasPrefix(p, "/v1/") {
			p = p[3:]
		}
		key := parsed.Host
		if len(p) > 0 && p != "/" {
			key = parsed.Host + p
		}
		e := cfg[loc]
		o.creds[key] = append(o.creds[key], AuthConfig{Username: e.Username, Password: e.Password, Email: e.Email, Source: e.Source})
		o.index = append(o.index, key)
	}
	seen := map[string]bool{}
	uniq := o.index[:0]
	for _, k := range o.index {
		if !seen[k] {
			seen[k] = true
			uniq = append(uniq, k)
		}
	}
	o.index = uniq
	sort.Sort(sort.Reverse(sort.StringSlice(o.index)))
}

func oracleSplit(u *url.URL) ([]string, string) {
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, port = u.Host, ""
	}
	return strings.Split(host, "."), port
}

func oracleMatch(glob, target string) bool {
	g, err := url.Parse("https://" + glob)
	if err != nil {
		return false
	}
	t, err := url.Parse("https://" + target)
	if err != nil {
		return false
	}
	gp, gport := oracleSplit(g)
	tp, tport := oracleSplit(t)
	if gport != tport || len(gp) != len(tp) || !strings.HasPrefix(t.Path, g.Path) {
		return false
	}
	for i := range gp {
		ok, err := filepath.Match(gp[i], tp[i])
		if err != nil || !ok {
			return false
		}
	}
	return true
}

func oracleDefaultRegistry(image string) bool {
	parts := strings.SplitN(image, "/", 2)
	if len(parts[0]) == 0 {
		return false
	}
	if len(parts) == 1 {
		return true
	}
	if parts[0] == "docker.io" || parts[0] == "index.docker.io" {
		return true
	}
	return !strings.ContainsAny(parts[0], ".:")
}

func (o *oracleKeyring) lookup(image string) ([]AuthConfig, bool) {
	var ret []AuthConfig
	for _, k := range o.index {
		if oracleMatch(k, image) {
			ret = append(ret, o.creds[k]...)
		}
	}
	if len(ret) > 0 {
		return ret, true
	}
	if oracleDefaultRegistry(image) {
		if auth, ok := o.creds["index.docker.io"]; ok {
			return auth, true
		}
	}
	return nil, false
}
