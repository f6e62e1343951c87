// Command fakecri serves runtime/fake on a unix socket for the bench tier,
// in a process of its own so that its CPU is counted in neither the
// kubelet's nor podstart's. It is the fake as a kubelet needs it
// (containerd's cgroup driver, handlers and features, log files made at
// start, an image filesystem on a directory that exists) with the given
// images present; containers run until stopped unless their command
// exits (fake.CommandStart).
//
// It counts the CRI calls it serves by method and answers, on a second
// unix socket, GET /stats: the counts since it started, and how many
// sandboxes are ready and containers running. The fake's own record of
// calls is dropped every few seconds so that a long run does not grow.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime/fake"
)

// Stats is GET /stats's answer.
type Stats struct {
	Calls     map[string]int64 `json:"calls"`     // CRI calls served since start, by method
	Sandboxes int              `json:"sandboxes"` // ready sandboxes
	Running   int              `json:"running"`   // running containers
}

type internalKey struct{}

func main() {
	socket := flag.String("socket", "", "the CRI socket to serve")
	control := flag.String("stats-socket", "", "the unix socket that answers GET /stats")
	imageFs := flag.String("image-fs", "", "a directory that exists, reported as the image filesystem's mount point")
	images := flag.String("images", "docker.io/library/busybox:1.35", "comma-separated images present on the runtime")
	flag.Parse()
	if *socket == "" || *control == "" || *imageFs == "" {
		log.Fatal("fakecri: -socket, -stats-socket and -image-fs are required")
	}
	f := fake.New(
		fake.WithImages(strings.Split(*images, ",")...),
		fake.WithLogFiles(),
		fake.WithCgroupDriver(runtimeapi.CgroupDriver_CGROUPFS),
		fake.WithRuntimeHandlers(fake.ContainerdHandlers()...),
		fake.WithRuntimeFeatures(fake.ContainerdFeatures()),
		fake.WithImageFsMountpoint(*imageFs),
	)
	var mu sync.Mutex
	calls := map[string]int64{}
	f.Intercept(func(ctx context.Context, method string, _ proto.Message) error {
		if ctx.Value(internalKey{}) == nil {
			mu.Lock()
			calls[method]++
			mu.Unlock()
		}
		return nil
	})
	srv := fake.NewServer(f, grpc.MaxRecvMsgSize(16<<20), grpc.MaxSendMsgSize(16<<20))
	if _, err := srv.ServeUnix(*socket); err != nil {
		log.Fatal(err)
	}
	go func() {
		for range time.Tick(5 * time.Second) {
			f.ResetCalls()
		}
	}()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithValue(r.Context(), internalKey{}, true)
		var st Stats
		sbs, err := f.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}})
		if err == nil {
			var cs []*runtimeapi.Container
			cs, err = f.ListContainers(ctx, &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
			st.Sandboxes, st.Running = len(sbs), len(cs)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		mu.Lock()
		st.Calls = make(map[string]int64, len(calls))
		for m, n := range calls {
			st.Calls[m] = n
		}
		mu.Unlock()
		json.NewEncoder(w).Encode(st)
	})
	if err := os.Remove(*control); err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Fatal(err)
	}
	lis, err := net.Listen("unix", *control)
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(lis, mux)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	lis.Close()
	srv.Stop()
}
