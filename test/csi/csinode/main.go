// Command csinode starts and cleans up the CSI tier's node for run.sh,
// reusing test/kubeletrun (the kubelet tier's configuration and cgroup
// root handling):
//
//	csinode kubelet -bin B -kubeconfig K -root R -node N -cri E -port P -cgroup-root /podstart-csi
//	    makes the cgroup root, writes R.yaml (kubeletrun.Config with
//	    kubelet's default pod cgroups under the root) and execs kubelet
//	    v1.37.2 in its default configuration otherwise
//	csinode cgroup-root -cgroup-root /podstart-csi
//	    makes the cgroup root only (for a podstart node)
//	csinode cleanup -cri E -root R -cgroup-root /podstart-csi
//	    stops and removes every sandbox on the tier's own containerd,
//	    unmounts what is left under R and removes the cgroup root
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/test/kubeletrun"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: csinode kubelet|cgroup-root|cleanup [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	bin := fs.String("bin", "", "kubelet binary")
	kubeconfig := fs.String("kubeconfig", "", "the node's kubeconfig")
	root := fs.String("root", "", "the node's root dir")
	node := fs.String("node", "", "node name")
	cri := fs.String("cri", "", "CRI endpoint (unix://...)")
	port := fs.Int("port", 10351, "kubelet's API port on 127.0.0.1")
	cgroupRoot := fs.String("cgroup-root", "", "the node's cgroup root")
	verbosity := fs.String("v", "2", "kubelet's --v")
	data := fs.String("data", "", "the driver's data dir (cleanup: its loop devices detached)")
	fs.Parse(os.Args[2:])
	var err error
	switch os.Args[1] {
	case "kubelet":
		err = execKubelet(*bin, *kubeconfig, *root, *node, *cri, *port, *cgroupRoot, *verbosity)
	case "cgroup-root":
		err = kubeletrun.MakeCgroupRoot(*cgroupRoot)
	case "cleanup":
		err = cleanup(*cri, *root, *cgroupRoot)
		err = errors.Join(err, detachLoops(*root, *data))
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "csinode:", err)
		os.Exit(1)
	}
}

func execKubelet(bin, kubeconfig, root, node, cri string, port int, cgroupRoot, verbosity string) error {
	if bin == "" || kubeconfig == "" || root == "" || node == "" || cri == "" || cgroupRoot == "" {
		return errors.New("kubelet needs -bin, -kubeconfig, -root, -node, -cri and -cgroup-root")
	}
	if err := kubeletrun.MakeCgroupRoot(cgroupRoot); err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	cfg := root + ".yaml"
	yaml := kubeletrun.Config{Endpoint: cri, Port: port, PodLogsDir: filepath.Join(root, "logs"),
		PodCgroups: true, CgroupRoot: cgroupRoot}.YAML()
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		return err
	}
	ip, err := kubeletrun.HostIP()
	if err != nil {
		return err
	}
	args := []string{bin, "--config=" + cfg, "--kubeconfig=" + kubeconfig, "--root-dir=" + root,
		"--hostname-override=" + node, "--node-ip=" + ip, "--v=" + verbosity}
	return syscall.Exec(bin, args, os.Environ())
}

func cleanup(cri, root, cgroupRoot string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	if cri != "" {
		if rt, err := runtime.Dial(ctx, cri, runtime.WithConnectTimeout(10*time.Second)); err != nil {
			errs = append(errs, err)
		} else {
			sbs, err := rt.ListPodSandbox(ctx, nil)
			errs = append(errs, err)
			for _, sb := range sbs {
				rt.StopPodSandbox(ctx, sb.Id)
				errs = append(errs, rt.RemovePodSandbox(ctx, sb.Id))
			}
			rt.Close()
		}
	}
	if root != "" {
		errs = append(errs, kubeletrun.UnmountUnder(root))
	}
	if cgroupRoot != "" {
		errs = append(errs, kubeletrun.RemoveCgroupRoot(ctx, cgroupRoot))
	}
	return errors.Join(errs...)
}

// detachLoops detaches the loop devices whose backing file is under one
// of dirs (a block volume's, left by a run cut short): the node's map
// paths first (they hold the driver's devices open), then the driver's.
func detachLoops(dirs ...string) error {
	var errs []error
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		devs, _ := filepath.Glob("/sys/block/loop*")
		for _, d := range devs {
			b, err := os.ReadFile(filepath.Join(d, "loop", "backing_file"))
			if err != nil || !strings.HasPrefix(strings.TrimSpace(string(b)), dir+"/") {
				continue
			}
			if out, err := exec.Command("losetup", "-d", "/dev/"+filepath.Base(d)).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("losetup -d /dev/%s: %v: %s", filepath.Base(d), err, out))
			}
		}
	}
	return errors.Join(errs...)
}
