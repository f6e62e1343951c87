package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSmoke(t *testing.T) {
	c := StartT(t, Options{NodeName: "smoke-node"})
	t.Logf("Start took %v (etcd %s, kube-apiserver %s, dir %s)", c.StartupTime.Round(time.Millisecond), c.EtcdURL, c.Server, c.Dir)

	admin, err := c.AdminClient()
	if err != nil {
		t.Fatal(err)
	}
	node, err := c.NodeClient()
	if err != nil {
		t.Fatal(err)
	}

	if code, body := call(t, admin, http.MethodGet, c.Server+"/readyz", nil); code != http.StatusOK || body != "ok" {
		t.Fatalf("GET /readyz: %d %q", code, body)
	}
	var version struct{ GitVersion string }
	_, body := call(t, admin, http.MethodGet, c.Server+"/version", nil)
	if err := json.Unmarshal([]byte(body), &version); err != nil {
		t.Fatalf("GET /version: %v: %s", err, body)
	}
	t.Logf("kube-apiserver %s", version.GitVersion)

	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "podstart-smoke"}}
	if code, body := call(t, admin, http.MethodPost, c.Server+"/api/v1/namespaces", ns); code != http.StatusCreated {
		t.Fatalf("create namespace: %d %s", code, body)
	}
	n := map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": c.NodeName, "labels": map[string]string{"podstart.dev/test": "smoke"}}}
	if code, body := call(t, admin, http.MethodPost, c.Server+"/api/v1/nodes", n); code != http.StatusCreated {
		t.Fatalf("create node: %d %s", code, body)
	}

	// The Node authorizer lets a node read its own Node object ...
	code, body := call(t, node, http.MethodGet, c.Server+"/api/v1/nodes/"+c.NodeName, nil)
	if code != http.StatusOK {
		t.Fatalf("node gets itself: %d %s", code, body)
	}
	var got struct {
		Metadata struct {
			Name   string
			Labels map[string]string
		}
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Metadata.Name != c.NodeName || got.Metadata.Labels["podstart.dev/test"] != "smoke" {
		t.Fatalf("node read back %+v", got.Metadata)
	}
	// ... and nothing makes it an administrator.
	other := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "not-for-nodes"}}
	if code, body := call(t, node, http.MethodPost, c.Server+"/api/v1/namespaces", other); code != http.StatusForbidden {
		t.Fatalf("node creates a namespace: want 403, got %d %s", code, body)
	}

	for _, f := range []string{c.AdminKubeconfig, c.NodeKubeconfig, filepath.Join(c.Dir, "etcd.log"), filepath.Join(c.Dir, "kube-apiserver.log")} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}

	pids := c.PIDs()
	if len(pids) != 2 {
		t.Fatalf("running processes %v, want etcd and kube-apiserver", pids)
	}
	stopped := time.Now()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Stop took %v", time.Since(stopped).Round(time.Millisecond))
	if left := c.PIDs(); len(left) != 0 {
		t.Errorf("still running after Stop: %v", left)
	}
	if left := processesMentioning(t, c.Dir); len(left) != 0 {
		t.Errorf("processes still running with %s on their command line: %v", c.Dir, left)
	}
}

// call sends v (if any) as JSON and returns the status and body.
func call(t *testing.T, client *http.Client, method, url string, v any) (int, string) {
	t.Helper()
	var body io.Reader
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if v != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// processesMentioning lists the processes whose command line contains s,
// from /proc (nothing where there is no /proc).
func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Logf("cannot list processes: %v", err)
		return nil
	}
	var found []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(s)) {
			continue
		}
		found = append(found, fmt.Sprintf("%d: %s", pid, strings.ReplaceAll(string(bytes.TrimRight(cmdline, "\x00")), "\x00", " ")))
	}
	return found
}

// A kube-apiserver that exits makes Start fail at once with its log, and
// leaves no etcd running.
func TestStartFailsWhenAPIServerExits(t *testing.T) {
	_, etcd, err := Binaries("")
	if err != nil {
		t.Skip(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(etcd, filepath.Join(bin, "etcd")); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho 'pretend flag error' >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(bin, "kube-apiserver"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, dir, Options{BinDir: bin})
	if err == nil {
		c.Stop()
		t.Fatal("Start succeeded with a kube-apiserver that exits")
	}
	if !strings.Contains(err.Error(), "kube-apiserver exited") || !strings.Contains(err.Error(), "pretend flag error") {
		t.Errorf("error does not say kube-apiserver exited, with its log: %v", err)
	}
	if left := processesMentioning(t, dir); len(left) != 0 {
		t.Errorf("processes left after a failed Start: %v", left)
	}
}

// TestStopStartAPIServer: kube-apiserver alone stops (refusing
// connections, etcd untouched) and starts again on the same address, with
// the objects made before.
func TestStopStartAPIServer(t *testing.T) {
	c := StartT(t, Options{})
	admin, err := c.AdminClient()
	if err != nil {
		t.Fatal(err)
	}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "survives"}}
	if code, body := call(t, admin, http.MethodPost, c.Server+"/api/v1/namespaces", ns); code != http.StatusCreated {
		t.Fatalf("create namespace: %d %s", code, body)
	}
	etcd := c.PIDs()["etcd"]
	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.PIDs()["kube-apiserver"]; ok {
		t.Fatal("kube-apiserver still listed after StopAPIServer")
	}
	if resp, err := admin.Get(c.Server + "/readyz"); err == nil {
		resp.Body.Close()
		t.Fatalf("GET /readyz answered %s while kube-apiserver is stopped", resp.Status)
	}
	if err := c.StopAPIServer(); err == nil {
		t.Error("a second StopAPIServer did not fail")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.StartAPIServer(ctx); err == nil {
		t.Error("StartAPIServer of a running kube-apiserver did not fail")
	}
	if got := c.PIDs()["etcd"]; got != etcd {
		t.Errorf("etcd's pid %d, was %d", got, etcd)
	}
	if code, body := call(t, admin, http.MethodGet, c.Server+"/api/v1/namespaces/survives", nil); code != http.StatusOK {
		t.Fatalf("get namespace after the restart: %d %s", code, body)
	}
}
