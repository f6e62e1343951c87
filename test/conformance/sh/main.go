// Command sh is the /bin/sh of the conformance tier's busybox images. It
// stands in for upstream's busybox 1.37 sh, which Debian does not ship:
// Debian's busybox 1.35 sh drops environment variables whose names are not
// shell identifiers (so "sh -c env" does not show them), upstream's 1.37
// keeps them, and specs rely on both that and busybox's own messages
// ("can't create /file: Read-only file system"). So it runs busybox's sh,
// except when its environment holds a variable busybox 1.35 would drop:
// then Debian's static bash (/bin/bash), which passes such variables on.
package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// identifier reports whether name is a shell variable name.
func identifier(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func main() {
	// argv[0] as given ("sh", "/bin/sh"): busybox picks its applet by
	// its base name and prefixes its messages with it, bash runs as sh.
	shell := "/bin/busybox"
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !identifier(name) {
			shell = "/bin/bash"
			break
		}
	}
	err := syscall.Exec(shell, os.Args, os.Environ())
	fmt.Fprintf(os.Stderr, "sh: exec %s: %v\n", shell, err)
	os.Exit(127)
}
