// Package criproxy is a recording CRI proxy for tests: a gRPC server on a
// unix socket that forwards every call, unary or streaming, to a real
// runtime's socket as raw frames (nothing it forwards is decoded and encoded
// again) and records each request and response decoded as cri-api v1
// messages.
//
// With Guard, calls that would stop or remove what the proxy's client did
// not create through it (sandboxes, containers) and image removals are
// answered with PermissionDenied instead of being forwarded: a kubelet on a
// shared runtime otherwise kills every pod it does not know.
package criproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Call is one recorded call: its full method name, the requests and
// responses decoded as cri-api v1 messages (nil where the method is
// unknown to cri-api v1 or a frame did not decode) and how it ended.
type Call struct {
	Method    string
	Requests  []proto.Message
	Responses []proto.Message
	Err       error // the status the caller got; nil on success
	Start     time.Time
}

// Request returns the call's first request, or nil.
func (c *Call) Request() proto.Message {
	if len(c.Requests) == 0 {
		return nil
	}
	return c.Requests[0]
}

// Response returns the call's first response, or nil.
func (c *Call) Response() proto.Message {
	if len(c.Responses) == 0 {
		return nil
	}
	return c.Responses[0]
}

// Proxy is a running recording proxy.
type Proxy struct {
	socket  string
	backend *grpc.ClientConn
	server  *grpc.Server
	guard   bool
	private bool // Private: lists answer only what this proxy made
	done    chan struct{}

	countOnly bool
	counts    map[string]int // by full method name

	mu    sync.Mutex
	calls []*Call
	owned map[string]bool // sandbox and container IDs created through the proxy
}

// Option configures a Proxy.
type Option func(*Proxy)

// Guard refuses, without forwarding, Stop/Remove of sandboxes and
// containers not created through this proxy, UpdateContainerResources of
// such containers, and every RemoveImage.
func Guard() Option { return func(p *Proxy) { p.guard = true } }

// CountOnly keeps, instead of every call, only how many calls of each
// method were made (Counts): for a long run, whose calls would not fit in
// memory. Calls then returns none.
func CountOnly() Option { return func(p *Proxy) { p.countOnly = true } }

// Start listens on socket (a path; an old socket file there is removed) and
// forwards to backend ("unix:///path" or a path).
func Start(socket, backend string, opts ...Option) (*Proxy, error) {
	target := backend
	if !strings.Contains(target, "://") {
		target = "unix://" + target
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		return nil, err
	}
	if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		conn.Close()
		return nil, err
	}
	l, err := net.Listen("unix", socket)
	if err != nil {
		conn.Close()
		return nil, err
	}
	p := &Proxy{socket: socket, backend: conn, owned: map[string]bool{}, counts: map[string]int{}, done: make(chan struct{})}
	for _, o := range opts {
		o(p)
	}
	p.server = grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(p.handle),
		grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(64<<20))
	go func() {
		defer close(p.done)
		p.server.Serve(l)
	}()
	return p, nil
}

// Endpoint is the proxy's CRI endpoint, unix://<socket>.
func (p *Proxy) Endpoint() string { return "unix://" + p.socket }

// Close stops serving (ending calls in flight) and closes the connection
// to the runtime.
func (p *Proxy) Close() error {
	p.server.Stop()
	<-p.done
	os.Remove(p.socket)
	return p.backend.Close()
}

// Calls returns a copy of the calls recorded so far, in the order they
// started.
func (p *Proxy) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Call, len(p.calls))
	for i, c := range p.calls {
		out[i] = *c
		out[i].Requests = slices.Clone(c.Requests)
		out[i].Responses = slices.Clone(c.Responses)
	}
	return out
}

// Counts returns how many calls of each method (full method name) were
// made so far.
func (p *Proxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.counts)
}

// Owned reports whether the sandbox or container ID was created through
// the proxy.
func (p *Proxy) Owned(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.owned[id]
}

// frame is one gRPC message, kept as the bytes on the wire.
type frame struct{ b []byte }

// rawCodec moves frames through unchanged.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("criproxy: cannot marshal %T", v)
	}
	return f.b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("criproxy: cannot unmarshal into %T", v)
	}
	f.b = append([]byte(nil), data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// messageTypes finds the request and response types of a cri-api v1
// method, "/runtime.v1.RuntimeService/RunPodSandbox".
func messageTypes(method string) (in, out protoreflect.MessageType) {
	svc, name, ok := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	if !ok {
		return nil, nil
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, nil
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, nil
	}
	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		return nil, nil
	}
	in, _ = protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
	out, _ = protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
	return in, out
}

// make sure cri-api's descriptors are registered.
var _ = runtimeapi.File_staging_src_k8s_io_cri_api_pkg_apis_runtime_v1_api_proto

func decode(t protoreflect.MessageType, b []byte) proto.Message {
	if t == nil {
		return nil
	}
	m := t.New().Interface()
	if err := proto.Unmarshal(b, m); err != nil {
		return nil
	}
	return m
}

// refuse says whether Guard keeps the request from the runtime.
func (p *Proxy) refuse(req proto.Message) bool {
	if !p.guard || req == nil {
		return false
	}
	var id string
	switch r := req.(type) {
	case *runtimeapi.StopPodSandboxRequest:
		id = r.PodSandboxId
	case *runtimeapi.RemovePodSandboxRequest:
		id = r.PodSandboxId
	case *runtimeapi.StopContainerRequest:
		id = r.ContainerId
	case *runtimeapi.RemoveContainerRequest:
		id = r.ContainerId
	case *runtimeapi.UpdateContainerResourcesRequest:
		id = r.ContainerId
	case *runtimeapi.RemoveImageRequest:
		return true
	default:
		return false
	}
	return !p.Owned(id)
}

func (p *Proxy) own(resp proto.Message) {
	var id string
	switch r := resp.(type) {
	case *runtimeapi.RunPodSandboxResponse:
		id = r.PodSandboxId
	case *runtimeapi.CreateContainerResponse:
		id = r.ContainerId
	default:
		return
	}
	p.mu.Lock()
	p.owned[id] = true
	p.mu.Unlock()
}

// handle forwards one call of any method.
func (p *Proxy) handle(_ any, ss grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(ss)
	if !ok {
		return status.Error(codes.Internal, "criproxy: no method")
	}
	inType, outType := messageTypes(method)
	call := &Call{Method: method, Start: time.Now()}
	p.mu.Lock()
	p.counts[method]++
	if !p.countOnly {
		p.calls = append(p.calls, call)
	}
	p.mu.Unlock()
	err := p.forward(ss, method, call, inType, outType)
	p.mu.Lock()
	call.Err = err
	p.mu.Unlock()
	return err
}

func (p *Proxy) forward(ss grpc.ServerStream, method string, call *Call, inType, outType protoreflect.MessageType) error {
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		ctx = metadata.NewOutgoingContext(ctx, md.Copy())
	}
	// Read the first request before opening the upstream stream, so Guard
	// can refuse it; CRI's streaming methods all start with one request.
	first := &frame{}
	if err := ss.RecvMsg(first); err != nil {
		if err == io.EOF {
			first = nil
		} else {
			return err
		}
	}
	if first != nil {
		req := decode(inType, first.b)
		p.mu.Lock()
		call.Requests = append(call.Requests, req)
		p.mu.Unlock()
		if p.refuse(req) {
			return status.Errorf(codes.PermissionDenied, "criproxy: %s of something not created through this proxy is not forwarded", method)
		}
	}
	cs, err := p.backend.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return err
	}
	upErr := make(chan error, 1)
	go func() {
		if first != nil {
			if err := cs.SendMsg(first); err != nil {
				upErr <- err
				return
			}
			for {
				f := &frame{}
				if err := ss.RecvMsg(f); err != nil {
					if err == io.EOF {
						break
					}
					upErr <- err
					return
				}
				req := decode(inType, f.b)
				p.mu.Lock()
				call.Requests = append(call.Requests, req)
				p.mu.Unlock()
				if err := cs.SendMsg(f); err != nil {
					upErr <- err
					return
				}
			}
		}
		upErr <- cs.CloseSend()
	}()
	headerSent := false
	for {
		f := &frame{}
		err := cs.RecvMsg(f)
		if !headerSent {
			if h, herr := cs.Header(); herr == nil && len(h) > 0 {
				ss.SendHeader(h)
			}
			headerSent = true
		}
		if err != nil {
			ss.SetTrailer(cs.Trailer())
			if err == io.EOF {
				if e := <-upErr; e != nil && e != io.EOF {
					return e
				}
				return nil
			}
			return err
		}
		resp := decode(outType, f.b)
		if p.private {
			if f, err = p.keepOwned(resp, f); err != nil {
				return err
			}
		}
		p.mu.Lock()
		call.Responses = append(call.Responses, resp)
		p.mu.Unlock()
		p.own(resp)
		if err := ss.SendMsg(f); err != nil {
			return err
		}
	}
}
