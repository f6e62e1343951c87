// Package fake is an in-process CSI node driver for tests: it serves the
// csi.v1 Identity and Node services on a unix socket, records every call
// with its request, answers NodeGetInfo and NodeGetCapabilities as
// configured, and fails, hangs or dies on the calls a test scripts.
// Publish creates the target (a directory, or a file for a block volume)
// and unpublish removes it, as a driver would; nothing is mounted.
package fake

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Method names as recorded in Call.Method.
const (
	NodeGetInfo         = "NodeGetInfo"
	NodeGetCapabilities = "NodeGetCapabilities"
	NodeStageVolume     = "NodeStageVolume"
	NodeUnstageVolume   = "NodeUnstageVolume"
	NodePublishVolume   = "NodePublishVolume"
	NodeUnpublishVolume = "NodeUnpublishVolume"
	NodeGetVolumeStats  = "NodeGetVolumeStats"
	NodeExpandVolume    = "NodeExpandVolume"
)

// Call is one recorded call.
type Call struct {
	Method  string
	Request proto.Message // a copy of the request
}

type action struct {
	err     error
	hang    bool
	die     bool
	entered chan struct{}
}

// Driver is the fake driver. Its zero value is not usable; use New.
type Driver struct {
	csipb.UnimplementedIdentityServer
	csipb.UnimplementedNodeServer

	name string

	mu       sync.Mutex
	info     *csipb.NodeGetInfoResponse
	caps     []csipb.NodeServiceCapability_RPC_Type
	stats    *csipb.NodeGetVolumeStatsResponse
	calls    []Call
	script   map[string][]action
	srv      *grpc.Server
	served   sync.WaitGroup
	stopOnce *sync.Once
}

// Option configures a Driver.
type Option func(*Driver)

// WithNodeInfo sets NodeGetInfo's answer.
func WithNodeInfo(nodeID string, maxVolumes int64, topology map[string]string) Option {
	return func(d *Driver) {
		d.info = &csipb.NodeGetInfoResponse{NodeId: nodeID, MaxVolumesPerNode: maxVolumes}
		if topology != nil {
			d.info.AccessibleTopology = &csipb.Topology{Segments: topology}
		}
	}
}

// WithCapabilities sets NodeGetCapabilities' answer (default: none).
func WithCapabilities(caps ...csipb.NodeServiceCapability_RPC_Type) Option {
	return func(d *Driver) { d.caps = caps }
}

// WithVolumeStats sets NodeGetVolumeStats' answer.
func WithVolumeStats(res *csipb.NodeGetVolumeStatsResponse) Option {
	return func(d *Driver) { d.stats = res }
}

// New returns a driver named name (its GetPluginInfo answer), with node
// ID "node-1" unless WithNodeInfo says otherwise.
func New(name string, opts ...Option) *Driver {
	d := &Driver{name: name, info: &csipb.NodeGetInfoResponse{NodeId: "node-1"}, script: map[string][]action{}}
	for _, o := range opts {
		o(d)
	}
	return d
}

// SetCapabilities replaces NodeGetCapabilities' answer.
func (d *Driver) SetCapabilities(caps ...csipb.NodeServiceCapability_RPC_Type) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.caps = caps
}

// SetVolumeStats replaces NodeGetVolumeStats' answer.
func (d *Driver) SetVolumeStats(res *csipb.NodeGetVolumeStatsResponse) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stats = res
}

// FailNext makes the next call of method fail with err (a gRPC status
// error keeps its code on the client).
func (d *Driver) FailNext(method string, err error) {
	d.push(method, action{err: err})
}

// HangNext makes the next call of method block until the caller gives up
// (its context ends) or the server stops. The channel is closed when the
// call has arrived.
func (d *Driver) HangNext(method string) <-chan struct{} {
	ch := make(chan struct{})
	d.push(method, action{hang: true, entered: ch})
	return ch
}

// DieNext makes the server stop when the next call of method arrives, as
// a driver that crashes mid-call: the caller sees its connection lost.
// The channel is closed when the call has arrived. Serve again to restart.
func (d *Driver) DieNext(method string) <-chan struct{} {
	ch := make(chan struct{})
	d.push(method, action{die: true, entered: ch})
	return ch
}

func (d *Driver) push(method string, a action) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.script[method] = append(d.script[method], a)
}

// Calls returns a copy of the calls so far.
func (d *Driver) Calls() []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Call(nil), d.calls...)
}

// Methods returns the methods called so far, in order.
func (d *Driver) Methods() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, len(d.calls))
	for i, c := range d.calls {
		out[i] = c.Method
	}
	return out
}

// Reset forgets the calls recorded so far.
func (d *Driver) Reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = nil
}

// Serve listens on the unix socket path (replacing a stale one) and
// serves in the background until Stop; it returns the socket path.
func (d *Driver) Serve(path string) (string, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return "", err
	}
	srv := grpc.NewServer()
	csipb.RegisterIdentityServer(srv, d)
	csipb.RegisterNodeServer(srv, d)
	d.mu.Lock()
	d.srv = srv
	d.stopOnce = &sync.Once{}
	d.mu.Unlock()
	d.served.Add(1)
	go func() {
		defer d.served.Done()
		_ = srv.Serve(lis)
	}()
	return path, nil
}

// Stop stops the server at once (calls in flight fail on the client) and
// waits for it to finish serving.
func (d *Driver) Stop() {
	d.mu.Lock()
	srv, once := d.srv, d.stopOnce
	d.mu.Unlock()
	if srv != nil {
		once.Do(srv.Stop)
	}
	d.served.Wait()
}

// record notes the call and runs its scripted action, if any.
func (d *Driver) record(ctx context.Context, method string, req proto.Message) error {
	d.mu.Lock()
	d.calls = append(d.calls, Call{Method: method, Request: proto.Clone(req)})
	var a action
	var scripted bool
	if q := d.script[method]; len(q) > 0 {
		a, scripted = q[0], true
		d.script[method] = q[1:]
	}
	srv, once := d.srv, d.stopOnce
	d.mu.Unlock()
	if !scripted {
		return nil
	}
	switch {
	case a.die:
		close(a.entered)
		go once.Do(srv.Stop)
		<-ctx.Done()
		return status.Error(codes.Unavailable, "driver died")
	case a.hang:
		close(a.entered)
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	}
	return a.err
}

// GetPluginInfo answers the driver's name.
func (d *Driver) GetPluginInfo(context.Context, *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	return &csipb.GetPluginInfoResponse{Name: d.name, VendorVersion: "fake"}, nil
}

// NodeGetInfo answers WithNodeInfo's answer.
func (d *Driver) NodeGetInfo(ctx context.Context, req *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	if err := d.record(ctx, NodeGetInfo, req); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return proto.Clone(d.info).(*csipb.NodeGetInfoResponse), nil
}

// NodeGetCapabilities answers the configured capabilities.
func (d *Driver) NodeGetCapabilities(ctx context.Context, req *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	if err := d.record(ctx, NodeGetCapabilities, req); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	res := &csipb.NodeGetCapabilitiesResponse{}
	for _, c := range d.caps {
		res.Capabilities = append(res.Capabilities, &csipb.NodeServiceCapability{
			Type: &csipb.NodeServiceCapability_Rpc{Rpc: &csipb.NodeServiceCapability_RPC{Type: c}},
		})
	}
	return res, nil
}

// NodeStageVolume records the call.
func (d *Driver) NodeStageVolume(ctx context.Context, req *csipb.NodeStageVolumeRequest) (*csipb.NodeStageVolumeResponse, error) {
	if err := d.record(ctx, NodeStageVolume, req); err != nil {
		return nil, err
	}
	return &csipb.NodeStageVolumeResponse{}, nil
}

// NodeUnstageVolume records the call.
func (d *Driver) NodeUnstageVolume(ctx context.Context, req *csipb.NodeUnstageVolumeRequest) (*csipb.NodeUnstageVolumeResponse, error) {
	if err := d.record(ctx, NodeUnstageVolume, req); err != nil {
		return nil, err
	}
	return &csipb.NodeUnstageVolumeResponse{}, nil
}

// NodePublishVolume records the call and creates the target path.
func (d *Driver) NodePublishVolume(ctx context.Context, req *csipb.NodePublishVolumeRequest) (*csipb.NodePublishVolumeResponse, error) {
	if err := d.record(ctx, NodePublishVolume, req); err != nil {
		return nil, err
	}
	target := req.GetTargetPath()
	if !filepath.IsAbs(target) {
		return nil, status.Error(codes.InvalidArgument, "target path not absolute")
	}
	if req.GetVolumeCapability().GetBlock() != nil {
		f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o640)
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		f.Close()
	} else if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csipb.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume records the call and removes the target path.
func (d *Driver) NodeUnpublishVolume(ctx context.Context, req *csipb.NodeUnpublishVolumeRequest) (*csipb.NodeUnpublishVolumeResponse, error) {
	if err := d.record(ctx, NodeUnpublishVolume, req); err != nil {
		return nil, err
	}
	if err := os.Remove(req.GetTargetPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csipb.NodeUnpublishVolumeResponse{}, nil
}

// NodeGetVolumeStats answers WithVolumeStats' answer.
func (d *Driver) NodeGetVolumeStats(ctx context.Context, req *csipb.NodeGetVolumeStatsRequest) (*csipb.NodeGetVolumeStatsResponse, error) {
	if err := d.record(ctx, NodeGetVolumeStats, req); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stats == nil {
		return nil, status.Error(codes.NotFound, "no stats")
	}
	return proto.Clone(d.stats).(*csipb.NodeGetVolumeStatsResponse), nil
}

// NodeExpandVolume answers the required bytes as the new capacity.
func (d *Driver) NodeExpandVolume(ctx context.Context, req *csipb.NodeExpandVolumeRequest) (*csipb.NodeExpandVolumeResponse, error) {
	if err := d.record(ctx, NodeExpandVolume, req); err != nil {
		return nil, err
	}
	return &csipb.NodeExpandVolumeResponse{CapacityBytes: req.GetCapacityRange().GetRequiredBytes()}, nil
}
