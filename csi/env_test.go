package csi_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	"go.uber.org/goleak"

	"github.com/podstart/podstart/csi"
	"github.com/podstart/podstart/csi/fake"
)

const driverName = "fake.csi.k8s.io"

// Every test stops its drivers; no gRPC goroutine may outlive them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type env struct {
	p      *csi.Plugin
	d      *fake.Driver
	root   string
	socket string
}

// shortDir is a temporary directory with a short path: a unix socket's
// path must fit in 108 bytes.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func newEnv(t *testing.T, caps []csipb.NodeServiceCapability_RPC_Type, opts ...csi.Option) *env {
	t.Helper()
	d := fake.New(driverName, fake.WithCapabilities(caps...), fake.WithNodeInfo("node-1", 0, nil))
	sock, err := d.Serve(filepath.Join(shortDir(t), "csi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	root := t.TempDir()
	p, err := csi.New(root, "node-a", opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.RegisterPlugin(context.Background(), driverName, sock, []string{"1.0.0"}, 0); err != nil {
		t.Fatal(err)
	}
	d.Reset()
	return &env{p: p, d: d, root: root, socket: sock}
}

var (
	stageCap = csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME
	groupCap = csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP
	snmwCap  = csipb.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER
	statsCap = csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS
	expCap   = csipb.NodeServiceCapability_RPC_EXPAND_VOLUME
)

func exists(t *testing.T, p string) bool {
	t.Helper()
	_, err := os.Lstat(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

func logrContext(l logr.Logger) context.Context { return logr.NewContext(context.Background(), l) }
