package volumemanager

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind (Run,
// the waits).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
