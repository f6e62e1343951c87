// Command controlplane runs the conformance tier's control plane until it is
// told to stop: etcd and kube-apiserver (test/cluster), then
// kube-controller-manager and kube-scheduler, all v1.37.2 from
// $PODSTART_E2E_DIR/bin. When the API server and both controllers answer,
// it writes <dir>/ready (the kubeconfig paths, as shell variables) and
// waits for SIGTERM or SIGINT, then stops them in reverse order.
//
//	go run ./test/conformance/controlplane -dir /tmp/podstart-conf/cluster -node-name podstart-conf
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/podstart/podstart/test/cluster"
)

func main() {
	dir := flag.String("dir", "", "directory for the certificates, etcd's data, the logs and the kubeconfig files (made if missing)")
	nodeName := flag.String("node-name", cluster.DefaultNodeName, "the node the node credentials are for")
	verbosity := flag.Int("v", 0, "the --v of every component")
	flag.Parse()
	if err := run(*dir, *nodeName, *verbosity); err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(1)
	}
}

func run(dir, nodeName string, verbosity int) error {
	if dir == "" {
		return fmt.Errorf("-dir is required")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	sigs, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx, cancel := context.WithTimeout(sigs, 3*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, dir, cluster.Options{
		NodeName:  nodeName,
		Verbosity: verbosity,
		// The node's Hostname address is its name, which nothing resolves:
		// the API server reaches the node API (logs, exec, port-forward)
		// at its InternalIP.
		ExtraAPIServerArgs: []string{"--kubelet-preferred-address-types=InternalIP,Hostname"},
	})
	if err != nil {
		return err
	}
	defer c.Stop()
	if err := c.StartControllers(ctx, cluster.ControllersOptions{Verbosity: verbosity}); err != nil {
		return err
	}
	ready := fmt.Sprintf("SERVER=%s\nADMIN_KUBECONFIG=%s\nNODE_KUBECONFIG=%s\nCA_FILE=%s\n",
		c.Server, c.AdminKubeconfig, c.NodeKubeconfig, c.CAFile)
	if err := os.WriteFile(filepath.Join(dir, "ready.new"), []byte(ready), 0o600); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(dir, "ready.new"), filepath.Join(dir, "ready")); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "controlplane: ready at %s (etcd and kube-apiserver up in %s)\n", c.Server, c.StartupTime.Round(time.Millisecond))
	<-sigs.Done()
	os.Remove(filepath.Join(dir, "ready"))
	return c.Stop()
}
