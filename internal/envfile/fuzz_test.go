package envfile_test

import (
	"strings"
	"testing"

	"github.com/podstart/podstart/internal/envfile"
)

// kubelet's messages: every error Parse gives starts with one of them.
var messagePrefixes = []string{
	"invalid environment variable format at line ",
	"invalid environment variable format starting at line ",
	`error reading environment variable file "f.env": `,
}

// FuzzParse feeds any file and key to Parse (seeds: kubelet's TestParseEnv
// files, in testdata/fuzz/FuzzParse): it never panics, errors carry
// kubelet's messages, a key found stays found whatever follows it, and a
// quoted value put first is read back as written.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, content, key, value string) {
		got, err := envfile.Parse(strings.NewReader(content), "f.env", key)
		if err != nil {
			known := false
			for _, p := range messagePrefixes {
				known = known || strings.HasPrefix(err.Error(), p)
			}
			if !known || got != "" {
				t.Fatalf("Parse(%q, %q) = %q, %v: not kubelet's message", content, key, got, err)
			}
		}
		if err == nil && got != "" {
			// The line that set the key ends the read.
			if again, err := envfile.Parse(strings.NewReader(content+"\n=broken\n"), "f.env", key); err != nil || again != got {
				t.Fatalf("appending a broken line changed %q to %q, %v", got, again, err)
			}
		}
		if !validName(key) || strings.Contains(value, "'") || len(value) > 1000 {
			return
		}
		first := key + "='" + value + "' # set first\n" + content
		want := strings.ReplaceAll(value, "\r\n", "\n")
		if got, err := envfile.Parse(strings.NewReader(first), "f.env", key); err != nil || got != want {
			t.Fatalf("Parse(%q, %q) = %q, %v; want %q", first, key, got, err, want)
		}
	})
}

// validName: no blank, '=', '#', quote or line break, and not empty; such
// a name can start a line of its own.
func validName(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t=#'\r\n") && s[0] != '#'
}
