package credentials

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestParseEntry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, json     string
		user, pass     string
		email, idToken string
		wantErr        string
	}{
		{name: "plain fields", json: `{"username":"u","password":"p","email":"e"}`, user: "u", pass: "p", email: "e"},
		{name: "case-insensitive keys", json: `{"Username":"u","PASSWORD":"p"}`, user: "u", pass: "p"},
		{name: "auth overrides username and password", json: `{"username":"x","password":"y","auth":"Zm9vOmJhcg=="}`, user: "foo", pass: "bar"},
		{name: "unpadded auth", json: `{"auth":"Zm9vOmJhcg"}`, user: "foo", pass: "bar"},
		{name: "password keeps trailing newline", json: `{"auth":"Zm9vOmJhcgo="}`, user: "foo", pass: "bar\n"},
		{name: "password keeps further colons", json: `{"auth":"dTpwOnE6cg=="}`, user: "u", pass: "p:q:r"},
		{name: "CR and LF skipped in base64", json: `{"auth":"Zm9vOm\r\nJhcg=="}`, user: "foo", pass: "bar"},
		{name: "empty auth ignored", json: `{"username":"u","auth":""}`, user: "u"},
		{name: "tokens read", json: `{"identitytoken":"tok","registrytoken":"rt"}`, idToken: "tok"},
		{name: "unknown fields ignored", json: `{"username":"u","serveraddress":"s","other":1}`, user: "u"},
		{name: "auth without colon", json: `{"auth":"Zm9vYmFy"}`, wantErr: "must be formatted as base64(username:password)"},
		{name: "bad base64", json: `{"auth":"!!!!"}`, wantErr: "illegal base64 data at input byte 0"},
		{name: "trailing space after padding", json: `{"auth":"Zm9vOmJhcg== "}`, wantErr: "illegal base64"},
		{name: "wrong type", json: `{"email":false}`, wantErr: "must not be a JSON bool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseDockercfg([]byte(`{"reg.io":` + tt.json + `}`))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrMalformedConfig) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			e := cfg["reg.io"]
			if e.Username != tt.user || e.Password != tt.pass || e.Email != tt.email || e.IdentityToken != tt.idToken {
				t.Fatalf("entry = %q %q %q %q", e.Username, e.Password, e.Email, e.IdentityToken)
			}
		})
	}
}

func TestParseConfigJSON(t *testing.T) {
	t.Parallel()
	cf, err := ParseConfigJSON([]byte(`{"auths":{"reg.io":{"auth":"dTpw"}},"credsStore":"desktop","credHelpers":{"gcr.io":"gcloud"},"HttpHeaders":{"X":"y"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if cf.Auths["reg.io"].Username != "u" || cf.CredsStore != "desktop" || cf.CredHelpers["gcr.io"] != "gcloud" {
		t.Fatalf("parsed %+v", cf)
	}
	// Valid JSON without auths still counts as a config, with nothing in it.
	if cf, err := ParseConfigJSON([]byte(`{"credsStore":"x"}`)); err != nil || len(cf.Auths) != 0 {
		t.Fatalf("no auths: %v, %v", cf, err)
	}
	for _, bad := range []string{`[]`, `{"auths":"x"}`, `{"auths":{"r":{"password":"hunter2"}}`, `{`} {
		_, err := ParseConfigJSON([]byte(bad))
		if !errors.Is(err, ErrMalformedConfig) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseConfigJSON(%s) = %v", bad, err)
		}
	}
	// A syntax error inside a password must not be quoted back.
	_, err = ParseConfigJSON([]byte(`{"auths":{"r":{"password":"s3cr` + "\x01" + `t"}}}`))
	if err == nil || strings.Contains(err.Error(), "s3cr") || strings.Contains(err.Error(), "\x01") {
		t.Fatalf("error quotes input: %v", err)
	}
	if _, err := ParseConfigJSON(make([]byte, MaxConfigSize+1)); !errors.Is(err, ErrConfigTooLarge) {
		t.Fatalf("oversize: %v", err)
	}
}

func TestEncodeEntry(t *testing.T) {
	t.Parallel()
	b, err := DockerConfigEntry{Username: "foo", Password: "bar", Email: "foo@example.com"}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"username":"foo","password":"bar","email":"foo@example.com","auth":"Zm9vOmJhcg=="}`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	jsonA = `{"auths":{"a.io":{"username":"a"}}}`
	jsonB = `{"auths":{"b.io":{"username":"b"}}}`
	cfgC  = `{"c.io":{"username":"c"}}`
)

func TestSearchOrder(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string // "root/config.json", "cwd/...", "home/.docker/config.json", "home/.dockercfg"
		wantFile string            // relative to the temp dir
		wantKey  string
	}{
		{"root dir first", map[string]string{"root/config.json": jsonA, "cwd/config.json": jsonB}, "root/config.json", "a.io"},
		{"then working directory", map[string]string{"cwd/config.json": jsonA, "home/.docker/config.json": jsonB}, "cwd/config.json", "a.io"},
		{"then HOME/.docker", map[string]string{"home/.docker/config.json": jsonB, "root/.dockercfg": cfgC}, "home/.docker/config.json", "b.io"},
		{"first that parses wins", map[string]string{"root/config.json": "{broken", "cwd/config.json": jsonB}, "cwd/config.json", "b.io"},
		{"config.json without auths still stops the search", map[string]string{"root/config.json": `{"credsStore":"x"}`, "root/.dockercfg": cfgC}, "root/config.json", ""},
		{".dockercfg only without config.json", map[string]string{"root/.dockercfg": cfgC}, "root/.dockercfg", "c.io"},
		{".dockercfg in HOME, not HOME/.docker", map[string]string{"home/.dockercfg": cfgC, "home/.docker/.dockercfg": `{"x.io":{}}`}, "home/.dockercfg", "c.io"},
		{"broken config.json falls through to .dockercfg", map[string]string{"root/config.json": "[]", "cwd/.dockercfg": cfgC}, "cwd/.dockercfg", "c.io"},
		{"a directory named config.json is skipped", map[string]string{"root/config.json/x": "", "cwd/config.json": jsonA}, "cwd/config.json", "a.io"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for rel, content := range tt.files {
				write(t, filepath.Join(dir, filepath.Dir(rel)), filepath.Base(rel), content)
			}
			for _, d := range []string{"root", "cwd", "home"} {
				os.MkdirAll(filepath.Join(dir, d), 0o755)
			}
			t.Chdir(filepath.Join(dir, "cwd"))
			t.Setenv("HOME", filepath.Join(dir, "home"))
			cfg, path, err := ReadDockerConfigFile(filepath.Join(dir, "root"))
			if err != nil {
				t.Fatal(err)
			}
			if path != filepath.Join(dir, tt.wantFile) {
				t.Fatalf("read %s, want %s", path, tt.wantFile)
			}
			if tt.wantKey != "" {
				if _, ok := cfg[tt.wantKey]; !ok || len(cfg) != 1 {
					t.Fatalf("config = %v", cfg)
				}
				if src := cfg[tt.wantKey].Source; src.Kind != SourceNodeFile || src.Path != path {
					t.Fatalf("source = %v", src)
				}
			} else if len(cfg) != 0 {
				t.Fatalf("config = %v", cfg)
			}
		})
	}
}

func TestSearchNothingFound(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	t.Setenv("HOME", home)
	t.Chdir(dir)
	write(t, dir, "config.json", "{oops")
	_, _, err := ReadDockerConfigJSONFile(DockerConfigJSONPaths("/nonexistent-root"))
	want := fmt.Sprintf("couldn't find valid config.json after checking in [/nonexistent-root  %s/.docker /.docker]", home)
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	var serr *SearchError
	if !errors.As(err, &serr) || !errors.Is(err, ErrNoDockerConfig) || len(serr.Skipped) != 1 || serr.Skipped[0].Path != filepath.Join(dir, "config.json") {
		t.Fatalf("SearchError = %+v", serr)
	}
	_, _, err = ReadDockercfgFile(DockercfgPaths("/nonexistent-root"))
	if want := fmt.Sprintf("couldn't find valid .dockercfg after checking in [/nonexistent-root  %s /]", home); err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

func TestOversizeFileSkipped(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	// A sparse 100 MB file: refused by its size, never read.
	if err := f.Truncate(100 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, _, err = ReadDockerConfigJSONFile([]string{dir})
	var serr *SearchError
	if !errors.As(err, &serr) || len(serr.Skipped) != 1 || !errors.Is(serr.Skipped[0].Err, ErrConfigTooLarge) {
		t.Fatalf("err = %v (%+v)", err, serr)
	}
}

func TestSearchPaths(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	if got, want := DockerConfigJSONPaths("/var/lib/kubelet"), []string{"/var/lib/kubelet", "", "/home/u/.docker", "/.docker"}; !reflect.DeepEqual(got, want) {
		t.Errorf("config.json paths = %q", got)
	}
	if got, want := DockercfgPaths("/r"), []string{"/r", "", "/home/u", "/"}; !reflect.DeepEqual(got, want) {
		t.Errorf(".dockercfg paths = %q", got)
	}
}

// A config or pull secret that does not decode gets kubelet's text, with
// where it failed but never the offending character (encoding/json quotes
// it, and it may be part of a password).
func TestMalformedConfigText(t *testing.T) {
	for _, data := range []string{`{"auths":{"r.io":{"password":s3cret}}}`, `{"auths":{"r.io":{"auth":"@@@"}}}`, `{"auths":`} {
		_, err := ParseConfigJSON([]byte(data))
		if !errors.Is(err, ErrMalformedConfig) || !strings.HasPrefix(err.Error(), "malformed docker config: error occurred while trying to unmarshal json") {
			t.Fatalf("%s: %v", data, err)
		}
		if strings.Contains(err.Error(), "'s'") || strings.Contains(err.Error(), "@@@") {
			t.Fatalf("%s: error quotes the input: %v", data, err)
		}
	}
	s := corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"r.io":{"password":s3cret}}}`)}}
	s.Namespace, s.Name = "ns", "pull"
	_, err := MakeKeyring([]corev1.Secret{s}, nil)
	if want := "malformed image pull secret ns/pull: malformed docker config: error occurred while trying to unmarshal json (invalid JSON at byte 30)"; err == nil || err.Error() != want {
		t.Fatalf("secret: %v\nwant %s", err, want)
	}
}
