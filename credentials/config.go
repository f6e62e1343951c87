package credentials

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// File names kubelet reads, and the data keys and types of pull secrets.
const (
	ConfigJSONFileName = "config.json"
	DockercfgFileName  = ".dockercfg"
	// DefaultRootDir is kubelet's default --root-dir, searched first.
	DefaultRootDir = "/var/lib/kubelet"
	// MaxConfigSize bounds a config file or secret. Docker configs are a few
	// KiB; a larger one is refused rather than read into memory.
	MaxConfigSize = 4 << 20
)

var (
	// ErrNoDockerConfig: no config file in the search path could be used.
	ErrNoDockerConfig = errors.New("no valid docker config found")
	// ErrMalformedConfig: a config file or secret is not a valid docker
	// config. The error text never quotes the input.
	ErrMalformedConfig = errors.New("malformed docker config")
	// ErrConfigTooLarge: a config file or secret is over MaxConfigSize.
	ErrConfigTooLarge = errors.New("docker config too large")
)

// DockerConfig maps a registry key ("registry.example.com",
// "https://index.docker.io/v1/", "*.example.com/team") to its entry, as in
// .dockercfg and the "auths" object of config.json.
type DockerConfig map[string]DockerConfigEntry

// DockerConfigEntry is one registry's credentials. A non-empty "auth"
// field, base64 of "username:password", overrides username and password.
type DockerConfigEntry struct {
	Username string
	Password string
	Email    string
	// IdentityToken and RegistryToken are read from "identitytoken" and
	// "registrytoken". Kubelet drops them; they reach a keyring's results
	// only with WithTokens.
	IdentityToken string
	RegistryToken string
	// Source says where the entry came from; it is set by the readers and
	// is never part of the JSON.
	Source Source
}

// String never prints secrets.
func (e DockerConfigEntry) String() string {
	return fmt.Sprintf("DockerConfigEntry{Username:%q, Password:<redacted>, from %s}", e.Username, e.Source)
}

// GoString never prints secrets, even with %#v.
func (e DockerConfigEntry) GoString() string { return e.String() }

type entryJSON struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Email         string `json:"email,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// entryIn is what decoding reads: kubelet's four fields, and the tokens
// raw, since kubelet ignores them and a token of the wrong type must not
// fail an entry kubelet accepts.
type entryIn struct {
	Username      string          `json:"username,omitempty"`
	Password      string          `json:"password,omitempty"`
	Email         string          `json:"email,omitempty"`
	Auth          string          `json:"auth,omitempty"`
	IdentityToken json.RawMessage `json:"identitytoken,omitempty"`
	RegistryToken json.RawMessage `json:"registrytoken,omitempty"`
}

// lenientString is raw's string value, or "" when raw is not a string.
func lenientString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// UnmarshalJSON decodes an entry as kubelet does: field names match
// case-insensitively, unknown fields are ignored, and a non-empty auth
// field replaces username and password. identitytoken and registrytoken
// are kept when they are strings (used only with WithTokens) and ignored
// otherwise, as kubelet ignores them.
func (e *DockerConfigEntry) UnmarshalJSON(data []byte) error {
	var tmp entryIn
	if err := json.Unmarshal(data, &tmp); err != nil {
		return err
	}
	e.Username, e.Password, e.Email = tmp.Username, tmp.Password, tmp.Email
	e.IdentityToken, e.RegistryToken = lenientString(tmp.IdentityToken), lenientString(tmp.RegistryToken)
	if tmp.Auth == "" {
		return nil
	}
	var err error
	e.Username, e.Password, err = decodeAuth(tmp.Auth)
	return err
}

// MarshalJSON encodes username, password, email and auth (padded base64 of
// "username:password"), in that order, as kubelet does; tokens follow when
// set.
func (e DockerConfigEntry) MarshalJSON() ([]byte, error) {
	return json.Marshal(entryJSON{
		Username: e.Username, Password: e.Password, Email: e.Email,
		Auth:          base64.StdEncoding.EncodeToString([]byte(e.Username + ":" + e.Password)),
		IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken,
	})
}

var errAuthField = errors.New("unable to parse auth field, must be formatted as base64(username:password)")

// decodeAuth decodes an auth field: padded base64 when the trimmed value
// ends in "=", unpadded otherwise (CR and LF are skipped), split at the
// first colon.
func decodeAuth(field string) (username, password string, err error) {
	enc := base64.RawStdEncoding
	if strings.HasSuffix(strings.TrimSpace(field), "=") {
		enc = base64.StdEncoding
	}
	decoded, err := enc.DecodeString(field)
	if err != nil {
		return "", "", err
	}
	user, pass, ok := strings.Cut(string(decoded), ":")
	if !ok {
		return "", "", errAuthField
	}
	return user, pass, nil
}

// ConfigFile is what podstart reads from a config.json: kubelet uses only
// Auths; the credential helper fields are used only with WithHelpers.
type ConfigFile struct {
	Auths       DockerConfig      `json:"auths"`
	CredsStore  string            `json:"credsStore,omitempty"`
	CredHelpers map[string]string `json:"credHelpers,omitempty"`
	HTTPHeaders map[string]string `json:"HttpHeaders,omitempty"`
}

// UnmarshalJSON decodes a config.json as kubelet does (auths and
// HttpHeaders); credsStore and credHelpers, used only with WithHelpers,
// are kept when well typed and otherwise ignored, as kubelet ignores them.
func (cf *ConfigFile) UnmarshalJSON(data []byte) error {
	var tmp struct {
		Auths       DockerConfig      `json:"auths"`
		CredsStore  json.RawMessage   `json:"credsStore,omitempty"`
		CredHelpers json.RawMessage   `json:"credHelpers,omitempty"`
		HTTPHeaders map[string]string `json:"HttpHeaders,omitempty"`
	}
	if err := json.Unmarshal(data, &tmp); err != nil {
		return err
	}
	cf.Auths, cf.HTTPHeaders = tmp.Auths, tmp.HTTPHeaders
	cf.CredsStore = lenientString(tmp.CredsStore)
	cf.CredHelpers = nil
	if len(tmp.CredHelpers) > 0 {
		var helpers map[string]string
		if json.Unmarshal(tmp.CredHelpers, &helpers) == nil {
			cf.CredHelpers = helpers
		}
	}
	return nil
}

// ParseConfigJSON parses config.json content. A document without "auths"
// is valid and has no credentials.
func ParseConfigJSON(data []byte) (*ConfigFile, error) {
	if len(data) > MaxConfigSize {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrConfigTooLarge, len(data), MaxConfigSize)
	}
	var cf ConfigFile
	if err := json.Unmarshal(data, &cf); err != nil {
		return nil, malformed(err)
	}
	return &cf, nil
}

// ParseDockercfg parses legacy .dockercfg content: a map of registry key to
// entry.
func ParseDockercfg(data []byte) (DockerConfig, error) {
	if len(data) > MaxConfigSize {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrConfigTooLarge, len(data), MaxConfigSize)
	}
	var cfg DockerConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, malformed(err)
	}
	return cfg, nil
}

// malformed is kubelet's text for a config that does not decode ("error
// occurred while trying to unmarshal json", which hides the parser's
// details), with where it failed in parentheses but never the input:
// encoding/json's syntax errors quote the offending character, which may
// be part of a password (kubelet's pull-secret path returns them as they
// are; podstart does not).
func malformed(err error) error {
	const kubelet = "error occurred while trying to unmarshal json"
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var b64 base64.CorruptInputError
	var detail string
	switch {
	case errors.As(err, &syn):
		detail = fmt.Sprintf("invalid JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		detail = fmt.Sprintf("field %q must not be a JSON %s", typ.Field, typ.Value)
	case errors.As(err, &b64):
		detail = fmt.Sprintf("auth field: illegal base64 data at input byte %d", int64(b64))
	case errors.Is(err, errAuthField):
		detail = err.Error()
	case errors.Is(err, io.ErrUnexpectedEOF):
		detail = "unexpected end of JSON input"
	default:
		return fmt.Errorf("%w: %s", ErrMalformedConfig, kubelet)
	}
	return fmt.Errorf("%w: %s (%s)", ErrMalformedConfig, kubelet, detail)
}

// DockerConfigJSONPaths is kubelet's search path for config.json: rootDir,
// the working directory (""), $HOME/.docker and /.docker.
func DockerConfigJSONPaths(rootDir string) []string {
	return []string{rootDir, "", filepath.Join(homeDir(), ".docker"), "/.docker"}
}

// DockercfgPaths is kubelet's search path for .dockercfg: rootDir, the
// working directory (""), $HOME and /.
func DockercfgPaths(rootDir string) []string {
	return []string{rootDir, "", homeDir(), "/"}
}

func homeDir() string {
	home, _ := os.UserHomeDir()
	return home
}

// Skipped is a candidate file that exists but could not be used.
type Skipped struct {
	Path string
	Err  error
}

// SearchError reports that no file in a search path could be used. Its
// text is kubelet's; Skipped says why each existing file was passed over.
type SearchError struct {
	FileName string
	Dirs     []string
	Skipped  []Skipped
}

// Error gives kubelet's message, naming the directories searched.
func (e *SearchError) Error() string {
	return fmt.Sprintf("couldn't find valid %s after checking in %v", e.FileName, e.Dirs)
}

// Is makes a SearchError match ErrNoDockerConfig.
func (e *SearchError) Is(target error) bool { return target == ErrNoDockerConfig }

// ReadDockerConfigJSONFile returns the auths of the first config.json in
// searchPaths (directories) that parses, and its path.
func ReadDockerConfigJSONFile(searchPaths []string) (DockerConfig, string, error) {
	cf, path, err := readConfigJSON(searchPaths)
	if err != nil {
		return nil, "", err
	}
	return cf.Auths, path, nil
}

func readConfigJSON(searchPaths []string) (*ConfigFile, string, error) {
	serr := &SearchError{FileName: ConfigJSONFileName, Dirs: searchPaths}
	for _, dir := range searchPaths {
		data, path, err := readCandidate(dir, ConfigJSONFileName)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		var cf *ConfigFile
		if err == nil {
			cf, err = ParseConfigJSON(data)
		}
		if err != nil {
			serr.Skipped = append(serr.Skipped, Skipped{Path: path, Err: err})
			continue
		}
		cf.Auths.setSource(Source{Kind: SourceNodeFile, Path: path})
		return cf, path, nil
	}
	return nil, "", serr
}

// ReadDockercfgFile returns the first .dockercfg in searchPaths
// (directories) that parses, and its path.
func ReadDockercfgFile(searchPaths []string) (DockerConfig, string, error) {
	serr := &SearchError{FileName: DockercfgFileName, Dirs: searchPaths}
	for _, dir := range searchPaths {
		data, path, err := readCandidate(dir, DockercfgFileName)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		var cfg DockerConfig
		if err == nil {
			cfg, err = ParseDockercfg(data)
		}
		if err != nil {
			serr.Skipped = append(serr.Skipped, Skipped{Path: path, Err: err})
			continue
		}
		cfg.setSource(Source{Kind: SourceNodeFile, Path: path})
		return cfg, path, nil
	}
	return nil, "", serr
}

// ReadDockerConfigFile applies kubelet's whole order for a root dir
// (DefaultRootDir when empty): config.json in DockerConfigJSONPaths, and
// only if none is usable, .dockercfg in DockercfgPaths. It returns the
// config and the path of the file it came from.
func ReadDockerConfigFile(rootDir string) (DockerConfig, string, error) {
	cf, path, err := readNodeConfig(rootDir)
	if err != nil {
		return nil, "", err
	}
	return cf.Auths, path, nil
}

func readNodeConfig(rootDir string) (*ConfigFile, string, error) {
	if rootDir == "" {
		rootDir = DefaultRootDir
	}
	cf, path, jsonErr := readConfigJSON(DockerConfigJSONPaths(rootDir))
	if jsonErr == nil {
		return cf, path, nil
	}
	cfg, path, err := ReadDockercfgFile(DockercfgPaths(rootDir))
	if err != nil {
		return nil, "", errors.Join(jsonErr, err)
	}
	return &ConfigFile{Auths: cfg}, path, nil
}

// readCandidate reads dir/name, made absolute, refusing anything that is
// not a regular file or is larger than MaxConfigSize. The open does not
// block, so a FIFO is refused rather than waited on.
func readCandidate(dir, name string) ([]byte, string, error) {
	path, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		return nil, filepath.Join(dir, name), err
	}
	f, err := openNonBlocking(path)
	if err != nil {
		return nil, path, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, path, err
	}
	if !info.Mode().IsRegular() {
		return nil, path, fmt.Errorf("%s is not a regular file", path)
	}
	if info.Size() > MaxConfigSize {
		return nil, path, fmt.Errorf("%w: %d bytes, limit %d", ErrConfigTooLarge, info.Size(), MaxConfigSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
	if err != nil {
		return nil, path, err
	}
	return data, path, nil
}

func (c DockerConfig) setSource(s Source) {
	for k, e := range c {
		e.Source = s
		c[k] = e
	}
}
