package credentials

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	clicreds "github.com/docker/cli/cli/config/credentials"
	helperclient "github.com/docker/docker-credential-helpers/client"
	"golang.org/x/sync/singleflight"
)

// NodeKeyring is kubelet's node keyring: the docker config found by
// ReadDockerConfigFile for a root dir, read again when its cache lifetime
// (5 minutes by default) has passed or, beyond kubelet, within a second of
// any candidate file changing (mtime, size, inode, appearing or going). A missing or unusable file gives an
// empty keyring, as in kubelet; WithErrorHandler and Source tell why.
type NodeKeyring struct {
	rootDir string
	o       options

	mu      sync.Mutex
	expiry  time.Time
	checked time.Time // when the files' identity was last compared
	ident   string    // identity of every candidate file at the last read
	ring    *BasicKeyring
	file    *ConfigFile
	path    string
	readErr error
	helped  map[string]helperResult // registry host → helper answer
	group   singleflight.Group      // helper runs, by registry host
}

type helperResult struct {
	cred *AuthConfig
}

// NewNodeKeyring returns the node keyring for rootDir (DefaultRootDir when
// empty). Nothing is read until the first Lookup.
func NewNodeKeyring(rootDir string, opts ...Option) *NodeKeyring {
	if rootDir == "" {
		rootDir = DefaultRootDir
	}
	return &NodeKeyring{rootDir: rootDir, o: newOptions(opts)}
}

// Lookup implements Keyring. A credential helper runs outside the
// keyring's lock, bounded by its timeout; concurrent lookups of one
// registry share one run.
func (n *NodeKeyring) Lookup(image string) ([]AuthConfig, bool) {
	n.mu.Lock()
	ring, file := n.refresh()
	var helped *AuthConfig
	var ask func() *AuthConfig
	if n.o.helpers && file != nil {
		helped, ask = n.helperCredential(file, image)
	}
	n.mu.Unlock()
	if ask != nil {
		helped = ask()
	}
	creds, _ := ring.Lookup(image)
	if helped != nil {
		// Docker's precedence: a helper's answer first; file entries that
		// hold nothing (the placeholders "docker login" writes when a
		// store is used) are dropped.
		out := []AuthConfig{*helped}
		for _, c := range creds {
			if c.Username != "" || c.Password != "" || c.IdentityToken != "" || c.RegistryToken != "" {
				out = append(out, c)
			}
		}
		creds = out
	}
	return creds, len(creds) > 0
}

// Source reports the file the cached keyring was read from ("" if none)
// and why no file was usable, if so. It does not read anything.
func (n *NodeKeyring) Source() (path string, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.path, n.readErr
}

// Invalidate drops the cache; the next Lookup reads the files again.
func (n *NodeKeyring) Invalidate() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.expiry = time.Time{}
}

// identityCheckInterval bounds how often Lookup compares the candidate
// files' identity with the cached read's.
const identityCheckInterval = time.Second

// refresh re-reads the config when the cache has expired, or, beyond
// kubelet, when any candidate file changed identity (appeared, went away,
// or changed mtime, size or inode: an edited or replaced config.json), at
// most one comparison a second. Callers hold mu.
func (n *NodeKeyring) refresh() (*BasicKeyring, *ConfigFile) {
	now := n.o.clock.Now()
	if n.ring != nil && now.Before(n.expiry) {
		if now.Sub(n.checked) < identityCheckInterval {
			return n.ring, n.file
		}
		n.checked = now
		if nodeFilesIdentity(n.rootDir) == n.ident {
			return n.ring, n.file
		}
	}
	n.ident, n.checked = nodeFilesIdentity(n.rootDir), now
	cf, path, err := readNodeConfig(n.rootDir)
	n.ring = &BasicKeyring{tokens: n.o.tokens}
	n.file, n.path, n.readErr = cf, path, err
	n.helped = map[string]helperResult{}
	if err != nil {
		n.o.onError("node docker config", err)
	} else {
		n.ring.Add(cf.Auths)
	}
	n.expiry = now.Add(n.o.lifetime)
	return n.ring, n.file
}

// dockerHubServer is the server address docker uses for Docker Hub.
const dockerHubServer = "https://index.docker.io/v1/"

// registryHost returns the registry an image repository pulls from and the
// server address a credential helper expects for it.
func registryHost(image string) (host, server string) {
	first, _, found := strings.Cut(image, "/")
	if !found || !strings.ContainsAny(first, ".:") && first != "localhost" || first == "docker.io" || first == "index.docker.io" || first == "registry-1.docker.io" {
		return "docker.io", dockerHubServer
	}
	return first, first
}

// helperCredential returns the cached helper answer for the image's
// registry, or a function that asks the helper (once per cache lifetime,
// shared by concurrent callers) and is to be called without mu. Callers
// hold mu.
func (n *NodeKeyring) helperCredential(cf *ConfigFile, image string) (*AuthConfig, func() *AuthConfig) {
	host, server := registryHost(image)
	if r, ok := n.helped[host]; ok {
		return r.cred, nil
	}
	helper := cf.CredsStore
	for key, h := range cf.CredHelpers {
		if k := clicreds.ConvertToHostname(key); k == host || host == "docker.io" && (key == dockerHubServer || k == "index.docker.io") {
			helper = h
		}
	}
	if helper == "" {
		n.helped[host] = helperResult{}
		return nil, nil
	}
	helped := n.helped // this cache generation
	return nil, func() *AuthConfig {
		v, _, _ := n.group.Do(host, func() (any, error) {
			n.mu.Lock()
			r, ok := helped[host]
			n.mu.Unlock()
			if ok {
				return r.cred, nil
			}
			cred, err := runHelper(helper, server, n.o.helperTimeout)
			if err != nil {
				n.o.onError("credential helper "+helper, err)
			}
			n.mu.Lock()
			helped[host] = helperResult{cred: cred}
			n.mu.Unlock()
			return cred, nil
		})
		return v.(*AuthConfig)
	}
}

// runHelper speaks docker's credential helper protocol through
// docker-credential-helpers' client, with a program bounded by timeout
// (docker/cli's native store has no way to stop a hung helper).
func runHelper(helper, server string, timeout time.Duration) (*AuthConfig, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	name := "docker-credential-" + helper
	got, err := helperclient.Get(func(args ...string) helperclient.Program {
		return &program{cmd: exec.CommandContext(ctx, name, args...)}
	}, server)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s get %s: timed out after %s", name, server, timeout)
		}
		if strings.Contains(err.Error(), "credentials not found") {
			return nil, nil
		}
		// The helper's output is its message: pass only a redacted summary.
		return nil, fmt.Errorf("%s get %s: %s", name, server, summarize([]byte(err.Error())))
	}
	a := &AuthConfig{Username: got.Username, Password: got.Secret, ServerAddress: server, Source: Source{Kind: SourceHelper, Name: helper}}
	if got.Username == "<token>" {
		// Docker's convention: the secret is an identity token.
		a.Username, a.Password, a.IdentityToken = "", "", got.Secret
	}
	return a, nil
}

type program struct {
	cmd *exec.Cmd
}

func (p *program) Input(in io.Reader) { p.cmd.Stdin = in }

func (p *program) Output() ([]byte, error) {
	var stderr bytes.Buffer
	p.cmd.Stderr = &stderr
	out, err := p.cmd.Output()
	if err != nil && len(out) == 0 {
		// The helper client reads the message from the output.
		out = bytes.TrimSpace(stderr.Bytes())
	}
	return out, err
}

// nodeFilesIdentity describes every file readNodeConfig may read: path,
// then inode, size and mtime, or "-" for a missing one.
func nodeFilesIdentity(rootDir string) string {
	var b strings.Builder
	add := func(dirs []string, name string) {
		for _, d := range dirs {
			p := filepath.Join(d, name)
			b.WriteString(p)
			if fi, err := os.Stat(p); err == nil {
				fmt.Fprintf(&b, " %d %d %d\n", inode(fi), fi.Size(), fi.ModTime().UnixNano())
			} else {
				b.WriteString(" -\n")
			}
		}
	}
	add(DockerConfigJSONPaths(rootDir), "config.json")
	add(DockercfgPaths(rootDir), ".dockercfg")
	return b.String()
}
