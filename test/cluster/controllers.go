package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// ControllersOptions tune StartControllers. The zero value is a working
// pair.
type ControllersOptions struct {
	// BinDir holds kube-controller-manager and kube-scheduler; BinDir()
	// when empty.
	BinDir string
	// Controllers is kube-controller-manager's --controllers; "*" (every
	// controller on by default) when empty.
	Controllers string
	// Verbosity is the --v of both; 0 when unset.
	Verbosity int
}

// StartControllers starts kube-controller-manager and kube-scheduler
// v1.37.2 beside the running API server, as the admin user, without leader
// election and on free loopback ports, and waits until both answer
// /healthz. kube-controller-manager signs service account tokens with the
// cluster's key and publishes its CA (kube-root-ca.crt); with the default
// controllers it also deletes namespaces, collects garbage and makes the
// default service accounts a real cluster's tests expect. Both log to
// <Dir>/<name>.log and are stopped by Stop, before kube-apiserver.
func (c *Cluster) StartControllers(ctx context.Context, opts ControllersOptions) error {
	binDir := opts.BinDir
	if binDir == "" {
		binDir = BinDir()
	}
	kcm := filepath.Join(binDir, "kube-controller-manager")
	sched := filepath.Join(binDir, "kube-scheduler")
	for _, p := range []string{kcm, sched} {
		if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return fmt.Errorf("missing %s: run 'bash test/conformance/build.sh'", p)
		}
	}
	if c.AdminKubeconfig == "" {
		return fmt.Errorf("cluster.StartControllers: the cluster is not started")
	}
	if opts.Controllers == "" {
		opts.Controllers = "*"
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	v := "--v=" + strconv.Itoa(opts.Verbosity)
	err = c.run(kcm, "kube-controller-manager",
		"--kubeconfig="+c.AdminKubeconfig,
		"--authentication-kubeconfig="+c.AdminKubeconfig,
		"--authorization-kubeconfig="+c.AdminKubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports[0]),
		"--cert-dir="+filepath.Join(c.Dir, "kube-controller-manager-certs"),
		"--controllers="+opts.Controllers,
		"--service-account-private-key-file="+filepath.Join(c.Dir, "pki", "sa.key"),
		"--root-ca-file="+c.CAFile,
		"--use-service-account-credentials=true",
		"--profiling=false",
		v,
	)
	if err != nil {
		return err
	}
	err = c.run(sched, "kube-scheduler",
		"--kubeconfig="+c.AdminKubeconfig,
		"--authentication-kubeconfig="+c.AdminKubeconfig,
		"--authorization-kubeconfig="+c.AdminKubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports[1]),
		"--cert-dir="+filepath.Join(c.Dir, "kube-scheduler-certs"),
		"--profiling=false",
		v,
	)
	if err != nil {
		return err
	}
	// Their serving certificates are self-signed; /healthz is all we ask.
	insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a loopback health check of our own child
	}}
	if err := c.waitHTTP(ctx, "kube-controller-manager", insecure, "https://127.0.0.1:"+strconv.Itoa(ports[0])+"/healthz"); err != nil {
		return err
	}
	return c.waitHTTP(ctx, "kube-scheduler", insecure, "https://127.0.0.1:"+strconv.Itoa(ports[1])+"/healthz")
}
