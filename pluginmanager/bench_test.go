package pluginmanager

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// BenchmarkRegister is one registration handshake over a unix socket:
// connect, GetInfo, ValidatePlugin, RegisterPlugin, NotifyRegistrationStatus.
func BenchmarkRegister(b *testing.B) {
	dir := b.TempDir()
	m, err := New(dir)
	if err != nil {
		b.Fatal(err)
	}
	p := newPlugin(filepath.Join(dir, "b.sock"), registerapi.CSIPlugin, "bench", "1.0.0").start(b)
	stop := make(chan struct{})
	go func() { // drain the plugin's records of calls
		for {
			select {
			case <-p.statuses:
			case <-p.getInfoCalls:
			case <-stop:
				return
			}
		}
	}()
	h := nopHandler{}
	handlers := map[string]Handler{registerapi.CSIPlugin: h}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := m.register(ctx, p.path, 1, handlers); err != nil {
			b.Fatal(err)
		}
	}
	p.stop(true)
	close(stop)
}

type nopHandler struct{}

func (nopHandler) ValidatePlugin(string, string, []string) error { return nil }
func (nopHandler) RegisterPlugin(context.Context, string, string, []string, time.Duration) error {
	return nil
}
func (nopHandler) DeRegisterPlugin(string, string) {}
