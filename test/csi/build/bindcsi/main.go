// Command bindcsi is the CSI tier's own driver, bind.csi.podstart.test: a
// CSI v1 plugin whose volumes are directories under -data, bind-mounted
// where the container orchestrator asks. It exists because the CSI mock
// driver Kubernetes' own tests use (test/e2e/storage/drivers/csi-test/mock,
// also csi-test's former mock) does not mount anything: it creates the
// target directory and forgets the data, so a StatefulSet could not read
// back what it wrote. This driver is not a storage system; it is the
// smallest one that keeps data across pods and makes real mounts.
//
// It serves one plugin on two unix sockets: -controller-endpoint for the
// controller sidecars (external-provisioner, external-attacher) and
// -node-endpoint for the node (kubelet or podstart) and the registrar, so
// the node's calls are recorded apart. Every call on either socket is
// appended to -calls as one JSON line: the socket, the gRPC method, the
// request and the response (protojson), the error.
//
// Controller: CreateVolume makes <data>/volumes/<id>, DeleteVolume removes
// it, ControllerPublishVolume / ControllerUnpublishVolume answer (attach
// required, so the attach/detach controller and external-attacher run).
// Node: STAGE_UNSTAGE_VOLUME (NodeStageVolume bind-mounts the volume's
// directory on the staging path, NodePublishVolume bind-mounts the staging
// path on the target), GET_VOLUME_STATS, and ephemeral inline volumes
// (volume_context csi.storage.k8s.io/ephemeral=true: a directory of their
// own, published without staging, removed at unpublish).
//
// Block volumes (block access type): CreateVolume makes the volume's
// directory with a sparse file disk.img of the requested size;
// NodeStageVolume attaches a loop device to it (losetup, reusing one
// already backed by it) and bind-mounts the device node on the file
// <staging>/dev; NodePublishVolume bind-mounts that on the target file;
// NodeUnpublishVolume unmounts and removes the target; NodeUnstageVolume
// unmounts <staging>/dev, removes it and detaches the loop device.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

const (
	driverName    = "bind.csi.podstart.test"
	driverVersion = "0.1.0"
	ephemeralKey  = "csi.storage.k8s.io/ephemeral"
	diskImage     = "disk.img"
	// defaultBlockSize is a block volume's size when none is asked.
	defaultBlockSize = 16 << 20
	maxBlockSize     = 1 << 30
)

func main() {
	controllerEP := flag.String("controller-endpoint", "", "unix socket for the controller sidecars")
	nodeEP := flag.String("node-endpoint", "", "unix socket for the node and the registrar")
	data := flag.String("data", "", "directory holding the volumes' data")
	nodeID := flag.String("node-id", "", "this node's ID (NodeGetInfo)")
	calls := flag.String("calls", "", "file every call is appended to, one JSON line each")
	flag.Parse()
	if *controllerEP == "" || *nodeEP == "" || *data == "" || *nodeID == "" || *calls == "" {
		log.Fatal("bindcsi: -controller-endpoint, -node-endpoint, -data, -node-id and -calls are required")
	}
	for _, d := range []string{filepath.Join(*data, "volumes"), filepath.Join(*data, "ephemeral")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			log.Fatal(err)
		}
	}
	rec, err := os.OpenFile(*calls, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	d := &driver{data: *data, nodeID: *nodeID, rec: rec, vanish: make(chan string, 1)}
	ctrl := d.serve("controller", *controllerEP)
	node := d.serve("node", *nodeEP)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	for {
		select {
		case method := <-d.vanish:
			// The node socket gone mid-call: every connection closed,
			// the socket removed, back once the fault file is.
			node.Stop()
			os.Remove(*nodeEP)
			log.Printf("bindcsi: node socket removed (fault on %s)", method)
			for {
				if _, err := os.Stat(filepath.Join(d.data, "faults", method)); err != nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			node = d.serve("node", *nodeEP)
			continue
		case <-sigs:
		}
		break
	}
	for _, s := range []*grpc.Server{ctrl, node} {
		s.GracefulStop()
	}
	os.Remove(*controllerEP)
	os.Remove(*nodeEP)
}

// serve serves the plugin on a unix socket at path, recorded as socket.
func (d *driver) serve(socket, path string) *grpc.Server {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		log.Fatal(err)
	}
	os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		log.Fatal(err)
	}
	s := grpc.NewServer(grpc.UnaryInterceptor(d.record(socket)))
	csi.RegisterIdentityServer(s, d)
	csi.RegisterControllerServer(s, d)
	csi.RegisterNodeServer(s, d)
	go func() {
		if err := s.Serve(l); err != nil {
			log.Printf("bindcsi: %s: %v", socket, err)
		}
	}()
	log.Printf("bindcsi: %s serving on %s", socket, path)
	return s
}

type driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer

	data, nodeID string
	mu           sync.Mutex // serialises calls and the record file
	rec          *os.File
	vanish       chan string // the node socket is to go (a "vanish" fault)
}

// call is one line of the record file.
type call struct {
	Time     string          `json:"time"`
	Socket   string          `json:"socket"`
	Method   string          `json:"method"`
	Request  json.RawMessage `json:"request"`
	Response json.RawMessage `json:"response,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// record serialises every call (a real driver would lock per volume; one
// lock keeps the record's order the order of the work) and appends it.
func (d *driver) record(socket string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if socket == "node" {
			if err := d.fault(info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:]); errors.Is(err, errVanished) {
				return nil, err
			} else if err != nil {
				d.mu.Lock()
				defer d.mu.Unlock()
				c := call{Time: time.Now().UTC().Format(time.RFC3339Nano), Socket: socket, Method: info.FullMethod, Request: marshal(req), Error: err.Error()}
				b, _ := json.Marshal(c)
				d.rec.Write(append(b, '\n'))
				log.Printf("bindcsi: %s %s injected err=%v", socket, info.FullMethod, err)
				return nil, err
			}
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		resp, err := handler(ctx, req)
		c := call{Time: time.Now().UTC().Format(time.RFC3339Nano), Socket: socket, Method: info.FullMethod, Request: marshal(req)}
		if err != nil {
			c.Error = err.Error()
		} else {
			c.Response = marshal(resp)
		}
		b, _ := json.Marshal(c)
		d.rec.Write(append(b, '\n'))
		log.Printf("bindcsi: %s %s err=%v", socket, info.FullMethod, err)
		return resp, err
	}
}

// fault is the tier's fault injection on the node socket: a file
// <data>/faults/<method> saying "fail" fails the next call of method with
// Unavailable (the file is removed: once); saying "hang" holds every call
// of method, after creating <data>/faults/<method>.hanging, until the
// file is removed, then fails it with Aborted (the caller may be gone:
// an agent killed mid-call); saying "vanish" holds the call likewise, and
// removes the node socket (every connection closed: the caller sees the
// driver gone mid-call) until the file is removed, after creating
// <data>/faults/<method>.vanished; the call is not recorded (the driver
// "died" with it).
func (d *driver) fault(method string) error {
	path := filepath.Join(d.data, "faults", method)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	switch strings.TrimSpace(string(b)) {
	case "fail":
		os.Remove(path)
		return status.Error(codes.Unavailable, "injected fault")
	case "vanish":
		select {
		case d.vanish <- method:
		default:
		}
		os.WriteFile(path+".vanished", nil, 0o644)
		for {
			if _, err := os.Stat(path); err != nil {
				return errVanished
			}
			time.Sleep(100 * time.Millisecond)
		}
	case "hang":
		os.WriteFile(path+".hanging", nil, 0o644)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if _, err := os.Stat(path); err != nil {
				return status.Error(codes.Aborted, "injected hang ended")
			}
			<-t.C // the caller's ctx ends when it dies: the hang outlives it
		}
	}
	return nil
}

// errVanished ends a call held by a "vanish" fault: its connection is
// gone, and so is its record.
var errVanished = errors.New("the node socket vanished under this call")

func marshal(v any) json.RawMessage {
	m, ok := v.(proto.Message)
	if !ok || m == nil {
		return json.RawMessage("null")
	}
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return json.RawMessage(fmt.Sprintf("%q", err.Error()))
	}
	return b
}

// --- identity

func (d *driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: driverName, VendorVersion: driverVersion}, nil
}

func (d *driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{
		{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}}},
		{Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{Type: csi.PluginCapability_VolumeExpansion_ONLINE}}},
	}}, nil
}

func (d *driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

// --- controller

// volumeID is the ID of the volume named name: the name itself, which the
// provisioner makes from the PV's name (pvc-<uid>). Names that are not
// one safe path element are refused.
func volumeID(name string) (string, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") || len(name) > 128 {
		return "", status.Errorf(codes.InvalidArgument, "volume name or ID %q is not a safe path element", name)
	}
	return name, nil
}

func (d *driver) volumeDir(id string) string { return filepath.Join(d.data, "volumes", id) }

func (d *driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	id, err := volumeID(req.GetName())
	if err != nil {
		return nil, err
	}
	if err := checkCaps(req.GetVolumeCapabilities()); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(d.volumeDir(id), 0o777); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if isBlock(req.GetVolumeCapabilities()) {
		size := req.GetCapacityRange().GetRequiredBytes()
		if size <= 0 {
			size = defaultBlockSize
		}
		if size > maxBlockSize {
			return nil, status.Errorf(codes.OutOfRange, "block volume of %d bytes: at most %d", size, maxBlockSize)
		}
		img := filepath.Join(d.volumeDir(id), diskImage)
		if _, err := os.Stat(img); errors.Is(err, os.ErrNotExist) {
			f, err := os.OpenFile(img, os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				return nil, status.Error(codes.Internal, err.Error())
			}
			err = f.Truncate(size)
			f.Close()
			if err != nil {
				return nil, status.Error(codes.Internal, err.Error())
			}
		}
		return &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: id, CapacityBytes: size}}, nil
	}
	// World-writable, as a fresh filesystem of a real driver would be
	// made writable by the pod's fsGroup; the tier's pods run as root.
	os.Chmod(d.volumeDir(id), 0o777)
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: id, CapacityBytes: req.GetCapacityRange().GetRequiredBytes()}}, nil
}

func (d *driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id, err := volumeID(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(d.volumeDir(id)); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.DeleteVolumeResponse{}, nil
}

func (d *driver) ControllerPublishVolume(_ context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	id, err := volumeID(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if req.GetNodeId() != d.nodeID {
		return nil, status.Errorf(codes.NotFound, "node %q is not %q", req.GetNodeId(), d.nodeID)
	}
	if _, err := os.Stat(d.volumeDir(id)); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s: %v", id, err)
	}
	return &csi.ControllerPublishVolumeResponse{PublishContext: map[string]string{"attached-to": d.nodeID}}, nil
}

func (d *driver) ControllerUnpublishVolume(_ context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	if _, err := volumeID(req.GetVolumeId()); err != nil {
		return nil, err
	}
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}

func (d *driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	id, err := volumeID(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(d.volumeDir(id)); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s: %v", id, err)
	}
	if err := checkCaps(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{VolumeCapabilities: req.GetVolumeCapabilities()}}, nil
}

func (d *driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, t := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME,
		csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
	} {
		caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

// ControllerExpandVolume grows a block volume's image (a directory needs
// nothing) and asks for the node's expansion.
func (d *driver) ControllerExpandVolume(_ context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	id, err := volumeID(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(d.volumeDir(id)); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s: %v", id, err)
	}
	size := req.GetCapacityRange().GetRequiredBytes()
	if size <= 0 || size > maxBlockSize {
		return nil, status.Errorf(codes.OutOfRange, "size %d: must be 1 to %d bytes", size, maxBlockSize)
	}
	img := filepath.Join(d.volumeDir(id), diskImage)
	if st, err := os.Stat(img); err == nil && st.Size() < size {
		if err := os.Truncate(img, size); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: size, NodeExpansionRequired: true}, nil
}

// checkCaps accepts filesystem or block volumes, not both at once.
func checkCaps(caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return status.Error(codes.InvalidArgument, "no volume capabilities")
	}
	block := 0
	for _, c := range caps {
		if c.GetBlock() != nil {
			block++
		} else if c.GetMount() == nil {
			return status.Error(codes.InvalidArgument, "a capability with neither mount nor block access")
		}
	}
	if block != 0 && block != len(caps) {
		return status.Error(codes.InvalidArgument, "block and filesystem access at once")
	}
	return nil
}

func isBlock(caps []*csi.VolumeCapability) bool {
	return len(caps) > 0 && caps[0].GetBlock() != nil
}

// --- node

func (d *driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: d.nodeID}, nil
}

func (d *driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	var caps []*csi.NodeServiceCapability
	for _, t := range []csi.NodeServiceCapability_RPC_Type{
		csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
		csi.NodeServiceCapability_RPC_EXPAND_VOLUME,
	} {
		caps = append(caps, &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}}})
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

func (d *driver) NodeStageVolume(_ context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	id, err := volumeID(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	target := req.GetStagingTargetPath()
	if !filepath.IsAbs(target) {
		return nil, status.Errorf(codes.InvalidArgument, "staging target path %q is not absolute", target)
	}
	if err := checkCaps([]*csi.VolumeCapability{req.GetVolumeCapability()}); err != nil {
		return nil, err
	}
	if _, err := os.Stat(d.volumeDir(id)); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s: %v", id, err)
	}
	if req.GetVolumeCapability().GetBlock() != nil {
		return &csi.NodeStageVolumeResponse{}, d.stageBlock(id, target)
	}
	if err := bindMount(d.volumeDir(id), target, false); err != nil {
		return nil, err
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

// stageBlock attaches a loop device to the volume's image and bind-mounts
// it on <staging>/dev.
func (d *driver) stageBlock(id, staging string) error {
	img := filepath.Join(d.volumeDir(id), diskImage)
	if _, err := os.Stat(img); err != nil {
		return status.Errorf(codes.NotFound, "volume %s is not a block volume: %v", id, err)
	}
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	dev := filepath.Join(staging, "dev")
	if ok, _ := isMountPoint(dev); ok {
		return nil
	}
	loop, err := loopOf(img)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	if loop == "" {
		out, err := exec.Command("losetup", "-f", "--show", img).CombinedOutput()
		if err != nil {
			return status.Errorf(codes.Internal, "losetup -f --show %s: %v: %s", img, err, strings.TrimSpace(string(out)))
		}
		loop = strings.TrimSpace(string(out))
	}
	return bindMountFile(loop, dev, false)
}

// unstageBlock undoes stageBlock.
func (d *driver) unstageBlock(id, staging string) error {
	dev := filepath.Join(staging, "dev")
	if err := unmount(dev, true); err != nil {
		return err
	}
	img := filepath.Join(d.volumeDir(id), diskImage)
	loop, err := loopOf(img)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	if loop != "" {
		if out, err := exec.Command("losetup", "-d", loop).CombinedOutput(); err != nil {
			return status.Errorf(codes.Internal, "losetup -d %s: %v: %s", loop, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// loopOf is the loop device backed by img ("" when none).
func loopOf(img string) (string, error) {
	devs, err := filepath.Glob("/sys/block/loop*")
	if err != nil {
		return "", err
	}
	for _, dev := range devs {
		b, err := os.ReadFile(filepath.Join(dev, "loop", "backing_file"))
		if err != nil {
			continue
		}
		if strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(string(b)), "(deleted)")) == img {
			return "/dev/" + filepath.Base(dev), nil
		}
	}
	return "", nil
}

func (d *driver) NodeUnstageVolume(_ context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	id, err := volumeID(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(req.GetStagingTargetPath()) {
		return nil, status.Errorf(codes.InvalidArgument, "staging target path %q is not absolute", req.GetStagingTargetPath())
	}
	if _, err := os.Lstat(filepath.Join(req.GetStagingTargetPath(), "dev")); err == nil {
		return &csi.NodeUnstageVolumeResponse{}, d.unstageBlock(id, req.GetStagingTargetPath())
	}
	if err := unmount(req.GetStagingTargetPath(), false); err != nil {
		return nil, err
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

func (d *driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, err := volumeID(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	target := req.GetTargetPath()
	if !filepath.IsAbs(target) {
		return nil, status.Errorf(codes.InvalidArgument, "target path %q is not absolute", target)
	}
	if err := checkCaps([]*csi.VolumeCapability{req.GetVolumeCapability()}); err != nil {
		return nil, err
	}
	if req.GetVolumeCapability().GetBlock() != nil {
		dev := filepath.Join(req.GetStagingTargetPath(), "dev")
		if ok, err := isMountPoint(dev); err != nil || !ok {
			return nil, status.Errorf(codes.FailedPrecondition, "block volume %s is not staged at %s (%v)", id, dev, err)
		}
		if err := bindMountFile(dev, target, req.GetReadonly()); err != nil {
			return nil, err
		}
		return &csi.NodePublishVolumeResponse{}, nil
	}
	var source string
	if req.GetVolumeContext()[ephemeralKey] == "true" {
		source = filepath.Join(d.data, "ephemeral", id)
		if err := os.MkdirAll(source, 0o777); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		os.Chmod(source, 0o777)
	} else {
		source = req.GetStagingTargetPath()
		if source == "" {
			return nil, status.Error(codes.FailedPrecondition, "volume is not staged: no staging target path")
		}
		if ok, err := isMountPoint(source); err != nil || !ok {
			return nil, status.Errorf(codes.FailedPrecondition, "staging path %s is not mounted (%v)", source, err)
		}
	}
	if err := bindMount(source, target, req.GetReadonly()); err != nil {
		return nil, err
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (d *driver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id, err := volumeID(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if err := unmount(req.GetTargetPath(), true); err != nil {
		return nil, err
	}
	// An ephemeral volume's data goes with it; a persistent one's stays.
	if eph := filepath.Join(d.data, "ephemeral", id); dirExists(eph) {
		os.RemoveAll(eph)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// NodeExpandVolume answers the size asked for (a directory has no size;
// a block volume's loop device is told its image grew).
func (d *driver) NodeExpandVolume(_ context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	id, err := volumeID(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if p := req.GetVolumePath(); !filepath.IsAbs(p) {
		return nil, status.Errorf(codes.InvalidArgument, "volume path %q is not absolute", p)
	} else if _, err := os.Stat(p); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume path %s: %v", p, err)
	}
	if loop, err := loopOf(filepath.Join(d.volumeDir(id), diskImage)); err == nil && loop != "" {
		if out, err := exec.Command("losetup", "-c", loop).CombinedOutput(); err != nil {
			return nil, status.Errorf(codes.Internal, "losetup -c %s: %v: %s", loop, err, strings.TrimSpace(string(out)))
		}
	}
	return &csi.NodeExpandVolumeResponse{CapacityBytes: req.GetCapacityRange().GetRequiredBytes()}, nil
}

func (d *driver) NodeGetVolumeStats(_ context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(req.GetVolumePath(), &st); err != nil {
		return nil, status.Errorf(codes.NotFound, "%s: %v", req.GetVolumePath(), err)
	}
	bs := int64(st.Bsize)
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
		{Unit: csi.VolumeUsage_BYTES, Total: int64(st.Blocks) * bs, Available: int64(st.Bavail) * bs, Used: int64(st.Blocks-st.Bfree) * bs},
		{Unit: csi.VolumeUsage_INODES, Total: int64(st.Files), Available: int64(st.Ffree), Used: int64(st.Files - st.Ffree)},
	}}, nil
}

// bindMount bind-mounts source on target (made if missing), read-only if
// asked; a target already mounted is left as it is (the calls are
// idempotent).
func bindMount(source, target string, readonly bool) error {
	if err := os.MkdirAll(target, 0o750); err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	if ok, err := isMountPoint(target); err != nil {
		return status.Error(codes.Internal, err.Error())
	} else if ok {
		return nil
	}
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return status.Errorf(codes.Internal, "bind mount %s on %s: %v", source, target, err)
	}
	if readonly {
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			unix.Unmount(target, 0)
			return status.Errorf(codes.Internal, "remount %s read-only: %v", target, err)
		}
	}
	return nil
}

// bindMountFile bind-mounts the device node source on the file target
// (made if missing), read-only if asked; a target already mounted is left
// as it is.
func bindMountFile(source, target string, readonly bool) error {
	if ok, err := isMountPoint(target); err == nil && ok {
		return nil
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	f.Close()
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return status.Errorf(codes.Internal, "bind mount %s on %s: %v", source, target, err)
	}
	if readonly {
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			unix.Unmount(target, 0)
			return status.Errorf(codes.Internal, "remount %s read-only: %v", target, err)
		}
	}
	return nil
}

// unmount unmounts target if it is a mount point and, with remove,
// removes the directory (CSI: the plugin deletes the target path).
func unmount(target string, remove bool) error {
	if !filepath.IsAbs(target) {
		return status.Errorf(codes.InvalidArgument, "path %q is not absolute", target)
	}
	for {
		ok, err := isMountPoint(target)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return status.Error(codes.Internal, err.Error())
		}
		if !ok {
			break
		}
		if err := unix.Unmount(target, 0); err != nil {
			return status.Errorf(codes.Internal, "unmount %s: %v", target, err)
		}
	}
	if remove {
		if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
			return status.Error(codes.Internal, err.Error())
		}
	}
	return nil
}

// isMountPoint reports whether path is a mount point in
// /proc/self/mountinfo (a bind mount of a directory of the same
// filesystem has the same device as its parent, so stat cannot tell).
func isMountPoint(path string) (bool, error) {
	if _, err := os.Stat(path); err != nil {
		return false, err
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	clean := filepath.Clean(path)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && unescape(f[4]) == clean {
			return true, nil
		}
	}
	return false, nil
}

// unescape undoes mountinfo's octal escapes (\040 for a space, ...).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
