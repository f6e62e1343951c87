package credentials

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"
)

// Every type of this package that holds a credential implements
// fmt.Formatter, so that no verb (%v, %+v, %#v, %s, %q, %x, %d...) prints
// a password or a token, even inside another value.

// Format prints a.String() whatever the verb.
func (a AuthConfig) Format(f fmt.State, _ rune) { io.WriteString(f, a.String()) }

// Format prints e.String() whatever the verb.
func (e DockerConfigEntry) Format(f fmt.State, _ rune) { io.WriteString(f, e.String()) }

// Format prints the keys and each entry without secrets, whatever the verb.
func (c DockerConfig) Format(f fmt.State, _ rune) {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("DockerConfig{")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q: %s", k, c[k].String())
	}
	b.WriteString("}")
	io.WriteString(f, b.String())
}

// Format prints the number of registry keys, never credentials.
func (k *BasicKeyring) Format(f fmt.State, _ rune) {
	if k == nil {
		io.WriteString(f, "BasicKeyring(nil)")
		return
	}
	k.mu.Lock()
	n := len(k.records)
	k.mu.Unlock()
	fmt.Fprintf(f, "BasicKeyring{%d keys, credentials redacted}", n)
}

// Format prints the root dir and the file in use, never credentials.
func (n *NodeKeyring) Format(f fmt.State, _ rune) {
	if n == nil {
		io.WriteString(f, "NodeKeyring(nil)")
		return
	}
	path, _ := n.Source()
	fmt.Fprintf(f, "NodeKeyring{rootDir: %q, file: %q, credentials redacted}", n.rootDir, path)
}

// Format prints the providers' names, never credentials.
func (k *PluginKeyring) Format(f fmt.State, _ rune) {
	if k == nil {
		io.WriteString(f, "PluginKeyring(nil)")
		return
	}
	names := make([]string, len(k.providers))
	for i, p := range k.providers {
		names[i] = p.cfg.Name
	}
	fmt.Fprintf(f, "PluginKeyring{providers: %q, credentials redacted}", names)
}

// Format prints the providers' names and the pod, never credentials,
// tokens or the context's values.
func (p *podPluginKeyring) Format(f fmt.State, _ rune) {
	if p == nil {
		io.WriteString(f, "PluginKeyring(nil)")
		return
	}
	fmt.Fprintf(f, "%v for pod %s/%s (service account %q)", p.k, p.pod.Namespace, p.pod.Name, p.pod.ServiceAccountName)
}

// Format prints each keyring as it prints itself with %v; a keyring of
// another package is named by its type only.
func (u Union) Format(f fmt.State, _ rune) {
	var b strings.Builder
	b.WriteString("Union[")
	for i, k := range u {
		if i > 0 {
			b.WriteString(", ")
		}
		switch k.(type) {
		case nil:
			b.WriteString("nil")
		case *BasicKeyring, *NodeKeyring, *PluginKeyring, *podPluginKeyring, Union:
			fmt.Fprintf(&b, "%v", k)
		default:
			fmt.Fprintf(&b, "%T", k)
		}
	}
	b.WriteString("]")
	io.WriteString(f, b.String())
}

// maxSummary bounds what a plugin's or helper's output contributes to an
// error.
const maxSummary = 256

// credentialWords start the part of a line that is redacted.
var credentialWords = map[string]bool{"authorization": true, "auth": true, "bearer": true, "basic": true,
	"password": true, "passwd": true, "pass": true, "secret": true, "token": true, "cookie": true,
	"x-registry-auth": true, "x-registry-config": true, "identitytoken": true, "registrytoken": true}

// summarize makes a bounded, redacted summary of a program's output for an
// error message. It keeps at most maxSummary bytes. A word is kept only
// when it is a short plain word (letters, the first one maybe upper-case,
// an inner hyphen or apostrophe, trailing punctuation) or a number of at
// most 4 digits; anything else (a password, a token, base64, hex,
// "user:pass") becomes <redacted>, and so is the rest of a line after a
// word such as "Authorization:", "password" or "token".
func summarize(out []byte) string {
	var b strings.Builder
	lines := strings.Split(strings.ToValidUTF8(string(out), "?"), "\n")
	for _, line := range lines {
		words := strings.Fields(line)
		if len(words) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(" / ")
		}
		redactRest := false
		for i, w := range words {
			if i > 0 {
				b.WriteByte(' ')
			}
			lw := strings.ToLower(w)
			switch {
			case redactRest:
				b.WriteString("<redacted>")
				continue
			case isPlainWord(w):
				b.WriteString(w)
			default:
				b.WriteString("<redacted>")
			}
			key, _, _ := strings.Cut(strings.TrimRight(lw, ".,:;!?)\"'"), "=")
			redactRest = credentialWords[strings.TrimLeft(key, "(\"'-")]
		}
		if b.Len() > maxSummary {
			break
		}
	}
	s := b.String()
	if len(s) > maxSummary {
		cut := maxSummary
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	if s == "" {
		return "(no output)"
	}
	return s
}

func isPlainWord(w string) bool {
	core := strings.TrimRight(w, ".,:;!?)\"'")
	core = strings.TrimLeft(core, "(\"'")
	if core == "" {
		return len(w) <= 3
	}
	if len(core) <= 4 && strings.Trim(core, "0123456789") == "" {
		return true
	}
	if len(core) > 16 {
		return false
	}
	for i := 0; i < len(core); i++ {
		c := core[i]
		if c >= 'a' && c <= 'z' || i == 0 && c >= 'A' && c <= 'Z' || (c == '-' || c == '\'') && i > 0 && i < len(core)-1 {
			continue
		}
		return false
	}
	return true
}
