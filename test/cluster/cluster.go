// Package cluster runs a real Kubernetes control plane for podstart's test
// tiers: etcd and kube-apiserver v1.37.2 (built by build.sh into
// $PODSTART_E2E_DIR/bin), on loopback only, with certificates the test
// generates. It uses the standard library alone; clients talk to the API
// server with plain net/http or with the kubeconfig files it writes.
package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultNodeName is the node whose credentials Start issues when
// Options.NodeName is empty.
const DefaultNodeName = "node1"

// Options tune Start. The zero value is a working cluster.
type Options struct {
	// BinDir holds kube-apiserver and etcd; BinDir() when empty.
	BinDir string
	// NodeName is the node the node credentials are for (CN
	// system:node:<NodeName>, O system:nodes); DefaultNodeName when empty.
	NodeName string
	// ServiceCIDR is --service-cluster-ip-range; 10.0.0.0/24 when empty.
	// Its first address is in the serving certificate.
	ServiceCIDR string
	// Verbosity is kube-apiserver's --v; 0 when unset.
	Verbosity int
	// ExtraAPIServerArgs are appended to kube-apiserver's flags (a later
	// flag wins).
	ExtraAPIServerArgs []string
}

// Cluster is a running etcd and kube-apiserver. Every file it uses is
// under Dir: pki/ (certificates and keys), etcd/ (data), etcd.log,
// kube-apiserver.log, admin.kubeconfig and node.kubeconfig.
type Cluster struct {
	Dir      string
	Server   string // https://127.0.0.1:<port>
	EtcdURL  string // http://127.0.0.1:<port>
	NodeName string

	CAFile                      string
	AdminCertFile, AdminKeyFile string // CN admin, O system:masters
	NodeCertFile, NodeKeyFile   string // CN system:node:<NodeName>, O system:nodes
	AdminKubeconfig             string
	NodeKubeconfig              string

	// StartupTime is how long Start took, from the first certificate to
	// /readyz answering ok.
	StartupTime time.Duration

	ca *authority
	// kube-apiserver's binary and flags, for StartAPIServer.
	apiserverBin  string
	apiserverArgs []string

	mu    sync.Mutex
	procs []*process // in start order; Stop stops them in reverse
}

type process struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed when cmd.Wait returned
	err  error         // cmd.Wait's result, set before done closes
}

// BinDir is where build.sh puts the binaries: $PODSTART_E2E_DIR/bin, or
// /tmp/podstart-e2e/bin.
func BinDir() string {
	dir := os.Getenv("PODSTART_E2E_DIR")
	if dir == "" {
		dir = "/tmp/podstart-e2e"
	}
	return filepath.Join(dir, "bin")
}

// Binaries returns the paths of kube-apiserver and etcd in binDir (BinDir()
// when empty), or an error naming what is missing.
func Binaries(binDir string) (apiserver, etcd string, err error) {
	if binDir == "" {
		binDir = BinDir()
	}
	apiserver = filepath.Join(binDir, "kube-apiserver")
	etcd = filepath.Join(binDir, "etcd")
	var missing []string
	for _, p := range []string{apiserver, etcd} {
		if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return "", "", fmt.Errorf("missing %s: run 'bash test/cluster/build.sh'", strings.Join(missing, ", "))
	}
	return apiserver, etcd, nil
}

// Start generates the certificates, starts etcd and kube-apiserver with
// their files in dir (which must exist; an empty one is best), waits until
// the API server's /readyz is ok and writes the kubeconfig files. ctx
// bounds only the start; the processes run until Stop. On error nothing
// started is left running.
func Start(ctx context.Context, dir string, opts Options) (c *Cluster, err error) {
	begin := time.Now()
	apiserverBin, etcdBin, err := Binaries(opts.BinDir)
	if err != nil {
		return nil, err
	}
	if opts.NodeName == "" {
		opts.NodeName = DefaultNodeName
	}
	if opts.ServiceCIDR == "" {
		opts.ServiceCIDR = "10.0.0.0/24"
	}
	serviceIP, err := firstIP(opts.ServiceCIDR)
	if err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, errors.New("cluster.Start: no directory")
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	c = &Cluster{Dir: dir, NodeName: opts.NodeName}
	defer func() {
		if err != nil {
			c.Stop()
			c = nil
		}
	}()

	pki := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return c, err
	}
	ca, err := newAuthority()
	if err != nil {
		return c, err
	}
	c.ca = ca
	c.CAFile = filepath.Join(pki, "ca.crt")
	if err := writePEM(c.CAFile, "CERTIFICATE", ca.der); err != nil {
		return c, err
	}
	servingCert, servingKey, err := ca.issue(pki, "apiserver", pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth,
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, serviceIP})
	if err != nil {
		return c, err
	}
	c.AdminCertFile, c.AdminKeyFile, err = ca.issue(pki, "admin", pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return c, err
	}
	c.NodeCertFile, c.NodeKeyFile, err = ca.issue(pki, "node-"+opts.NodeName,
		pkix.Name{CommonName: "system:node:" + opts.NodeName, Organization: []string{"system:nodes"}}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return c, err
	}
	// What the API server presents to kubelets (logs, exec, port-forward).
	kubeletClientCert, kubeletClientKey, err := ca.issue(pki, "apiserver-kubelet-client",
		pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return c, err
	}
	saKey, saPub, err := serviceAccountKey(pki)
	if err != nil {
		return c, err
	}

	ports, err := freePorts(3)
	if err != nil {
		return c, err
	}
	c.EtcdURL = "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	c.Server = "https://127.0.0.1:" + strconv.Itoa(ports[2])

	err = c.run(etcdBin, "etcd",
		"--name=podstart",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+c.EtcdURL,
		"--advertise-client-urls="+c.EtcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=podstart="+peerURL,
		"--initial-cluster-state=new",
		"--unsafe-no-fsync", // a test's data: speed over durability
		"--log-level=warn",
	)
	if err != nil {
		return c, err
	}
	if err := c.waitHTTP(ctx, "etcd", &http.Client{Timeout: 5 * time.Second}, c.EtcdURL+"/health"); err != nil {
		return c, err
	}

	args := []string{
		"--etcd-servers=" + c.EtcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[2]),
		"--cert-dir=" + filepath.Join(dir, "apiserver-certs"), // unused: serving files are given
		"--tls-cert-file=" + servingCert,
		"--tls-private-key-file=" + servingKey,
		"--client-ca-file=" + c.CAFile,
		"--kubelet-client-certificate=" + kubeletClientCert,
		"--kubelet-client-key=" + kubeletClientKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saPub,
		"--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=" + opts.ServiceCIDR,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true",
		// Endpoints may not be loopback addresses, so the "kubernetes"
		// service gets no endpoints rather than a reconciler that fails.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
		"--v=" + strconv.Itoa(opts.Verbosity),
	}
	c.apiserverBin, c.apiserverArgs = apiserverBin, append(args, opts.ExtraAPIServerArgs...)
	if err := c.run(apiserverBin, "kube-apiserver", c.apiserverArgs...); err != nil {
		return c, err
	}
	admin, err := c.AdminClient()
	if err != nil {
		return c, err
	}
	if err := c.waitHTTP(ctx, "kube-apiserver", admin, c.Server+"/readyz"); err != nil {
		return c, err
	}

	c.AdminKubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := c.writeKubeconfig(c.AdminKubeconfig, "admin", c.AdminCertFile, c.AdminKeyFile); err != nil {
		return c, err
	}
	c.NodeKubeconfig = filepath.Join(dir, "node.kubeconfig")
	if err := c.writeKubeconfig(c.NodeKubeconfig, "system:node:"+opts.NodeName, c.NodeCertFile, c.NodeKeyFile); err != nil {
		return c, err
	}
	c.StartupTime = time.Since(begin)
	return c, nil
}

// run starts one binary in a process group of its own, its stdout and
// stderr going to <Dir>/<name>.log.
func (c *Cluster) run(bin, name string, args ...string) error {
	logPath := filepath.Join(c.Dir, name+".log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "# %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Dir = c.Dir
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		log.Close()
		close(p.done)
	}()
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return nil
}

// waitHTTP polls url until it answers 200, the process named name exits or
// ctx ends.
func (c *Cluster) waitHTTP(ctx context.Context, name string, client *http.Client, url string) error {
	p := c.process(name)
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, bytes.TrimSpace(body))
		} else {
			last = err.Error()
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v) before %s was ok; its log:\n%s", name, p.err, url, c.tail(name, 30))
		case <-ctx.Done():
			return fmt.Errorf("%s: %s not ok (%s): %w; its log:\n%s", name, url, last, ctx.Err(), c.tail(name, 30))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Cluster) process(name string) *process {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		if p.name == name {
			return p
		}
	}
	return nil
}

// tail returns the last n lines of a process's log.
func (c *Cluster) tail(name string, n int) string {
	b, err := os.ReadFile(filepath.Join(c.Dir, name+".log"))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// PIDs returns the process IDs of etcd, kube-apiserver and (once
// started) the controllers that have not exited, by name.
func (c *Cluster) PIDs() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := map[string]int{}
	for _, p := range c.procs {
		select {
		case <-p.done:
		default:
			pids[p.name] = p.cmd.Process.Pid
		}
	}
	return pids
}

// Stop stops what it started in reverse order (the controllers, then
// kube-apiserver, then etcd): SIGTERM to each one's process group, SIGKILL
// after 10 seconds, and waits until each has exited. It can be called more
// than once. The files stay in Dir.
func (c *Cluster) Stop() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	procs := c.procs
	c.procs = nil
	c.mu.Unlock()
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		select {
		case <-p.done:
		default:
			signalGroup(p.cmd.Process, false)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				signalGroup(p.cmd.Process, true)
				<-p.done
				errs = append(errs, fmt.Errorf("%s (pid %d) ignored SIGTERM for 10s and was killed", p.name, p.cmd.Process.Pid))
			}
		}
		// Anything left in its group (neither binary forks, but be sure).
		signalGroup(p.cmd.Process, true)
	}
	return errors.Join(errs...)
}

// StopAPIServer stops kube-apiserver alone (SIGTERM to its process group,
// SIGKILL after 10 seconds) and waits until it has exited; etcd and the
// controllers keep running. Clients get "connection refused" until
// StartAPIServer.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	var p *process
	for i, q := range c.procs {
		if q.name == "kube-apiserver" {
			p = q
			c.procs = append(c.procs[:i:i], c.procs[i+1:]...)
			break
		}
	}
	c.mu.Unlock()
	if p == nil {
		return errors.New("kube-apiserver is not running")
	}
	signalGroup(p.cmd.Process, false)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		signalGroup(p.cmd.Process, true)
		<-p.done
	}
	signalGroup(p.cmd.Process, true)
	return nil
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, with the
// same flags (the same port, certificates and etcd), and waits until its
// /readyz answers ok or ctx ends.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	if c.process("kube-apiserver") != nil {
		return errors.New("kube-apiserver is running")
	}
	if err := c.run(c.apiserverBin, "kube-apiserver", c.apiserverArgs...); err != nil {
		return err
	}
	admin, err := c.AdminClient()
	if err != nil {
		return err
	}
	return c.waitHTTP(ctx, "kube-apiserver", admin, c.Server+"/readyz")
}

// AdminClient is an HTTP client that trusts the cluster's CA and presents
// the admin certificate (O system:masters).
func (c *Cluster) AdminClient() (*http.Client, error) {
	return c.client(c.AdminCertFile, c.AdminKeyFile)
}

// NodeClient is an HTTP client that presents the node's certificate, as
// kubelet on NodeName would.
func (c *Cluster) NodeClient() (*http.Client, error) {
	return c.client(c.NodeCertFile, c.NodeKeyFile)
}

func (c *Cluster) client(certFile, keyFile string) (*http.Client, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("no certificate in %s", c.CAFile)
	}
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2: true,
		},
	}, nil
}

// NodeKubeconfigFor writes <Dir>/<name>.kubeconfig for another node (a
// kubelet beside the agent), with a client certificate of its own (CN
// system:node:<name>, O system:nodes), and returns its path.
func (c *Cluster) NodeKubeconfigFor(name string) (string, error) {
	pki := filepath.Join(c.Dir, "pki")
	certFile, keyFile, err := c.ca.issue(pki, "node-"+name,
		pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.Dir, name+".kubeconfig")
	if err := c.writeKubeconfig(path, "system:node:"+name, certFile, keyFile); err != nil {
		return "", err
	}
	return path, nil
}

// UserKubeconfig writes <Dir>/user-<user>.kubeconfig for a user of its
// own (a client certificate with CN user and O groups, signed by the
// cluster's CA, which also signs every other client here) and returns its
// path and the certificate's files.
func (c *Cluster) UserKubeconfig(user string, groups ...string) (kubeconfig, certFile, keyFile string, err error) {
	pki := filepath.Join(c.Dir, "pki")
	certFile, keyFile, err = c.ca.issue(pki, "user-"+user, pkix.Name{CommonName: user, Organization: groups}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return "", "", "", err
	}
	kubeconfig = filepath.Join(c.Dir, "user-"+user+".kubeconfig")
	if err := c.writeKubeconfig(kubeconfig, user, certFile, keyFile); err != nil {
		return "", "", "", err
	}
	return kubeconfig, certFile, keyFile, nil
}

func (c *Cluster) writeKubeconfig(path, user, certFile, keyFile string) error {
	const tmpl = `apiVersion: v1
kind: Config
clusters:
- name: podstart
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: %q
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: podstart
  context:
    cluster: podstart
    user: %q
current-context: podstart
`
	return os.WriteFile(path, fmt.Appendf(nil, tmpl, c.Server, c.CAFile, user, certFile, keyFile, user), 0o600)
}

// freePorts asks the kernel for n free loopback ports. They are free when
// asked; another process could take one before etcd or kube-apiserver
// binds it, which then fails Start with the log saying so.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// firstIP is the first usable address of cidr, the API server's service IP.
func firstIP(cidr string) (net.IP, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, fmt.Errorf("service CIDR: %w", err)
	}
	ip := append(net.IP(nil), n.IP.To16()...)
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	ip[len(ip)-1]++
	return ip, nil
}
