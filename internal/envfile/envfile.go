// Package envfile reads one key from an environment file, with the rules
// of kubelet v1.37.2's env file parser (pkg/kubelet/util/env ParseEnv),
// which fileKeyRef (EnvFiles) uses:
//
//   - a line is NAME='value'; leading blanks (spaces, tabs) are ignored,
//     as are blank lines and lines whose first non-blank is '#';
//   - the value is between single quotes, taken literally (no escapes, no
//     expansion) and may span lines, the line breaks kept as "\n";
//     after the closing quote only blanks and a '#' comment may follow;
//   - blanks before '=' are an error; a blank right after '=' makes the
//     value empty, as a shell would (NAME= 'x' assigns ""), and the rest of
//     that line is not checked;
//   - the first line that sets the key decides, and lines after it are
//     not read; a line before it that breaks the rules fails the lookup;
//   - lines are split as bufio.Scanner splits them ("\n", a "\r" before it
//     dropped), and a line longer than bufio.MaxScanTokenSize (64 KiB)
//     fails the lookup, as in kubelet.
//
// A key that no line sets reads as "", as an empty value does: kubelet
// cannot tell them apart, so neither does Lookup.
package envfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	pathrs "github.com/cyphar/filepath-securejoin/pathrs-lite"
	"golang.org/x/sys/unix"
)

// LookupInRoot returns the value of key in the environment file at
// unsafePath inside the directory root, with kubelet's messages for files
// it cannot open or read and for lines that break the rules; path names
// the file in them (kubelet's securejoin of root and unsafePath). The
// file is opened scoped to root (pathrs-lite), so a link that a container
// swaps in after the path was resolved cannot lead out of it. Only a
// regular file is read: kubelet would block for ever on a FIFO.
func LookupInRoot(root, unsafePath, path, key string) (string, error) {
	h, err := pathrs.OpenInRoot(root, unsafePath)
	if err != nil {
		return "", fmt.Errorf("failed to open environment variable file %q: %w", path, err)
	}
	defer h.Close()
	info, err := h.Stat()
	if err != nil {
		return "", fmt.Errorf("failed to open environment variable file %q: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("failed to open environment variable file %q: %w", path, ErrNotRegular)
	}
	f, err := pathrs.Reopen(h, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return "", fmt.Errorf("failed to open environment variable file %q: %w", path, err)
	}
	defer f.Close()
	return Parse(f, path, key)
}

// ErrNotRegular: the env file is a directory, a FIFO, a device or a socket.
var ErrNotRegular = errors.New("not a regular file")

// Parse is LookupInRoot over a reader; path is only used in messages.
func Parse(r io.Reader, path, key string) (string, error) {
	p := parser{lines: bufio.NewScanner(r)}
	for p.next() {
		name, value, ok, err := p.assignment()
		if err != nil {
			return "", err
		}
		if ok && name == key {
			return value, nil
		}
	}
	if err := p.lines.Err(); err != nil {
		return "", fmt.Errorf("error reading environment variable file %q: %w", path, err)
	}
	return "", nil
}

type parser struct {
	lines *bufio.Scanner
	line  string
	n     int // number of the line read last, from 1
}

func (p *parser) next() bool {
	if !p.lines.Scan() {
		return false
	}
	p.n++
	p.line = p.lines.Text()
	return true
}

func (p *parser) fail(format string, args ...any) error {
	return fmt.Errorf("invalid environment variable format at line %d: "+format, append([]any{p.n}, args...)...)
}

// assignment reads the statement that starts on the current line, and
// the further lines a quoted value spans. ok is false for a blank or
// comment line.
func (p *parser) assignment() (name, value string, ok bool, err error) {
	line := strings.TrimLeft(p.line, " \t")
	if line == "" || line[0] == '#' {
		return "", "", false, nil
	}
	name, rest, found := strings.Cut(line, "=")
	if !found {
		return "", "", false, p.fail("missing '='")
	}
	trimmed := strings.TrimRight(name, " \t")
	switch {
	case trimmed == "":
		return "", "", false, p.fail("empty variable name")
	case trimmed != name:
		return "", "", false, p.fail("whitespace before '=' is not allowed")
	}
	if rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
		// NAME= 'x' sets NAME to "" in a shell; what follows is a
		// command there and is not looked at here.
		return name, "", true, nil
	}
	if rest == "" || rest[0] != '\'' {
		return "", "", false, p.fail("value must be enclosed in single quotes")
	}
	value, err = p.quoted(rest[1:])
	return name, value, err == nil, err
}

// quoted reads a value from just after its opening quote to its closing
// one, across lines.
func (p *parser) quoted(rest string) (string, error) {
	start := p.n
	var b strings.Builder
	for {
		if body, after, closed := strings.Cut(rest, "'"); closed {
			b.WriteString(body)
			after = strings.TrimLeft(after, " \t")
			if after != "" && after[0] != '#' {
				return "", p.fail("unexpected content after closing quote")
			}
			return b.String(), nil
		}
		b.WriteString(rest)
		b.WriteByte('\n')
		if !p.next() {
			return "", fmt.Errorf("invalid environment variable format starting at line %d: unclosed single quote", start)
		}
		rest = p.line
	}
}
