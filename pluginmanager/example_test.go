package pluginmanager_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/podstart/podstart/pluginmanager"
)

// csiHandler stands for a CSI driver registry; it needs no import of
// pluginmanager to be a Handler.
type csiHandler struct{ gone chan string }

func (csiHandler) ValidatePlugin(name, _ string, versions []string) error {
	fmt.Println("validate", name, versions)
	return nil
}

func (csiHandler) RegisterPlugin(_ context.Context, name, endpoint string, _ []string, _ time.Duration) error {
	fmt.Println("register", name, "at", filepath.Base(endpoint))
	return nil
}

func (h csiHandler) DeRegisterPlugin(name, _ string) { h.gone <- name }

// registrar is what node-driver-registrar serves beside a CSI driver.
type registrar struct {
	registerapi.UnimplementedRegistrationServer
	told chan *registerapi.RegistrationStatus
}

func (registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              "csi.example.com",
		Endpoint:          "/var/lib/kubelet/plugins/csi.example.com/csi.sock",
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

func (r registrar) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	r.told <- s
	return &registerapi.RegistrationStatusResponse{}, nil
}

func Example() {
	root, err := os.MkdirTemp("", "kubelet")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)
	dir := filepath.Join(root, pluginmanager.DirName)

	m, err := pluginmanager.New(dir)
	if err != nil {
		panic(err)
	}
	gone := make(chan string, 1)
	m.AddHandler(registerapi.CSIPlugin, csiHandler{gone: gone})

	// A driver's registration socket, there before Run (found by its walk)
	// or made later (found by its watch).
	if err := os.MkdirAll(dir, pluginmanager.DirMode); err != nil {
		panic(err)
	}
	lis, err := net.Listen("unix", filepath.Join(dir, "csi.example.com-reg.sock"))
	if err != nil {
		panic(err)
	}
	srv := grpc.NewServer()
	told := make(chan *registerapi.RegistrationStatus, 1)
	registerapi.RegisterRegistrationServer(srv, registrar{told: told})
	go func() { _ = srv.Serve(lis) }()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()

	s := <-told
	fmt.Println("plugin told registered:", s.PluginRegistered)
	for _, p := range m.Plugins() {
		fmt.Println(p.Type, p.Name, p.Versions)
	}

	// The driver exits: its socket is removed, the plugin deregistered.
	srv.Stop()
	fmt.Println("deregister", <-gone)

	cancel()
	fmt.Println(<-done)
	// Output:
	// validate csi.example.com [1.0.0]
	// register csi.example.com at csi.sock
	// plugin told registered: true
	// CSIPlugin csi.example.com [1.0.0]
	// deregister csi.example.com
	// context canceled
}
