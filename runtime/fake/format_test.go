package fake

import (
	"fmt"
	"strings"
	"testing"
)

// TestFormatRedacts: no fmt verb prints a registry password given to the
// fake.
func TestFormatRedacts(t *testing.T) {
	r := New(WithRegistryAuth("reg.io", "u", "Hunter2-Pa55word"))
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		if s := fmt.Sprintf(verb, r); strings.Contains(s, "Hunter2") || strings.Contains(s, fmt.Sprintf("%x", "Hunter2")) {
			t.Errorf("%s: %s", verb, s)
		}
	}
}
