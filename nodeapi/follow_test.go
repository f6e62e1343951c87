package nodeapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/containerlogs"
	"github.com/podstart/podstart/runtime/fake"
)

// runningLog is a runtime whose one container runs and logs to path.
type runningLog struct {
	*fake.Runtime
	path string
}

func (r runningLog) ContainerStatus(context.Context, string, bool) (*runtimeapi.ContainerStatusResponse, error) {
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: "c1", LogPath: r.path,
		State: runtimeapi.ContainerState_CONTAINER_RUNNING}}, nil
}

// followServer serves a running container's CRI log file with the real
// reader.
func followServer(t *testing.T) (srv *httptest.Server, logFile string) {
	t.Helper()
	logFile = filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(logFile, []byte("2026-11-26T10:00:00.000000000Z stdout F first\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", ContainerID: "containerd://c1",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	rt := runningLog{Runtime: fake.New(), path: logFile}
	s := newServer(t, Config{Insecure: true, Pods: staticPods{pod}, Runtime: rt,
		Logs: func(ctx context.Context, path, id string, opts *corev1.PodLogOptions, stdout, stderr io.Writer) error {
			return containerlogs.ReadLogs(ctx, path, id, containerlogs.NewLogOptions(opts, time.Now()), rt, stdout, stderr)
		}}, nil)
	srv = httptest.NewServer(s)
	return srv, logFile
}

// Followers that stop reading, or never read at all, hold no goroutine
// once they hang up; many at once each get the log as it grows.
func TestFollowersLeaveNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv, logFile := followServer(t)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	// A client that sends the request and never reads a byte.
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(silent, "GET /containerLogs/shop/web/app?follow=true HTTP/1.1\r\nHost: node\r\n\r\n")

	const n = 1000
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: -1}}
	defer client.CloseIdleConnections()
	bodies := make([]*bufio.Reader, n)
	var closers []io.Closer
	for i := range n {
		resp, err := client.Get(srv.URL + "/containerLogs/shop/web/app?follow=true")
		if err != nil {
			t.Fatal(err)
		}
		closers = append(closers, resp.Body)
		bodies[i] = bufio.NewReader(resp.Body)
		if line, err := bodies[i].ReadString('\n'); err != nil || line != "first\n" {
			t.Fatalf("follower %d: first line %q %v", i, line, err)
		}
	}
	f, err := os.OpenFile(logFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "2026-11-26T10:00:01.000000000Z stdout F second\n")
	f.Close()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if line, err := bodies[i].ReadString('\n'); err != nil || line != "second\n" {
				t.Errorf("follower %d: followed line %q %v", i, line, err)
			}
		}()
	}
	wg.Wait()
	// Everyone hangs up: the server's follows end (goleak above).
	silent.Close()
	for _, c := range closers {
		c.Close()
	}
	srv.CloseClientConnections()
}
