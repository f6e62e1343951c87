package credentials

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"net/url"

	"golang.org/x/sync/singleflight"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeletconfig "k8s.io/kubelet/config/v1"
	kubeletconfigv1alpha1 "k8s.io/kubelet/config/v1alpha1"
	cpv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Errors of exec credential provider plugins.
var (
	// ErrPluginConfig: a CredentialProviderConfig is invalid.
	ErrPluginConfig = errors.New("invalid credential provider config")
	// ErrPluginFailed: a plugin exited non-zero, timed out or could not run.
	ErrPluginFailed = errors.New("credential provider plugin failed")
	// ErrPluginResponse: a plugin's output is not a valid response.
	ErrPluginResponse = errors.New("invalid credential provider plugin response")
)

const (
	configGroup    = "kubelet.config.k8s.io"
	pluginGroup    = "credentialprovider.kubelet.k8s.io"
	globalCacheKey = "<global>"
)

var pluginAPIVersions = []string{pluginGroup + "/v1", pluginGroup + "/v1alpha1", pluginGroup + "/v1beta1"}

// LoadPluginConfig reads a CredentialProviderConfig (YAML or JSON,
// kubelet.config.k8s.io v1alpha1, v1beta1 or v1) from a file, or from every
// .json, .yaml and .yml file of a directory in lexical order, as kubelet
// v1.37.2 does: each file decoded strictly (ParsePluginConfig's decode
// errors, after the file's path), then the providers merged (a name given
// twice is "duplicate provider name \"x\" found in configuration
// file(s)"), then the whole validated. tokenAttributes (service-account
// token mode, KEP-4412) is validated as kubelet validates it with
// KubeletServiceAccountTokenForCredentialProviders on (the v1.37 default),
// and is an unknown field in a v1alpha1 or v1beta1 document, as in kubelet.
func LoadPluginConfig(path string) (*kubeletconfig.CredentialProviderConfig, error) {
	cfg, _, err := LoadPluginConfigWithHash(path)
	return cfg, err
}

// LoadPluginConfigWithHash is LoadPluginConfig that also returns the
// configuration's hash as kubelet v1.37.2 computes it over the bytes it
// decoded (PluginConfigHash of the files read, in order): the hash label
// kubelet exports in its kubelet_credential_provider_config_info metric,
// so a caller can export the same label. The hash is "" with an error.
func LoadPluginConfigWithHash(path string) (*kubeletconfig.CredentialProviderConfig, string, error) {
	if path == "" {
		return nil, "", fmt.Errorf("%w: credential provider config path is empty", ErrPluginConfig)
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrPluginConfig, err)
	}
	files := []string{path}
	if info.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %v", ErrPluginConfig, err)
		}
		files = files[:0]
		for _, e := range entries {
			ext := filepath.Ext(e.Name())
			// Any non-directory, as kubelet: a ConfigMap volume holds symlinks.
			if !e.IsDir() && (ext == ".json" || ext == ".yaml" || ext == ".yml") {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
		sort.Strings(files)
		if len(files) == 0 {
			return nil, "", fmt.Errorf("%w: no configuration files found in directory %q", ErrPluginConfig, path)
		}
	}
	out := &kubeletconfig.CredentialProviderConfig{}
	contents := make([][]byte, 0, len(files))
	var configs []*kubeletconfig.CredentialProviderConfig
	seen := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %v", ErrPluginConfig, err)
		}
		contents = append(contents, data)
		cfg, err := decodePluginConfig(data)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w: %v", f, ErrPluginConfig, err)
		}
		configs = append(configs, cfg)
	}
	// As kubelet: every file decoded, then merged, then the whole checked.
	for _, cfg := range configs {
		for _, p := range cfg.Providers {
			if seen[p.Name] {
				return nil, "", fmt.Errorf("%w: duplicate provider name %q found in configuration file(s)", ErrPluginConfig, p.Name)
			}
			seen[p.Name] = true
			out.Providers = append(out.Providers, p)
		}
	}
	if err := validatePluginConfig(out); err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrPluginConfig, err)
	}
	return out, PluginConfigHash(contents...), nil
}

// ParsePluginConfig decodes and validates one CredentialProviderConfig
// document, as kubelet v1.37.2's decode (the universal decoder of a strict
// scheme holding kubelet.config.k8s.io v1, v1beta1 and v1alpha1), with its
// error texts: "no kind \"X\" is registered for version \"g/v\"",
// "strict decoding error: unknown field \"a\", duplicate field \"b\""
// (duplicate YAML keys included), "Object 'Kind' is missing",
// "unexpected GroupVersion string: a/b/c", json's type
// errors, then "failed to decode \"X\" (wrong Kind)" for the other kinds
// the scheme knows. Every error matches ErrPluginConfig. Two deliberate
// differences: a missing kind or apiVersion does not quote the document
// (kubelet's "Object 'Kind' is missing in '<document>'" would put the
// plugins' env values in the error), and the "in scheme" suffix kubelet's
// scheme adds to "no kind" is left out. A v1beta1 KubeletConfiguration or
// SerializedNodeConfigSource is refused for its kind without kubelet's
// strict decoding of it first.
func ParsePluginConfig(data []byte) (*kubeletconfig.CredentialProviderConfig, error) {
	cfg, err := decodePluginConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPluginConfig, err)
	}
	if err := validatePluginConfig(cfg); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPluginConfig, err)
	}
	return cfg, nil
}

// configKinds are the kinds kubelet's credential provider config scheme
// registers (k8s.io/kubelet/config's register.go), each with a type to
// decode it strictly into (nil: not decoded, see ParsePluginConfig).
// v1beta1's CredentialProviderConfig, ImagePullIntent and
// ImagePulledRecord have v1alpha1's fields.
var configKinds = map[string]map[string]func() any{
	"v1": {"CredentialProviderConfig": func() any { return &kubeletconfig.CredentialProviderConfig{} }},
	"v1alpha1": {
		"CredentialProviderConfig": func() any { return &kubeletconfigv1alpha1.CredentialProviderConfig{} },
		"ImagePullIntent":          func() any { return &kubeletconfigv1alpha1.ImagePullIntent{} },
		"ImagePulledRecord":        func() any { return &kubeletconfigv1alpha1.ImagePulledRecord{} },
	},
	"v1beta1": {
		"CredentialProviderConfig":   func() any { return &kubeletconfigv1alpha1.CredentialProviderConfig{} },
		"ImagePullIntent":            func() any { return &kubeletconfigv1alpha1.ImagePullIntent{} },
		"ImagePulledRecord":          func() any { return &kubeletconfigv1alpha1.ImagePulledRecord{} },
		"KubeletConfiguration":       nil,
		"SerializedNodeConfigSource": nil,
	},
}

// decodePluginConfig is apimachinery's serializer as kubelet's decode uses
// it: JSON when the document starts with "{", else YAML turned into JSON;
// the kind and apiVersion read; the registered type strictly decoded.
func decodePluginConfig(data []byte) (*kubeletconfig.CredentialProviderConfig, error) {
	isJSON := bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{"))
	jsonData := data
	if !isJSON {
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, err
		}
		jsonData = j
	}
	typeMeta := struct {
		APIVersion string `json:"apiVersion,omitempty"`
		Kind       string `json:"kind,omitempty"`
	}{}
	if err := json.Unmarshal(jsonData, &typeMeta); err != nil {
		return nil, fmt.Errorf("couldn't get version/kind; json parse error: %v", err)
	}
	group, version := "", ""
	switch av := typeMeta.APIVersion; strings.Count(av, "/") {
	case 0:
		version = av
	case 1:
		group, version, _ = strings.Cut(av, "/")
	default:
		return nil, fmt.Errorf("unexpected GroupVersion string: %v", av)
	}
	if typeMeta.Kind == "" {
		return nil, errors.New("Object 'Kind' is missing")
	}
	if version == "" {
		return nil, errors.New("Object 'apiVersion' is missing")
	}
	var newObj func() any
	registered := false
	if group == configGroup {
		newObj, registered = configKinds[version][typeMeta.Kind]
	}
	if !registered {
		gv := version
		if group != "" {
			gv = group + "/" + version
		}
		return nil, fmt.Errorf("no kind %q is registered for version %q", typeMeta.Kind, gv)
	}
	if newObj == nil {
		return nil, fmt.Errorf("failed to decode %q (wrong Kind)", typeMeta.Kind)
	}
	var strictErrs []error
	if !isJSON {
		// Duplicate keys, which YAMLToJSON lets through.
		if _, err := yaml.YAMLToJSONStrict(data); err != nil {
			strictErrs = append(strictErrs, err)
		}
	}
	errs, err := kjson.UnmarshalStrict(jsonData, newObj())
	if err != nil {
		return nil, err
	}
	strictErrs = append(strictErrs, errs...)
	if len(strictErrs) > 0 {
		texts := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			texts[i] = e.Error()
		}
		return nil, fmt.Errorf("strict decoding error: %s", strings.Join(texts, ", "))
	}
	if typeMeta.Kind != "CredentialProviderConfig" {
		return nil, fmt.Errorf("failed to decode %q (wrong Kind)", typeMeta.Kind)
	}
	// v1's fields are v1alpha1's and v1beta1's plus tokenAttributes,
	// which strict decoding refused above in those versions.
	var cfg kubeletconfig.CredentialProviderConfig
	if err := kjson.UnmarshalCaseSensitivePreserveInts(jsonData, &cfg); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// validatePluginConfig checks a config as kubelet's
// validateCredentialProviderConfig does, with its messages, and refuses an
// empty name too.
func validatePluginConfig(cfg *kubeletconfig.CredentialProviderConfig) error {
	var errs field.ErrorList
	if len(cfg.Providers) == 0 {
		errs = append(errs, field.Required(field.NewPath("providers"), "at least 1 item in plugins is required"))
	}
	fp := field.NewPath("providers")
	names := map[string]bool{}
	for _, p := range cfg.Providers {
		name := fp.Child("name")
		if p.Name == "" {
			errs = append(errs, field.Required(name, "name is required"))
		}
		if strings.Contains(p.Name, "/") {
			errs = append(errs, field.Invalid(name, p.Name, "provider name cannot contain '/'"))
		}
		if strings.Contains(p.Name, " ") {
			errs = append(errs, field.Invalid(name, p.Name, "provider name cannot contain spaces"))
		}
		if p.Name == "." {
			errs = append(errs, field.Invalid(name, p.Name, "provider name cannot be '.'"))
		}
		if p.Name == ".." {
			errs = append(errs, field.Invalid(name, p.Name, "provider name cannot be '..'"))
		}
		if names[p.Name] {
			errs = append(errs, field.Duplicate(name, p.Name))
		}
		names[p.Name] = true
		if p.APIVersion == "" {
			errs = append(errs, field.Required(fp.Child("apiVersion"), ""))
		} else if !slices.Contains(pluginAPIVersions, p.APIVersion) {
			errs = append(errs, field.NotSupported(fp.Child("apiVersion"), p.APIVersion, pluginAPIVersions))
		}
		if len(p.MatchImages) == 0 {
			errs = append(errs, field.Required(fp.Child("matchImages"), "at least 1 item in matchImages is required"))
		}
		for _, m := range p.MatchImages {
			if _, _, _, ok := parseSlow(m); !ok {
				_, err := parseURLError(m)
				errs = append(errs, field.Invalid(fp.Child("matchImages"), m, fmt.Sprintf("match image is invalid: %v", err)))
			}
		}
		if p.DefaultCacheDuration == nil {
			errs = append(errs, field.Required(fp.Child("defaultCacheDuration"), ""))
		} else if p.DefaultCacheDuration.Duration < 0 {
			errs = append(errs, field.Invalid(fp.Child("defaultCacheDuration"), p.DefaultCacheDuration.Duration.String(), "must be greater than or equal to 0"))
		}
		if p.TokenAttributes != nil {
			errs = append(errs, validateTokenAttributes(fp.Child("tokenAttributes"), p.APIVersion, p.TokenAttributes)...)
		}
	}
	return errs.ToAggregate()
}

// tokenCacheTypes are the cacheTypes kubelet accepts, sorted.
var tokenCacheTypes = []string{string(kubeletconfig.ServiceAccountServiceAccountTokenCacheType), string(kubeletconfig.TokenServiceAccountTokenCacheType)}

// validateTokenAttributes checks a provider's tokenAttributes as kubelet's
// validateCredentialProviderConfig does with its feature gate
// KubeletServiceAccountTokenForCredentialProviders on (beta and on by
// default since v1.34), in its order and with its messages.
func validateTokenAttributes(fp *field.Path, apiVersion string, t *kubeletconfig.ServiceAccountTokenAttributes) field.ErrorList {
	var errs field.ErrorList
	if t.ServiceAccountTokenAudience == "" {
		errs = append(errs, field.Required(fp.Child("serviceAccountTokenAudience"), ""))
	}
	if t.RequireServiceAccount == nil {
		errs = append(errs, field.Required(fp.Child("requireServiceAccount"), ""))
	}
	if apiVersion != cpv1.SchemeGroupVersion.String() {
		errs = append(errs, field.Forbidden(fp, fmt.Sprintf("tokenAttributes is only supported for %s API version", cpv1.SchemeGroupVersion.String())))
	}
	if t.RequireServiceAccount != nil && !*t.RequireServiceAccount && len(t.RequiredServiceAccountAnnotationKeys) > 0 {
		errs = append(errs, field.Forbidden(fp.Child("requiredServiceAccountAnnotationKeys"), "requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set"))
	}
	errs = append(errs, validateAnnotationKeys(fp.Child("requiredServiceAccountAnnotationKeys"), t.RequiredServiceAccountAnnotationKeys)...)
	errs = append(errs, validateAnnotationKeys(fp.Child("optionalServiceAccountAnnotationKeys"), t.OptionalServiceAccountAnnotationKeys)...)
	var both []string
	for _, k := range t.RequiredServiceAccountAnnotationKeys {
		if slices.Contains(t.OptionalServiceAccountAnnotationKeys, k) && !slices.Contains(both, k) {
			both = append(both, k)
		}
	}
	if len(both) > 0 {
		sort.Strings(both)
		errs = append(errs, field.Invalid(fp, both, "annotation keys cannot be both required and optional"))
	}
	switch {
	case t.CacheType == "":
		errs = append(errs, field.Required(fp.Child("cacheType"), "cacheType is required to be set when tokenAttributes is specified. Supported values are: "+strings.Join(tokenCacheTypes, ", ")))
	case slices.Contains(tokenCacheTypes, string(t.CacheType)):
	default:
		errs = append(errs, field.NotSupported(fp.Child("cacheType"), t.CacheType, tokenCacheTypes))
	}
	return errs
}

// validateAnnotationKeys: each key is an annotation key (a qualified name,
// case aside, as metadata.annotations are validated) and appears once.
func validateAnnotationKeys(fp *field.Path, keys []string) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for _, k := range keys {
		for _, msg := range content.IsLabelKey(strings.ToLower(k)) {
			errs = append(errs, field.Invalid(fp, k, msg))
		}
		if seen[k] {
			errs = append(errs, field.Duplicate(fp, k))
		}
		seen[k] = true
	}
	return errs
}

// PluginKeyring runs kubelet's exec credential provider plugins (KEP-2133):
// for each provider in config order whose matchImages match the image, it
// runs <binDir>/<name> with the request on stdin, caches the answer by its
// cacheKeyType for its cacheDuration, and looks the image up once among
// all providers' answers together, as kubelet's one keyring does (the most
// specific match first, whichever provider gave it). Concurrent lookups of one image
// share one run. Failures give no credentials, as in kubelet; they reach
// WithErrorHandler.
//
// A provider with tokenAttributes runs in service-account token mode
// (KEP-4412): LookupForPod and ForPod give it a token of the pod's service
// account, bound to the pod, and the service account annotations it asks
// for, and cache its answers per service account (cacheType
// ServiceAccount) or per token (cacheType Token). Lookup is a lookup for a
// pod without a service account.
type PluginKeyring struct {
	providers []*pluginProvider
}

type pluginProvider struct {
	cfg   kubeletconfig.CredentialProvider
	path  string
	o     options
	token *tokenMode // nil unless the provider has tokenAttributes

	group    singleflight.Group
	inflight atomic.Int32 // lookups waiting on group, for tests
	mu       sync.Mutex
	cache    map[string]cacheEntry
	purged   time.Time // last sweep of expired entries
}

// cachePurgeInterval is kubelet's: expired entries of keys never looked up
// again (cache key type Image) are swept this often.
const cachePurgeInterval = 15 * time.Minute

type cacheEntry struct {
	cfg     DockerConfig
	expires time.Time
}

// NewPluginKeyring validates cfg as ParsePluginConfig does (a nil config,
// a provider without defaultCacheDuration, a name with '/' or that is '.'
// or '..', a duplicate, an empty or unknown apiVersion, invalid
// tokenAttributes are all ErrPluginConfig) and checks that every
// provider's binary exists in binDir. A provider with tokenAttributes
// needs WithServiceAccounts.
func NewPluginKeyring(cfg *kubeletconfig.CredentialProviderConfig, binDir string, opts ...Option) (*PluginKeyring, error) {
	if cfg == nil {
		return nil, fmt.Errorf("%w: config is nil", ErrPluginConfig)
	}
	if err := validatePluginConfig(cfg); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPluginConfig, err)
	}
	o := newOptions(opts)
	for _, p := range cfg.Providers {
		if p.TokenAttributes != nil && (o.getServiceAccount == nil || o.getToken == nil) {
			return nil, fmt.Errorf("%w: provider %s has tokenAttributes: service account token mode needs the service account and token functions of WithServiceAccounts", ErrPluginConfig, p.Name)
		}
	}
	if info, err := os.Stat(binDir); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("%w: plugin binary directory %s did not exist", ErrPluginConfig, binDir)
	}
	k := &PluginKeyring{}
	for _, p := range cfg.Providers {
		path := filepath.Join(binDir, p.Name)
		if info, err := os.Stat(path); err != nil || info.IsDir() {
			return nil, fmt.Errorf("%w: plugin binary executable %s did not exist", ErrPluginConfig, path)
		}
		k.providers = append(k.providers, &pluginProvider{cfg: p, path: path, o: o, token: newTokenMode(p.TokenAttributes, o), cache: map[string]cacheEntry{}})
	}
	return k, nil
}

// Lookup implements Keyring. It is LookupForPod for a pod without a
// service account: providers in service-account token mode run without a
// token if their requireServiceAccount is false, and not at all otherwise.
func (k *PluginKeyring) Lookup(image string) ([]AuthConfig, bool) {
	return k.LookupForPod(context.Background(), PodRef{}, image)
}

// LookupForPod looks image up for pod, as kubelet's per-pod plugin keyring
// does. A provider in service-account token mode, for a pod with a
// service account, gets the service account (ServiceAccountFunc) and, if
// it has every annotation of requiredServiceAccountAnnotationKeys, a token
// for it (ServiceAccountTokenFunc), with ctx; the plugin's request carries
// the token and the required and present optional annotations. A pod
// without a service account is looked up as by Lookup. The credentials'
// Source names the service account whose token was used.
func (k *PluginKeyring) LookupForPod(ctx context.Context, pod PodRef, image string) ([]AuthConfig, bool) {
	if ctx == nil {
		ctx = context.Background()
	}
	// One keyring for every plugin's answer, looked up once, as kubelet's
	// externalCredentialProviderKeyring: the most specific match first
	// across plugins, and for the same key the plugins in config order.
	var ring BasicKeyring
	for _, p := range k.providers {
		if cfg := p.provide(ctx, pod, image); len(cfg) > 0 {
			ring.Add(cfg)
		}
	}
	return ring.Lookup(image)
}

// ForPod returns a Keyring whose Lookup is LookupForPod(ctx, pod, image),
// as kubelet builds one plugin keyring per pod: it goes where a node
// keyring goes, e.g. MakeKeyring(secrets, Union{node, plugins.ForPod(ctx,
// pod)}). ctx reaches the functions of WithServiceAccounts on every
// lookup, so it should last as long as the pod's pulls.
func (k *PluginKeyring) ForPod(ctx context.Context, pod PodRef) Keyring {
	return &podPluginKeyring{k: k, ctx: ctx, pod: pod}
}

type podPluginKeyring struct {
	k   *PluginKeyring
	ctx context.Context
	pod PodRef
}

func (p *podPluginKeyring) Lookup(image string) ([]AuthConfig, bool) {
	return p.k.LookupForPod(p.ctx, p.pod, image)
}

func (p *pluginProvider) provide(ctx context.Context, pod PodRef, image string) DockerConfig {
	matched := false
	for _, m := range p.cfg.MatchImages {
		matched = matched || urlsMatchStr(m, image)
	}
	if !matched {
		return nil
	}
	var sa *saRequest
	if p.token != nil {
		var err error
		sa, err = p.token.resolve(ctx, pod)
		if errors.Is(err, errSkip) {
			return nil
		}
		if err != nil {
			p.report(pod, fmt.Errorf("image %s: %w", image, err))
			return nil
		}
	}
	var saKey, saFlight string
	if sa != nil {
		saKey, saFlight = sa.cacheKey, sa.flightKey
	}
	registry, _, _ := strings.Cut(image, "/")
	now := p.o.clock.Now()
	p.mu.Lock()
	if p.purged.IsZero() {
		p.purged = now
	} else if now.Sub(p.purged) > cachePurgeInterval {
		for k, e := range p.cache {
			if !now.Before(e.expires) {
				delete(p.cache, k)
			}
		}
		p.purged = now
	}
	for _, base := range []string{image, registry, globalCacheKey} {
		key := cacheKey(base, saKey)
		if e, ok := p.cache[key]; ok {
			if now.Before(e.expires) {
				p.mu.Unlock()
				return e.cfg
			}
			delete(p.cache, key)
		}
	}
	p.mu.Unlock()
	p.inflight.Add(1)
	v, err, _ := p.group.Do(cacheKey(image, saFlight), func() (any, error) { return p.exec(image, registry, sa) })
	p.inflight.Add(-1)
	if err != nil {
		p.report(pod, err)
		return nil
	}
	return v.(DockerConfig)
}

// report hands err to the error handler; in service-account token mode it
// names the pod and service account, as kubelet's log line does.
func (p *pluginProvider) report(pod PodRef, err error) {
	if p.token != nil && pod.ServiceAccountName != "" {
		err = fmt.Errorf("pod %s/%s (UID %s), service account %s/%s: %w", pod.Namespace, pod.Name, pod.UID, pod.Namespace, pod.ServiceAccountName, err)
	}
	p.o.onError("credential provider plugin "+p.cfg.Name, err)
}

func (p *pluginProvider) exec(image, registry string, sa *saRequest) (DockerConfig, error) {
	request := cpv1.CredentialProviderRequest{
		TypeMeta: metaType("CredentialProviderRequest", p.cfg.APIVersion),
		Image:    image,
	}
	var saKey, token string
	source := Source{Kind: SourcePlugin, Name: p.cfg.Name}
	if sa != nil {
		request.ServiceAccountToken, request.ServiceAccountAnnotations = sa.token, sa.annotations
		saKey, token, source.ServiceAccount = sa.cacheKey, sa.token, sa.ref
	}
	req, _ := json.Marshal(request)
	ctx, cancel := context.WithTimeout(context.Background(), p.o.pluginTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.path, p.cfg.Args...)
	cmd.Env = os.Environ()
	for _, e := range p.cfg.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	cmd.Stdin = bytes.NewReader(append(req, '\n'))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Kill the plugin's whole output wait when the deadline passes even if
	// it left children holding the pipes.
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("timed out after %s", p.o.pluginTimeout)
		}
		return nil, fmt.Errorf("%w: error execing credential provider plugin %s for image %s: %v: %s", ErrPluginFailed, p.cfg.Name, image, err, summarize(redactToken(stderr.Bytes(), token)))
	}
	resp, err := p.decode(stdout.Bytes())
	if err != nil {
		return nil, err
	}
	if token != "" && p.token.cacheType != kubeletconfig.TokenServiceAccountTokenCacheType {
		// Only credentials cached per token may be the token itself.
		for _, a := range resp.Auth {
			if a.Password == token {
				return nil, fmt.Errorf("%w: credential provider plugin returned the service account token as the password which is not allowed when service account cache type is not set to 'Token'", ErrPluginResponse)
			}
		}
	}
	cfg := DockerConfig{}
	for key, a := range resp.Auth {
		cfg[key] = DockerConfigEntry{Username: a.Username, Password: a.Password, Source: source}
	}
	var base string
	switch resp.CacheKeyType {
	case cpv1.ImagePluginCacheKeyType:
		base = image
	case cpv1.RegistryPluginCacheKeyType:
		base = registry
	case cpv1.GlobalPluginCacheKeyType:
		base = globalCacheKey
	default:
		return nil, fmt.Errorf("%w from plugin %s: unknown cacheKeyType %q", ErrPluginResponse, p.cfg.Name, resp.CacheKeyType)
	}
	duration := p.cfg.DefaultCacheDuration.Duration
	if resp.CacheDuration != nil {
		duration = resp.CacheDuration.Duration
	}
	if duration > 0 {
		p.mu.Lock()
		p.cache[cacheKey(base, saKey)] = cacheEntry{cfg: cfg, expires: p.o.clock.Now().Add(duration)}
		p.mu.Unlock()
	}
	return cfg, nil
}

// decode checks the response's type before decoding it strictly; decoding
// errors are not wrapped, so a response's contents never reach a log.
func (p *pluginProvider) decode(out []byte) (*cpv1.CredentialProviderResponse, error) {
	var meta struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(out, &meta); err != nil {
		return nil, fmt.Errorf("%w: error decoding credential provider plugin response from stdout", ErrPluginResponse)
	}
	if meta.APIVersion != p.cfg.APIVersion {
		return nil, fmt.Errorf("%w: apiVersion from credential plugin response did not match expected apiVersion:%s, actual apiVersion:%s", ErrPluginResponse, p.cfg.APIVersion, meta.APIVersion)
	}
	if meta.Kind != "CredentialProviderResponse" {
		return nil, fmt.Errorf("%w: kind from credential plugin response was %q, not CredentialProviderResponse", ErrPluginResponse, meta.Kind)
	}
	var resp cpv1.CredentialProviderResponse
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&resp); err != nil {
		return nil, fmt.Errorf("%w: error decoding credential provider plugin response from stdout", ErrPluginResponse)
	}
	return &resp, nil
}

// urlsMatchStr is kubelet's URLsMatchStr, used for matchImages: same port,
// same label count, path prefix, and each label a shell glob.
func urlsMatchStr(glob, target string) bool {
	gh, gp, gpath, ok := parseSlow(glob)
	if !ok {
		return false
	}
	th, tp, tpath, ok := parseSlow(target)
	if !ok || gp != tp || !strings.HasPrefix(tpath, gpath) {
		return false
	}
	gl, tl := strings.Split(gh, "."), strings.Split(th, ".")
	if len(gl) != len(tl) {
		return false
	}
	for i := range gl {
		if ok, err := filepath.Match(gl[i], tl[i]); !ok || err != nil {
			return false
		}
	}
	return true
}

func parseURLError(s string) (bool, error) {
	_, err := url.Parse("https://" + s)
	return err == nil, err
}

func metaType(kind, apiVersion string) metav1.TypeMeta {
	return metav1.TypeMeta{Kind: kind, APIVersion: apiVersion}
}
