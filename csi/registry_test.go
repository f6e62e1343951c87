package csi_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/podstart/podstart/csi"
	"github.com/podstart/podstart/csi/fake"
)

func TestValidatePluginVersionsAsKubelet(t *testing.T) {
	p, err := csi.New(t.TempDir(), "node-a")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		versions []string
		wantErr  string
	}{
		{"ok", []string{"1.0.0"}, ""},
		{"ok highest of several", []string{"0.3.0", "1.2.0", "2.0.0"}, ""},
		{"empty", nil, `validation failed for CSI Driver d.io at endpoint /s: kubernetes.io/csi: ValidatePlugin for CSI driver "d.io" failed. Plugin returned an empty list for supported versions`},
		{"only v2", []string{"2.0.0"}, `validation failed for CSI Driver d.io at endpoint /s: kubernetes.io/csi: ValidatePlugin for CSI driver "d.io" failed. None of the versions specified ["2.0.0"] are supported. err=could not find a highest supported version from versions ([2.0.0]) reported: <nil>`},
		{"garbage", []string{"v"}, `validation failed for CSI Driver d.io at endpoint /s: kubernetes.io/csi: ValidatePlugin for CSI driver "d.io" failed. None of the versions specified ["v"] are supported. err=could not find a highest supported version from versions ([v]) reported: could not parse "v" as version`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.ValidatePlugin("d.io", "/s", tt.versions)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr || !errors.Is(err, csi.ErrRegistration) {
				t.Errorf("err = %v\nwant %s", err, tt.wantErr)
			}
		})
	}
	if err := p.ValidatePlugin("../evil", "/s", []string{"1.0.0"}); !errors.Is(err, csi.ErrInvalidName) || !errors.Is(err, csi.ErrRegistration) {
		t.Errorf("hostile driver name: %v", err)
	}
}

type recordingWriter struct {
	mu        sync.Mutex
	installed []csi.NodeInfo
	removed   []string
	fail      error
}

func (w *recordingWriter) InstallDriver(_ context.Context, info csi.NodeInfo) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail != nil {
		return w.fail
	}
	w.installed = append(w.installed, info)
	return nil
}

func (w *recordingWriter) UninstallDriver(_ context.Context, driver string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.removed = append(w.removed, driver)
	return nil
}

func TestRegisterPlugin(t *testing.T) {
	d := fake.New(driverName, fake.WithNodeInfo("i-0abc", 25, map[string]string{"topology.fake/zone": "z1"}))
	sock, err := d.Serve(filepath.Join(shortDir(t), "csi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	w := &recordingWriter{}
	p, _ := csi.New(t.TempDir(), "node-a", csi.WithNodeInfoWriter(w))
	if err := p.RegisterPlugin(context.Background(), driverName, sock, []string{"1.0.0"}, 0); err != nil {
		t.Fatal(err)
	}
	want := csi.NodeInfo{Driver: driverName, NodeID: "i-0abc", MaxVolumes: 25, Topology: map[string]string{"topology.fake/zone": "z1"}}
	if got, ok := p.DriverInfo(driverName); !ok || !cmp.Equal(got, want) {
		t.Errorf("driver info = %+v", got)
	}
	if !cmp.Equal(w.installed, []csi.NodeInfo{want}) {
		t.Errorf("installed = %+v", w.installed)
	}
	if got := d.Methods(); !cmp.Equal(got, []string{fake.NodeGetInfo}) {
		t.Errorf("calls = %v", got)
	}
	// The same version again: kubelet refuses a driver not newer than the registered one.
	err = p.ValidatePlugin(driverName, sock, []string{"1.0.0"})
	if !errors.Is(err, csi.ErrRegistration) || err.Error() != `validation failed for CSI Driver fake.csi.k8s.io at endpoint `+sock+`: kubernetes.io/csi: ValidatePlugin for CSI driver "fake.csi.k8s.io" failed. Another driver with the same name is already registered with a higher supported version: "1.0.0"` {
		t.Errorf("duplicate: %v", err)
	}
	if err := p.ValidatePlugin(driverName, sock, []string{"1.1.0"}); err != nil {
		t.Errorf("newer version refused: %v", err)
	}
	p.DeRegisterPlugin(driverName, sock)
	if _, err := p.Client(driverName); !errors.Is(err, csi.ErrDriverNotRegistered) {
		t.Errorf("after deregister: %v", err)
	}
	if !cmp.Equal(w.removed, []string{driverName}) || len(p.Drivers()) != 0 {
		t.Errorf("removed = %v, drivers = %v", w.removed, p.Drivers())
	}
}

func TestRegisterPluginFailuresUnregister(t *testing.T) {
	d := fake.New(driverName, fake.WithNodeInfo("", 0, nil))
	sock, err := d.Serve(filepath.Join(shortDir(t), "csi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	w := &recordingWriter{}
	p, _ := csi.New(t.TempDir(), "node-a", csi.WithNodeInfoWriter(w))

	err = p.RegisterPlugin(context.Background(), driverName, sock, []string{"1.0.0"}, 0)
	if !errors.Is(err, csi.ErrRegistration) || err.Error() != "error adding CSI driver node info: driverNodeID must not be empty" {
		t.Errorf("empty node ID: %v", err)
	}
	if len(p.Drivers()) != 0 || len(w.installed) != 0 {
		t.Errorf("registered after failure: %v", p.Drivers())
	}

	d.FailNext(fake.NodeGetInfo, status.Error(codes.Internal, "boom"))
	if err := p.RegisterPlugin(context.Background(), driverName, sock, []string{"1.0.0"}, 0); status.Code(err) != codes.Internal {
		t.Errorf("NodeGetInfo failure: %v", err)
	}
	// A driver that never answers NodeGetInfo: the watcher's timeout ends it.
	d.HangNext(fake.NodeGetInfo)
	if err := p.RegisterPlugin(context.Background(), driverName, sock, []string{"1.0.0"}, 1); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("hung NodeGetInfo: %v", err)
	}
	if len(p.Drivers()) != 0 {
		t.Errorf("registered after failure: %v", p.Drivers())
	}
	// Unregistering after each failure removes the node info too, as kubelet's.
	if len(w.removed) != 3 {
		t.Errorf("uninstalls = %v", w.removed)
	}
}

func TestRegisterPluginWriterFailure(t *testing.T) {
	d := fake.New(driverName)
	sock, err := d.Serve(filepath.Join(shortDir(t), "csi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	w := &recordingWriter{fail: errors.New("api server down")}
	p, _ := csi.New(t.TempDir(), "node-a", csi.WithNodeInfoWriter(w))
	if err := p.RegisterPlugin(context.Background(), driverName, sock, []string{"1.0.0"}, 0); err == nil || err.Error() != "api server down" {
		t.Errorf("err = %v", err)
	}
	if len(p.Drivers()) != 0 {
		t.Errorf("registered after a failed write: %v", p.Drivers())
	}
}

// handler is the plugin watcher handler's method set; Plugin must keep it.
type handler interface {
	ValidatePlugin(pluginName, endpoint string, versions []string) error
	RegisterPlugin(ctx context.Context, pluginName, endpoint string, versions []string, timeout time.Duration) error
	DeRegisterPlugin(pluginName, endpoint string)
}

var _ handler = (*csi.Plugin)(nil)
