// Package fake is an in-process DRA driver for tests: it registers
// through a plugin registration socket (pluginregistration.v1, type
// DRAPlugin) and serves the dra.v1 service (and v1beta1, when asked) on a
// socket of its own, both real unix sockets, as a driver built on
// kubeletplugin does. It records every call, answers each claim with one
// device and the CDI device ID CDIDeviceID(claim name) unless a test sets
// its own answers (SetPrepare, SetUnprepare), and can be stopped at any
// time (Stop: both sockets go, as when the driver's process dies).
package fake

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"google.golang.org/grpc"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	drapbv1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Methods as recorded in Call.Method.
const (
	Prepare   = "NodePrepareResources"
	Unprepare = "NodeUnprepareResources"
)

// Call is one request the driver received: its method and the UIDs of
// its claims, in request order.
type Call struct {
	Method string
	UIDs   []string
}

// PrepareFunc answers NodePrepareResources in place of the default.
type PrepareFunc func(context.Context, *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error)

// UnprepareFunc answers NodeUnprepareResources in place of the default.
type UnprepareFunc func(context.Context, *drapb.NodeUnprepareResourcesRequest) (*drapb.NodeUnprepareResourcesResponse, error)

// Driver is the fake driver; use New.
type Driver struct {
	drapb.UnimplementedDRAPluginServer

	name     string
	versions []string

	mu        sync.Mutex
	endpoint  string
	calls     []Call
	prepared  map[string]int
	prepare   PrepareFunc
	unprepare UnprepareFunc
	servers   []*grpc.Server
	status    chan *registerapi.RegistrationStatus
	health    chan *drahealthv1.NodeWatchResourcesResponse
}

// New returns a driver of the given name offering the gRPC services
// versions (default: v1.DRAPlugin).
func New(name string, versions ...string) *Driver {
	if len(versions) == 0 {
		versions = []string{drapb.DRAPluginService}
	}
	return &Driver{name: name, versions: versions, prepared: map[string]int{}, status: make(chan *registerapi.RegistrationStatus, 16),
		health: make(chan *drahealthv1.NodeWatchResourcesResponse)}
}

// SendHealth sends a health report on the open NodeWatchResources stream
// (the driver serves one when its versions list
// v1.DRAResourceHealth), waiting until a stream takes it or ctx ends.
func (d *Driver) SendHealth(ctx context.Context, devices ...*drahealthv1.DeviceHealth) error {
	select {
	case d.health <- &drahealthv1.NodeWatchResourcesResponse{Devices: devices}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type healthServer struct {
	drahealthv1.UnimplementedDRAResourceHealthServer
	d *Driver
}

func (h healthServer) NodeWatchResources(_ *drahealthv1.NodeWatchResourcesRequest, s drahealthv1.DRAResourceHealth_NodeWatchResourcesServer) error {
	for {
		select {
		case r := <-h.d.health:
			if err := s.Send(r); err != nil {
				return err
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

// CDIDeviceID is the default answer's CDI device ID for a claim.
func CDIDeviceID(claimName string) string { return "example.com/gpu=" + claimName }

// Serve serves the DRA service on endpoint and the registration service
// on regSocket (in the plugin registration directory), replacing stale
// sockets, until Stop.
func (d *Driver) Serve(endpoint, regSocket string) error {
	dra, err := listen(endpoint)
	if err != nil {
		return err
	}
	reg, err := listen(regSocket)
	if err != nil {
		dra.Close()
		return err
	}
	draSrv, regSrv := grpc.NewServer(), grpc.NewServer()
	if slices.Contains(d.versions, drapbv1beta1.DRAPluginService) {
		drapbv1beta1.RegisterDRAPluginServer(draSrv, drapbv1beta1.V1ServerWrapper{DRAPluginServer: d})
	}
	if slices.Contains(d.versions, drapb.DRAPluginService) {
		drapb.RegisterDRAPluginServer(draSrv, d)
	}
	if slices.Contains(d.versions, drahealthv1.DRAResourceHealthService) {
		drahealthv1.RegisterDRAResourceHealthServer(draSrv, healthServer{d: d})
	}
	registerapi.RegisterRegistrationServer(regSrv, registrar{d: d})
	d.mu.Lock()
	d.endpoint = endpoint
	d.servers = append(d.servers, draSrv, regSrv)
	d.mu.Unlock()
	go func() { _ = draSrv.Serve(dra) }()
	go func() { _ = regSrv.Serve(reg) }()
	return nil
}

func listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return net.Listen("unix", path)
}

// Stop ends both servers at once: calls in flight fail, the sockets are
// removed (so the plugin manager deregisters the driver).
func (d *Driver) Stop() {
	d.mu.Lock()
	servers := d.servers
	d.servers = nil
	d.mu.Unlock()
	for _, s := range servers {
		s.Stop()
	}
}

// Registration returns the statuses the plugin manager sent the driver.
func (d *Driver) Registration() <-chan *registerapi.RegistrationStatus { return d.status }

// Calls returns the calls so far, in order.
func (d *Driver) Calls() []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

// Prepared returns how often each claim UID was sent to
// NodePrepareResources.
func (d *Driver) Prepared() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]int, len(d.prepared))
	for k, v := range d.prepared {
		out[k] = v
	}
	return out
}

// SetPrepare sets NodePrepareResources's answer (nil: the default).
func (d *Driver) SetPrepare(f PrepareFunc) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.prepare = f
}

// SetUnprepare sets NodeUnprepareResources's answer (nil: the default).
func (d *Driver) SetUnprepare(f UnprepareFunc) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unprepare = f
}

type registrar struct {
	registerapi.UnimplementedRegistrationServer
	d *Driver
}

func (r registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	r.d.mu.Lock()
	defer r.d.mu.Unlock()
	return &registerapi.PluginInfo{Type: registerapi.DRAPlugin, Name: r.d.name, Endpoint: r.d.endpoint, SupportedVersions: r.d.versions}, nil
}

func (r registrar) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	select {
	case r.d.status <- s:
	default: // nobody reads them: dropped, the driver goes on
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// NodePrepareResources records the call and answers it.
func (d *Driver) NodePrepareResources(ctx context.Context, req *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
	d.mu.Lock()
	c := Call{Method: Prepare}
	for _, cl := range req.GetClaims() {
		c.UIDs = append(c.UIDs, cl.GetUid())
		d.prepared[cl.GetUid()]++
	}
	d.calls = append(d.calls, c)
	f := d.prepare
	d.mu.Unlock()
	if f != nil {
		return f(ctx, req)
	}
	resp := &drapb.NodePrepareResourcesResponse{Claims: map[string]*drapb.NodePrepareResourceResponse{}}
	for _, cl := range req.GetClaims() {
		resp.Claims[cl.GetUid()] = &drapb.NodePrepareResourceResponse{Devices: []*drapb.Device{
			{RequestNames: []string{"gpu"}, PoolName: "pool", DeviceName: "dev-" + cl.GetName(), CdiDeviceIds: []string{CDIDeviceID(cl.GetName())}},
		}}
	}
	return resp, nil
}

// NodeUnprepareResources records the call and answers it.
func (d *Driver) NodeUnprepareResources(ctx context.Context, req *drapb.NodeUnprepareResourcesRequest) (*drapb.NodeUnprepareResourcesResponse, error) {
	d.mu.Lock()
	c := Call{Method: Unprepare}
	for _, cl := range req.GetClaims() {
		c.UIDs = append(c.UIDs, cl.GetUid())
	}
	d.calls = append(d.calls, c)
	f := d.unprepare
	d.mu.Unlock()
	if f != nil {
		return f(ctx, req)
	}
	resp := &drapb.NodeUnprepareResourcesResponse{Claims: map[string]*drapb.NodeUnprepareResourceResponse{}}
	for _, cl := range req.GetClaims() {
		resp.Claims[cl.GetUid()] = &drapb.NodeUnprepareResourceResponse{}
	}
	return resp, nil
}
