package fake

import (
	"fmt"
	"io"
)

// Format prints the fake's counts, never the registry credentials it was
// given (WithRegistryAuth), whatever the verb.
func (r *Runtime) Format(f fmt.State, _ rune) {
	if r == nil {
		io.WriteString(f, "fake.Runtime(nil)")
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(f, "fake.Runtime{%d registries with credentials, credentials redacted}", len(r.auth))
}
