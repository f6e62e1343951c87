// Command registrar is the CSI tier's own stand-in for
// node-driver-registrar (github.com/kubernetes-csi/node-driver-registrar,
// which the Go module proxy does not serve): it asks the CSI driver on
// -csi-address its name (GetPluginInfo, as node-driver-registrar does),
// then serves the kubelet plugin registration API
// (k8s.io/kubelet/pkg/apis/pluginregistration/v1) on
// <-plugin-registration-dir>/<name>-reg.sock, the socket the node's
// plugin watcher finds. GetInfo answers type CSIPlugin, the driver's name,
// -kubelet-registration-path as its endpoint and versions ["1.0.0"]; a
// NotifyRegistrationStatus that says the node refused the plugin ends the
// process with status 1, as node-driver-registrar's does (its pod would
// restart). The socket is removed on SIGTERM or SIGINT.
package main

import (
	"context"
	"flag"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

func main() {
	csiAddress := flag.String("csi-address", "", "the CSI driver's node socket, asked for its name")
	kubeletPath := flag.String("kubelet-registration-path", "", "the driver's socket as the node dials it (the endpoint GetInfo answers)")
	regDir := flag.String("plugin-registration-dir", "", "the node's plugins registry (<root-dir>/plugins_registry)")
	flag.Parse()
	if *csiAddress == "" || *kubeletPath == "" || *regDir == "" {
		log.Fatal("registrar: -csi-address, -kubelet-registration-path and -plugin-registration-dir are required")
	}
	name, err := driverName(*csiAddress)
	if err != nil {
		log.Fatalf("registrar: GetPluginInfo on %s: %v", *csiAddress, err)
	}
	if err := os.MkdirAll(*regDir, 0o755); err != nil {
		log.Fatal(err)
	}
	sock := filepath.Join(*regDir, name+"-reg.sock")
	os.Remove(sock)
	l, err := net.Listen("unix", sock)
	if err != nil {
		log.Fatal(err)
	}
	s := grpc.NewServer()
	registerapi.RegisterRegistrationServer(s, &server{name: name, endpoint: *kubeletPath})
	go func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		<-sigs
		s.Stop()
		os.Remove(sock)
		os.Exit(0)
	}()
	log.Printf("registrar: %s registers at %s (endpoint %s)", name, sock, *kubeletPath)
	if err := s.Serve(l); err != nil {
		log.Fatal(err)
	}
}

func driverName(addr string) (string, error) {
	conn, err := grpc.NewClient("unix://"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		info, err := csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
		cancel()
		if err == nil {
			return info.GetName(), nil
		}
		log.Printf("registrar: waiting for the driver: %v", err)
		time.Sleep(time.Second)
	}
}

type server struct {
	registerapi.UnimplementedRegistrationServer
	name, endpoint string
}

func (s *server) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	log.Printf("registrar: GetInfo")
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: s.name, Endpoint: s.endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

func (s *server) NotifyRegistrationStatus(_ context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	log.Printf("registrar: NotifyRegistrationStatus registered=%v error=%q", st.PluginRegistered, st.Error)
	if !st.PluginRegistered {
		log.Printf("registrar: the node refused the plugin: %s", st.Error)
		os.Exit(1)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}
