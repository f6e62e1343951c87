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
)

// ServeControl serves, on the unix socket path, what a test in another
// process needs to act as the world does on a runtime served with
// NewServer: a container that exits on its own, a sandbox that dies. It
// speaks HTTP:
//
//	POST /containers/<id>/exit?code=N&reason=R&message=M
//	POST /sandboxes/<id>/kill
//
// (ControlExitContainer and ControlKillSandbox are the client side). It
// returns a function that stops serving.
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
		code, err := strconv.Atoi(q.Get("code"))
		if err != nil && q.Get("code") != "" {
			http.Error(w, "bad code", http.StatusBadRequest)
			return
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

func reply(w http.ResponseWriter, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// ControlExitContainer makes a container exit through the control socket
// at path (ServeControl), from any process.
func ControlExitContainer(ctx context.Context, path, id string, e Exit) error {
	q := url.Values{"code": {strconv.Itoa(int(e.Code))}, "reason": {e.Reason}, "message": {e.Message}}
	return control(ctx, path, "/containers/"+url.PathEscape(id)+"/exit?"+q.Encode())
}

// ControlKillSandbox stops a sandbox and its containers through the
// control socket at path, as a sandbox whose pause process died.
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
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("fake control: %s", strings.TrimSpace(string(b)))
	}
	return nil
}
