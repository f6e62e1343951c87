package envfile_test

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/podstart/podstart/internal/envfile"
)

// shellValue is what bash in POSIX mode assigns to key when it sources
// the file, as kubelet's test checks its parser against.
func shellValue(t *testing.T, file, key string) string {
	t.Helper()
	out, err := exec.Command("bash", "--posix", "-c", `set -a && . "$1" && printf '%s' "${`+key+`}"`, "bash", file).CombinedOutput()
	if err != nil {
		t.Fatalf("bash could not source %s: %v: %s", file, err, out)
	}
	return string(out)
}

// kubelet's TestParseEnv, through a file in a directory, as fileKeyRef
// reads it: the value, or an error containing kubelet's words; a value is
// also what a POSIX shell makes of the file.
func TestKubeletParseEnv(t *testing.T) {
	dir := t.TempDir()
	for i, tt := range kubeletParseEnvCases {
		t.Run(tt.name, func(t *testing.T) {
			name := filepath.Join("envs", strings.Repeat("x", i%3)+"test.env")
			path := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tt.envContent), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := envfile.LookupInRoot(dir, name, path, tt.key)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), tt.errContains) {
					t.Fatalf("error %v, want one containing %q", err, tt.errContains)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.wantValue {
				t.Fatalf("got %q, want %q", got, tt.wantValue)
			}
			if sh := shellValue(t, path, tt.key); sh != got {
				t.Fatalf("parser %q, shell %q", got, sh)
			}
		})
	}
}

// Exact messages (kubelet logs them; the container sees only "couldn't
// parse env file"), line numbers counted as kubelet counts them.
func TestParseMessages(t *testing.T) {
	tests := []struct {
		content, key, want string
	}{
		{"A='1'\nB\n", "B", "invalid environment variable format at line 2: missing '='"},
		{"\n# c\n ='1'\n", "A", "invalid environment variable format at line 3: empty variable name"},
		{"A\t='1'\n", "A", "invalid environment variable format at line 1: whitespace before '=' is not allowed"},
		{"A=1\n", "A", "invalid environment variable format at line 1: value must be enclosed in single quotes"},
		{"A=\n", "A", "invalid environment variable format at line 1: value must be enclosed in single quotes"},
		{"A='1\n2\n3' x\n", "A", "invalid environment variable format at line 3: unexpected content after closing quote"},
		{"X='1'\nA='1\n2\n", "A", "invalid environment variable format starting at line 2: unclosed single quote"},
		{"A='" + strings.Repeat("v", bufio.MaxScanTokenSize) + "'\n", "A", `error reading environment variable file "f.env": bufio.Scanner: token too long`},
	}
	for _, tt := range tests {
		_, err := envfile.Parse(strings.NewReader(tt.content), "f.env", tt.key)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q, %q): error %v, want %q", tt.content, tt.key, err, tt.want)
		}
	}
}

// The rules kubelet's table states less directly.
func TestParseRules(t *testing.T) {
	tests := []struct {
		name, content, key, want string
	}{
		{"first assignment wins, later lines unread", "A='1'\nA='2'\nbroken line\n", "A", "1"},
		{"blank after = assigns empty, rest of line unchecked", "A= 'x' garbage\nB='2'\n", "A", ""},
		{"blank after = on another key skips its line", "A=\t'x\nB='2'\n", "B", "2"},
		{"CRLF line ends dropped", "A='1'\r\nB='2'\r\n", "B", "2"},
		{"CR inside a multi-line value dropped at line ends", "A='1\r\n2'\r\n", "A", "1\n2"},
		{"comment after closing quote", "A='1'\t# note\n", "A", "1"},
		{"no final newline", "A='1'", "A", "1"},
		{"key absent", "A='1'\n", "B", ""},
		{"longest line that fits", "A='" + strings.Repeat("v", bufio.MaxScanTokenSize-5) + "'\n", "A", strings.Repeat("v", bufio.MaxScanTokenSize-5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := envfile.Parse(strings.NewReader(tt.content), "f.env", tt.key)
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// The file is opened inside its volume: a link out of it resolves inside
// it (as kubelet's securejoin does), and only a regular file is read (a
// FIFO would block kubelet for ever).
func TestLookupInRoot(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.env"), []byte("A='outside'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "secret.env"), []byte("A='inside'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.env"), filepath.Join(root, "abs-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../../../"+filepath.Base(outside)+"/secret.env", filepath.Join(root, "rel-link")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"abs-link", "rel-link", "../" + filepath.Base(outside) + "/secret.env"} {
		got, err := envfile.LookupInRoot(root, name, "p", "A")
		if got == "outside" {
			t.Fatalf("%s: read a file outside the root", name)
		}
		if err == nil && got != "" {
			t.Fatalf("%s: got %q", name, got)
		}
	}
	if got, err := envfile.LookupInRoot(root, "secret.env", "p", "A"); err != nil || got != "inside" {
		t.Fatalf("got %q, %v", got, err)
	}

	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fifo", "dir"} {
		_, err := envfile.LookupInRoot(root, name, "/v/"+name, "A")
		if !errors.Is(err, envfile.ErrNotRegular) || !strings.HasPrefix(err.Error(), `failed to open environment variable file "/v/`+name+`"`) {
			t.Errorf("%s: %v, want ErrNotRegular with kubelet's open message", name, err)
		}
	}
	_, err := envfile.LookupInRoot(root, "missing.env", "/v/missing.env", "A")
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), `failed to open environment variable file "/v/missing.env": `) {
		t.Errorf("missing: %v", err)
	}
}

func BenchmarkParse(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("# generated\n")
	for i := range 50 {
		sb.WriteString("KEY_" + strings.Repeat("X", i%7) + string(rune('A'+i%26)) + "='some value here'\n")
	}
	sb.WriteString("WANTED='multi\nline\nvalue'\n")
	content := sb.String()
	b.ReportAllocs()
	for b.Loop() {
		if v, err := envfile.Parse(strings.NewReader(content), "f", "WANTED"); err != nil || v != "multi\nline\nvalue" {
			b.Fatal(v, err)
		}
	}
}
