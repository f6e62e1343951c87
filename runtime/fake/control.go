package fake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/podstart/podstart/runtime"
)

// ServeControl serves, on the unix socket path, what a test in another
// process needs to act as the world does on a runtime served with
// NewServer: a container whose process exits on its own (ExitContainer),
// a sandbox that dies (KillSandbox). It speaks HTTP:
//
//	POST /containers/<id>/exit?code=N&reason=R&message=M   (code defaults to 0)
//	POST /sandboxes/<id>/kill
//
// A success answers 204 No Content; an unknown ID 404, a container that is
// not running 409, a malformed request 400, each with the error's text.
// ControlExitContainer and ControlKillSandbox are the client side; from a
// shell, curl --unix-socket path -X POST http://fake/sandboxes/<id>/kill.
// ServeControl returns a function that stops serving and removes the
// socket.
func (r *Runtime) ServeControl(path string) (stop func() error, err error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /containers/{id}/exit", func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		var code int64
		if s := q.Get("code"); s != "" {
			var err error
			if code, err = strconv.ParseInt(s, 10, 32); err != nil {
				http.Error(w, fmt.Sprintf("exit code %q: %v", s, err), http.StatusBadRequest)
				return
			}
		}
		reply(w, r.ExitContainer(req.PathValue("id"), Exit{Code: int32(code), Reason: q.Get("reason"), Message: q.Get("message")}))
	})
	mux.HandleFunc("POST /sandboxes/{id}/kill", func(w http.ResponseWriter, req *http.Request) {
		reply(w, r.KillSandbox(req.PathValue("id")))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	return func() error {
		err := srv.Close()
		<-done
		return err
	}, nil
}

// httpStatus and grpcCode map the fake's error codes onto HTTP and back,
// so a control client's error is classified as the fake's own is.
var httpStatus = map[codes.Code]int{
	codes.NotFound:           http.StatusNotFound,
	codes.FailedPrecondition: http.StatusConflict,
	codes.InvalidArgument:    http.StatusBadRequest,
}

func grpcCode(httpCode int) codes.Code {
	for c, h := range httpStatus {
		if h == httpCode {
			return c
		}
	}
	return codes.Unknown
}

func reply(w http.ResponseWriter, err error) {
	if err == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	st := runtime.GRPCStatus(err)
	code, ok := httpStatus[st.Code()]
	if !ok {
		code = http.StatusInternalServerError
	}
	http.Error(w, st.Message(), code)
}

// ControlExitContainer makes a running container exit with e through the
// control socket at path (ServeControl), from any process. Its errors are
// classified: runtime.ErrNotFound for an unknown container; a container
// that is not running is codes.FailedPrecondition, as ExitContainer says.
func ControlExitContainer(ctx context.Context, path, id string, e Exit) error {
	q := url.Values{"code": {strconv.Itoa(int(e.Code))}, "reason": {e.Reason}, "message": {e.Message}}
	return control(ctx, path, "/containers/"+url.PathEscape(id)+"/exit?"+q.Encode())
}

// ControlKillSandbox makes a sandbox die through the control socket at
// path, as KillSandbox does: it becomes not ready and its containers exit
// 137. Its errors are classified as ControlExitContainer's.
func ControlKillSandbox(ctx context.Context, path, id string) error {
	return control(ctx, path, "/sandboxes/"+url.PathEscape(id)+"/kill")
}

func control(ctx context.Context, path, target string) error {
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://fake"+target, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("fake control: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return runtime.Classify(status.Error(grpcCode(resp.StatusCode), strings.TrimSpace(string(b))))
}
