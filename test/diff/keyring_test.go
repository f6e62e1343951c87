package diff

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/credentialprovider"
	"k8s.io/kubernetes/pkg/credentialprovider/secrets"

	"github.com/podstart/podstart/credentials"
)

func TestMain(m *testing.M) {
	// kubelet logs every invalid registry key it skips.
	klog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

func oursCreds(creds []credentials.AuthConfig) []cred {
	var out []cred
	for _, c := range creds {
		out = append(out, cred{c.Username, c.Password, c.Email})
	}
	return out
}

func theirsCreds(creds []credentialprovider.TrackedAuthConfig) []cred {
	var out []cred
	for _, c := range creds {
		out = append(out, cred{c.Username, c.Password, c.Email})
	}
	return out
}

// kubeletNodeConfig is kubelet's ReadDockerConfigFile with its search
// path's globals (the root dir, $HOME) given: config.json in rootDir, the
// working directory, $HOME/.docker and /.docker; only if none is usable,
// .dockercfg in rootDir, the working directory, $HOME and /.
func kubeletNodeConfig(rootDir, home string) credentialprovider.DockerConfig {
	cfg, err := credentialprovider.ReadDockerConfigJSONFile([]string{rootDir, "", filepath.Join(home, ".docker"), "/.docker"})
	if err == nil {
		return cfg
	}
	cfg, err = credentialprovider.ReadDockercfgFile([]string{rootDir, "", home, "/"})
	if err == nil {
		return cfg
	}
	return nil
}

type nodeFiles struct {
	root, home string
}

// write puts a random set of docker config files in the root dir and in
// $HOME; entries are tagged with the file's rank in kubelet's search order.
func (f nodeFiles) write(t *testing.T, r *rand.Rand, class configClass, tt *tagTable) {
	t.Helper()
	files := []struct {
		path   string
		config bool // config.json rather than .dockercfg
	}{
		{filepath.Join(f.root, "config.json"), true},
		{filepath.Join(f.home, ".docker", "config.json"), true},
		{filepath.Join(f.root, ".dockercfg"), false},
		{filepath.Join(f.home, ".dockercfg"), false},
	}
	for i, file := range files {
		os.Remove(file.path)
		if r.IntN(2) != 0 {
			continue
		}
		content := randomDockercfg(r, class, tt, i)
		if file.config {
			content = randomConfigJSON(r, class, tt, i)
		}
		if err := os.WriteFile(file.path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func newNodeFiles(t *testing.T) nodeFiles {
	t.Helper()
	dir := t.TempDir()
	f := nodeFiles{root: filepath.Join(dir, "root"), home: filepath.Join(dir, "home")}
	for _, d := range []string{f.root, filepath.Join(f.home, ".docker")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", f.home)
	return f
}

// TestNodeKeyring compares credentials' node keyring (files searched, read
// and parsed, then Lookup) with kubelet's config readers and
// BasicDockerKeyring, on random config files and image names. The options
// are the package defaults, which are kubelet's: no tokens, no helpers.
func TestNodeKeyring(t *testing.T) {
	r := newRand(t)
	files := newNodeFiles(t)
	configs, images := cases(4000), 25
	d := differences{t: t}
	found, several := 0, 0
	for range configs {
		tt := &tagTable{}
		files.write(t, r, agreeing, tt)
		node := credentials.NewNodeKeyring(files.root)
		kubelet := &credentialprovider.BasicDockerKeyring{}
		kubelet.Add(nil, kubeletNodeConfig(files.root, files.home))
		for range images {
			image := randomImage(r, tt)
			got, gotOK := node.Lookup(image)
			want, wantOK := kubelet.Lookup(image)
			if wantOK {
				found++
			}
			if len(want) > 1 {
				several++
			}
			if g, w := oursCreds(got), tt.canonical(theirsCreds(want)); gotOK != wantOK || !slices.Equal(g, w) {
				d.add("node keyring Lookup(%q) = %v %v, kubelet %v %v", image, g, gotOK, w, wantOK)
			}
			for _, c := range got {
				if c.Auth != "" || c.ServerAddress != "" || c.IdentityToken != "" || c.RegistryToken != "" {
					d.add("node keyring Lookup(%q) returned fields kubelet never sets: %#v", image, c)
				}
			}
		}
	}
	d.report(configs*images, "node keyring lookups")
	t.Logf("%d lookups: %d found credentials, %d more than one", configs*images, found, several)
}

func randomSecrets(r *rand.Rand, class configClass, tt *tagTable) []corev1.Secret {
	types := []corev1.SecretType{corev1.SecretTypeDockerConfigJson, corev1.SecretTypeDockercfg, corev1.SecretTypeOpaque, ""}
	var list []corev1.Secret
	for i := range r.IntN(4) {
		s := corev1.Secret{Type: pick(r, types), Data: map[string][]byte{}}
		s.Name, s.Namespace, s.UID = "pull", "ns", "uid"
		switch r.IntN(6) {
		case 0: // each type's content under the other's key
			s.Data[corev1.DockerConfigJsonKey] = []byte(randomDockercfg(r, class, tt, i))
			s.Data[corev1.DockerConfigKey] = []byte(randomConfigJSON(r, class, tt, i))
		case 1:
			s.Data[corev1.DockerConfigJsonKey] = nil
		case 2:
			s.Data["other"] = []byte(randomConfigJSON(r, class, tt, i))
		default:
			s.Data[corev1.DockerConfigJsonKey] = []byte(randomConfigJSON(r, class, tt, i))
			s.Data[corev1.DockerConfigKey] = []byte(randomDockercfg(r, class, tt, i))
		}
		list = append(list, s)
	}
	return list
}

// secretKeyrings builds both sides' pull-secret keyrings, each over an
// equal node keyring half of the time.
func secretKeyrings(r *rand.Rand, class configClass, tt *tagTable) (list []corev1.Secret,
	ours credentials.Keyring, ourErr error, theirs credentialprovider.DockerKeyring, theirErr error) {
	list = randomSecrets(r, class, tt)
	var ourNode credentials.Keyring
	var theirNode credentialprovider.DockerKeyring
	if r.IntN(2) == 0 {
		data := []byte(randomAuths(r, agreeing, tt, 100))
		if cfg, err := credentials.ParseDockercfg(data); err == nil {
			k := &credentials.BasicKeyring{}
			k.Add(cfg)
			ourNode = k
		}
		if cfg, err := credentialprovider.ReadDockerConfigFileFromBytes(data); err == nil {
			k := &credentialprovider.BasicDockerKeyring{}
			k.Add(nil, cfg)
			theirNode = k
		}
	}
	ours, ourErr = credentials.MakeKeyring(list, ourNode)
	theirs, theirErr = secrets.MakeDockerKeyring(list, theirNode)
	return
}

// compareSecretKeyrings reports the first difference between the two
// sides' keyrings, or "", and counts kubelet's lookups that found
// credentials in *found.
func compareSecretKeyrings(r *rand.Rand, tt *tagTable, ours credentials.Keyring, ourErr error, theirs credentialprovider.DockerKeyring, theirErr error, images int, found *int) string {
	if (ourErr != nil) != (theirErr != nil) {
		return fmt.Sprintf("MakeKeyring error %v, kubelet's %v", ourErr, theirErr)
	}
	if ourErr != nil {
		return ""
	}
	for range images {
		image := randomImage(r, tt)
		var got, want []cred
		var gotOK, wantOK bool
		if ours != nil {
			var c []credentials.AuthConfig
			c, gotOK = ours.Lookup(image)
			got = oursCreds(c)
		}
		if theirs != nil {
			var c []credentialprovider.TrackedAuthConfig
			c, wantOK = theirs.Lookup(image)
			want = tt.canonical(theirsCreds(c))
		}
		if wantOK {
			*found++
		}
		if gotOK != wantOK || !slices.Equal(got, want) {
			return fmt.Sprintf("Lookup(%q) = %v %v, kubelet %v %v", image, got, gotOK, want, wantOK)
		}
	}
	return ""
}

// TestPullSecretKeyring compares credentials.MakeKeyring with kubelet's
// MakeDockerKeyring on random pull secrets (types, data keys, contents)
// over an equal node keyring or none, for the secrets the two should agree
// on today: those without wrongly typed fields that kubelet ignores (see
// TestPullSecretKeyringIgnoredFields).
func TestPullSecretKeyring(t *testing.T) {
	r := newRand(t)
	n, images := cases(10000), 10
	d := differences{t: t}
	found, refused := 0, 0
	for range n {
		tt := &tagTable{}
		list, ours, ourErr, theirs, theirErr := secretKeyrings(r, agreeing, tt)
		if theirErr != nil {
			refused++
		}
		if diff := compareSecretKeyrings(r, tt, ours, ourErr, theirs, theirErr, images, &found); diff != "" {
			d.add("%d secrets %s: %s", len(list), describeSecrets(list), diff)
		}
	}
	d.report(n, "sets of pull secrets")
	t.Logf("%d sets of pull secrets: %d refused by kubelet; %d of their lookups found credentials", n, refused, found)
}

// TestPullSecretKeyringIgnoredFields compares secrets whose fields kubelet
// does not read (identitytoken, registrytoken, credsStore, credHelpers)
// have any JSON type: kubelet decodes only username, password, email and
// auth (and auths, HttpHeaders), so such a field must not fail a secret
// (issue 15: it once failed 2,146 of 20,000).
func TestPullSecretKeyringIgnoredFields(t *testing.T) {
	r := newRand(t)
	n := cases(10000)
	d := differences{t: t}
	for range n {
		tt := &tagTable{}
		list, ours, ourErr, theirs, theirErr := secretKeyrings(r, ignoredFieldsWrongType, tt)
		var found int
		if diff := compareSecretKeyrings(r, tt, ours, ourErr, theirs, theirErr, 10, &found); diff != "" {
			d.add("%d secrets %s: %s", len(list), describeSecrets(list), diff)
		}
	}
	d.report(n, "sets of pull secrets with wrongly typed ignored fields")
}

func describeSecrets(list []corev1.Secret) string {
	var parts []string
	for _, s := range list {
		var keys []string
		for k, v := range s.Data {
			keys = append(keys, fmt.Sprintf("%s=%q", k, v))
		}
		sort.Strings(keys)
		parts = append(parts, fmt.Sprintf("{type %q %s}", s.Type, strings.Join(keys, " ")))
	}
	return strings.Join(parts, ", ")
}
