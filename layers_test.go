package podstart_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/podstart/podstart"

// A rule says what one package of the module may import: which packages of
// the module (DESIGN.md's floors; nothing may import upward) and which
// outside packages it must not reach, even indirectly.
type rule struct {
	module []string // module packages it may import, relative to the root
	forbid []string // import path prefixes it must not reach
	// via lists packages whose imports are not followed: mounts may use
	// CRI's message types, whose package also holds the gRPC stubs, without
	// that counting as using gRPC.
	via []string
}

var (
	grpc      = "google.golang.org/grpc"
	clientGo  = "k8s.io/client-go"
	heavyDeps = []string{clientGo, "k8s.io/kubernetes", "go.opentelemetry.io", "k8s.io/component-base"}
)

// rules by package path relative to the module root; a trailing "/..."
// covers a subtree. Every package must be covered, so a new package has to
// state its place here.
var rules = map[string]rule{
	"":             {},
	"runtime":      {forbid: append([]string{"k8s.io/api/"}, heavyDeps...)},
	"runtime/fake": {module: []string{"runtime"}, forbid: heavyDeps},
	"credentials":  {forbid: append([]string{grpc, "k8s.io/cri-api"}, heavyDeps...)},
	"defaults":     {forbid: append([]string{grpc, "k8s.io/cri-api"}, heavyDeps...)},
	// validation: the API server's pod validation, standalone like defaults,
	// so that every floor (mounts included) can check what it uses.
	"validation": {forbid: append([]string{grpc, "google.golang.org/protobuf", "k8s.io/cri-api"}, heavyDeps...)},
	"mounts":     {module: []string{"internal/expansion", "validation"}, forbid: append([]string{grpc, "google.golang.org/protobuf", "k8s.io/cri-api"}, heavyDeps...)},
	// mounts/fake: a Mounter in memory, for callers' tests.
	"mounts/fake": {module: []string{"mounts"}, forbid: append([]string{grpc, "google.golang.org/protobuf", "k8s.io/cri-api"}, heavyDeps...)},
	"criconfig":   {module: []string{"mounts", "validation", "internal/..."}, forbid: heavyDeps},
	// admission: kubelet's admit handlers, pure policy over API types
	// beside criconfig (it imports nothing of the module).
	"admission": {forbid: append([]string{grpc, "google.golang.org/protobuf", "k8s.io/cri-api"}, heavyDeps...)},
	"images":    {module: []string{"credentials", "images/pullrecords", "runtime", "internal/..."}, forbid: heavyDeps},
	// pullrecords is bookkeeping: files and policies, no podstart runtime;
	// it reads its files through internal/statefile (shared with podsync),
	// which imports nothing of the module.
	"images/pullrecords": {module: []string{"internal/statefile"}, forbid: heavyDeps},
	"podsync":            {module: []string{"criconfig", "images", "mounts", "runtime", "validation", "internal/..."}, forbid: heavyDeps},
	"apistatus":          {module: []string{"podsync", "criconfig", "cgroups"}, forbid: heavyDeps},
	// apiobjects: what a pod refers to in the API, for podsync's seams.
	"apiobjects": {module: []string{"podsync", "images", "criconfig", "mounts", "validation"}, forbid: heavyDeps},
	// nodestatus: the Node, its status setters and heartbeat, for node agents.
	"nodestatus": {module: []string{"criconfig", "runtime", "internal/hostinfo"}, forbid: heavyDeps},
	// podstep: one sync of one pod and its API status, for tests and
	// tools; beside podworker, which does the same in loops.
	"podstep":   {module: []string{"podsync", "apistatus", "defaults", "validation"}, forbid: heavyDeps},
	"podworker": {module: []string{"podsync", "apistatus", "probes", "runtime", "validation", "cgroups", "containerlogs", "imagegc", "eviction", "admission", "criconfig"}, forbid: heavyDeps},
	// The node around the pods (issue 24): cgroups is floor 3 (the tree,
	// with values from criconfig); container logs, image GC and eviction
	// are floor 6, each one node concern over runtime and podsync's views.
	"cgroups":       {module: []string{"criconfig", "validation", "internal/..."}, forbid: heavyDeps},
	"containerlogs": {module: []string{"runtime", "podsync", "internal/..."}, forbid: heavyDeps},
	"imagegc":       {module: []string{"runtime", "podsync", "images", "images/pullrecords", "internal/..."}, forbid: heavyDeps},
	"eviction":      {module: []string{"runtime", "podsync", "apistatus", "criconfig", "images", "imagegc", "cgroups", "stats", "internal/..."}, forbid: heavyDeps},
	// volumemanager: kubelet's volume manager for CSI volumes (issue 38),
	// one node concern over small API getters and a NodeVolumes seam
	// (csi.Plugin serves it: CSI).
	"volumemanager": {module: []string{"mounts", "validation", "internal/...", "podsync", "csi", "stats", "criconfig"}, forbid: heavyDeps},
	// stats: the node's stats Summary and resource metrics (issue 25),
	// over CRI and the host, for eviction and the node API.
	"stats":  {module: []string{"runtime", "criconfig", "internal/..."}, forbid: heavyDeps},
	"probes": {module: []string{"podsync", "images", "runtime", "internal/..."}, forbid: heavyDeps},
	// pluginmanager: kubelet's plugin registration (floor 4), gRPC to node
	// plugins; handlers (csi, DRA) implement its Handler without importing it.
	"pluginmanager": {module: []string{"internal/..."}, forbid: heavyDeps},
	// nodeapi: the node's HTTP API, a top floor beside statusmanager,
	// serving podworker's pods and the runtime's streams (no client-go).
	"nodeapi": {module: []string{"podworker", "podsync", "runtime"}, forbid: heavyDeps},
	// nodemetrics: kubelet's /metrics, /metrics/probes and /metrics/cadvisor
	// (issue 41), a top floor beside nodeapi, fed by the hooks of the
	// floors below (client_golang, not component-base).
	"nodemetrics": {module: []string{"podworker", "podsync", "probes", "eviction", "imagegc", "images"}, forbid: heavyDeps},
	// statusmanager: the top floor, writing podworker's statuses to an
	// API server through its own small Client (no client-go).
	"statusmanager":      {module: []string{"podworker", "apistatus", "podsync"}, forbid: heavyDeps},
	"statusmanager/fake": {forbid: heavyDeps},
	"internal/...":       {module: []string{"runtime", "runtime/fake", "internal/..."}, forbid: heavyDeps},
	// statefile: the standard library only, so pullrecords may use it.
	"internal/statefile": {forbid: append([]string{grpc, "google.golang.org/protobuf", "k8s.io/"}, heavyDeps...)},
	"examples/...":       {module: []string{"..."}, forbid: []string{"k8s.io/kubernetes", clientGo}},
	// The reference node agent talks to an API server: client-go here only.
	"examples/nodeagent": {module: []string{"..."}, forbid: []string{"k8s.io/kubernetes"}},
	"test/...":           {module: []string{"..."}, forbid: []string{"k8s.io/kubernetes", clientGo}},
	// bench: the on-demand steady-state tier (issue 27), over the
	// library as a user's agent would use it.
	"bench/...": {module: []string{"..."}, forbid: []string{"k8s.io/kubernetes", clientGo}},
	// The bench program itself (package main, never imported): its cluster
	// mode (issue 41) drives a kube-apiserver as the reference node agent
	// does, with client-go; its commands below keep the rule.
	"bench": {module: []string{"..."}, forbid: []string{"k8s.io/kubernetes"}},

	// devicemanager: kubelet's device manager (issue 39), floor 6 beside
	// volumemanager: one node concern (plugins' devices, allocation,
	// checkpoint) whose admit handler is admission's and whose container
	// options are criconfig's; its checkpoint package keeps kubelet's
	// type names (they are in the checksum) and needs no gRPC.
	"devicemanager":            {module: []string{"admission", "criconfig", "devicemanager/checkpoint"}, forbid: heavyDeps},
	"devicemanager/checkpoint": {forbid: append([]string{grpc, "google.golang.org/protobuf", "k8s.io/cri-api"}, heavyDeps...)},
	// podresources: the pod-resources gRPC API, a node API server (floor
	// 8 beside nodeapi) over small providers: it imports nothing of the
	// module.
	"podresources": {forbid: heavyDeps},

	// csi: the CSI node client and driver registry (issue 38), floor 4;
	// csi/fake: a CSI node driver for tests.
	"csi":      {module: []string{"internal/...", "validation"}, forbid: heavyDeps},
	"csi/fake": {forbid: heavyDeps},

	// dra: kubelet's DRA manager (issue 39), floor 6 beside volumemanager;
	// criconfig for the DeviceOptions it gives podsync, pluginmanager's
	// Handler and podsync's seams by method set alone.
	"dra": {module: []string{"criconfig", "internal/..."}, forbid: heavyDeps},
	// dra/fake: a DRA driver for tests (registration and dra.v1 sockets).
	"dra/fake": {forbid: heavyDeps},
	// staticpods: kubelet's file and HTTP pod sources and mirror pods
	// (issue 40), floor 8 beside the API-server pod source and
	// statusmanager: it decides where pods come from and writes mirror pods
	// to the API server through its own small client, so it sits above
	// validation and defaults (which it applies as kubelet's sources do) and
	// below podworker's users (agents feed its Updates to podworker). It
	// imports no podworker: a source only produces pods.
	"staticpods": {module: []string{"defaults", "validation", "staticpods/internal/core"}, forbid: append([]string{grpc, "k8s.io/cri-api"}, heavyDeps...)},
	// staticpods/internal/core: kubelet's internal pod type, for the UID hash.
	"staticpods/internal/core": {forbid: append([]string{grpc, "k8s.io/cri-api"}, heavyDeps...)},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

func listPackages(t *testing.T) map[string]*pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[p.ImportPath] = &p
	}
	return pkgs
}

func matches(pattern, rel string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == base || strings.HasPrefix(rel, base+"/")
	}
	return pattern == rel
}

func ruleFor(rel string) (rule, bool) {
	if r, ok := rules[rel]; ok {
		return r, true
	}
	for pattern, r := range rules {
		if strings.HasSuffix(pattern, "/...") && matches(pattern, rel) {
			return r, true
		}
	}
	return rule{}, false
}

func TestLayers(t *testing.T) {
	pkgs := listPackages(t)
	var own []string
	for path := range pkgs {
		if path == module || strings.HasPrefix(path, module+"/") {
			own = append(own, path)
		}
	}
	sort.Strings(own)
	for _, path := range own {
		rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
		r, ok := ruleFor(rel)
		if !ok {
			t.Errorf("package %q has no rule in layers_test.go: say which packages it may import", rel)
			continue
		}
		for _, imp := range pkgs[path].Imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			irel := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			allowed := false
			for _, m := range r.module {
				allowed = allowed || matches(m, irel)
			}
			if !allowed {
				t.Errorf("%s imports %s, which its layer does not allow", rel, irel)
			}
		}
		if chain := reach(pkgs, path, r); chain != "" {
			t.Errorf("%s reaches a forbidden package: %s", rel, chain)
		}
	}
}

// reach returns the import chain from root to the first forbidden package,
// or "".
func reach(pkgs map[string]*pkg, root string, r rule) string {
	parent := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, f := range r.forbid {
			if strings.HasPrefix(cur, f) {
				chain := []string{cur}
				for p := parent[cur]; p != ""; p = parent[p] {
					chain = append([]string{p}, chain...)
				}
				return strings.Join(chain, " → ")
			}
		}
		skip := false
		for _, v := range r.via {
			skip = skip || cur == v
		}
		if skip || pkgs[cur] == nil {
			continue
		}
		for _, imp := range pkgs[cur].Imports {
			if _, seen := parent[imp]; !seen {
				parent[imp] = cur
				queue = append(queue, imp)
			}
		}
	}
	return ""
}

// TestLayerRuleBites makes sure the check can fail, on the real graph and
// on a made-up one where "via" stops the walk.
func TestLayerRuleBites(t *testing.T) {
	pkgs := listPackages(t)
	chain := reach(pkgs, module+"/runtime/fake", rule{forbid: []string{grpc}})
	if !strings.HasPrefix(chain, module+"/runtime/fake → ") || !strings.Contains(chain, grpc) {
		t.Fatalf("forbidden gRPC not found from runtime/fake: %q", chain)
	}
	graph := map[string]*pkg{
		"a":         {ImportPath: "a", Imports: []string{"types"}},
		"types":     {ImportPath: "types", Imports: []string{grpc + "/x"}},
		grpc + "/x": {ImportPath: grpc + "/x"},
	}
	if got := reach(graph, "a", rule{forbid: []string{grpc}}); got != "a → types → "+grpc+"/x" {
		t.Errorf("chain = %q", got)
	}
	if got := reach(graph, "a", rule{forbid: []string{grpc}, via: []string{"types"}}); got != "" {
		t.Errorf("via not honoured: %q", got)
	}
}
