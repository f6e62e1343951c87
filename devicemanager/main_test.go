package devicemanager

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind (plugin
// streams, the Registration server, hung calls).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
