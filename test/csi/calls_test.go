package csi

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// call is one line of bindcsi's record (-calls).
type call struct {
	Time     string          `json:"time"`
	Socket   string          `json:"socket"`
	Method   string          `json:"method"`
	Request  json.RawMessage `json:"request"`
	Response json.RawMessage `json:"response,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// names maps what differs from run to run and node to node (pod UIDs, PV
// names, volume handles, the root dir, hashes of them) to stable labels.
type names struct {
	mu      sync.Mutex
	root    string
	replace map[string]string
}

func newNames(root string) *names {
	return &names{root: root, replace: map[string]string{}}
}

func (n *names) add(from, to string) {
	if from == "" {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.replace[from] = to
}

// pod labels the pod's UID and the IDs kubelet gives its CSI inline
// volumes: "csi-" and the SHA-256 of the UID and the volume's name
// (pkg/volume/csi makeVolumeHandle), so a node that names them otherwise
// shows as a difference, not as the same <sha256>.
func (n *names) pod(p *corev1.Pod) {
	label := p.Namespace + "/" + p.Name
	n.add(string(p.UID), "<uid "+label+">")
	for _, v := range p.Spec.Volumes {
		if v.CSI != nil {
			n.add(sha(string(p.UID)+v.Name), "<sha256 of uid "+label+" and "+v.Name+">")
		}
	}
}

// pv labels a PV's name and the directory kubelet stages its volume in:
// the SHA-256 of its volume handle (pkg/volume/csi makeDeviceMountPath).
func (n *names) pv(name, claim, handle string) {
	n.add(name, "<pv "+claim+">")
	n.add(sha(handle), "<sha256 of handle "+claim+">")
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

var (
	sha256Re   = regexp.MustCompile(`\b[0-9a-f]{64}\b`)
	identityRe = regexp.MustCompile(`\b\d{10,}-\d+-[a-z0-9.-]+\b`) // the provisioner's identity: <ms>-<rand>-<driver>
)

// normalise rewrites a call's JSON with the labels, longest first (a PV's
// name holds a claim's UID), then hashes and the provisioner identity.
func (n *names) normalise(s string) string {
	n.mu.Lock()
	keys := make([]string, 0, len(n.replace))
	for k := range n.replace {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	pairs := []string{n.root, "<root>"}
	for _, k := range keys {
		pairs = append(pairs, k, n.replace[k])
	}
	n.mu.Unlock()
	s = strings.NewReplacer(pairs...).Replace(s)
	s = sha256Re.ReplaceAllString(s, "<sha256>")
	return identityRe.ReplaceAllString(s, "<provisioner-identity>")
}

// callsOffset is the record's size now: the start of a test's calls.
func (tr *tier) callsOffset() int64 {
	st, err := os.Stat(tr.calls)
	if err != nil {
		tr.t.Fatal(err)
	}
	return st.Size()
}

// callsSince reads the calls recorded since offset.
func (tr *tier) callsSince(off int64) []call {
	tr.t.Helper()
	f, err := os.Open(tr.calls)
	if err != nil {
		tr.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(off, 0); err != nil {
		tr.t.Fatal(err)
	}
	var out []call
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var c call
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			tr.t.Fatalf("%s: %v", tr.calls, err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		tr.t.Fatal(err)
	}
	return out
}

// nodeCall is a node-socket call as the report keeps it: the method's
// short name, its request normalised, and its error if any.
type nodeCall struct {
	Method  string         `json:"method"`
	Request map[string]any `json:"request,omitempty"`
	Error   string         `json:"error,omitempty"`
}

// report is what a test writes to <report>/<test>-<node kind>.json.
type report struct {
	Node  string     `json:"node"`
	Calls []nodeCall `json:"calls"` // in order, NodeGetVolumeStats and the NodeGetCapabilities before each left out (timer driven)
	// ByVolume holds each volume's stage, publish, unpublish and unstage
	// calls in order, keyed by its normalised volume_id: what must be the
	// same on every node whatever the interleaving of pods.
	ByVolume map[string][]nodeCall `json:"by_volume"`
	// Counts of the calls without a volume (capabilities, info).
	Counts map[string]int `json:"counts"`
	// Objects are API objects the node wrote, normalised (the CSINode's
	// spec), compared as they are.
	Objects map[string]any `json:"objects,omitempty"`
}

// normalisedObject is v as JSON with the report's labels.
func (tr *tier) normalisedObject(v any) any {
	tr.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tr.t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal([]byte(tr.names.normalise(string(b))), &out); err != nil {
		tr.t.Fatal(err)
	}
	return out
}

// nodeReport normalises the node socket's calls since offset.
func (tr *tier) nodeReport(off int64) report {
	tr.t.Helper()
	r := report{Node: tr.kind, ByVolume: map[string][]nodeCall{}, Counts: map[string]int{}}
	var node []call
	for _, c := range tr.callsSince(off) {
		if c.Socket == "node" {
			node = append(node, c)
		}
	}
	short := func(c call) string { return c.Method[strings.LastIndex(c.Method, "/")+1:] }
	for i, c := range node {
		method := short(c)
		// Volume stats are timer driven, and so is the capabilities
		// check kubelet makes right before each.
		if method == "NodeGetVolumeStats" || method == "NodeGetCapabilities" && i+1 < len(node) && short(node[i+1]) == "NodeGetVolumeStats" {
			continue
		}
		nc := nodeCall{Method: method, Error: tr.names.normalise(c.Error)}
		if err := json.Unmarshal([]byte(tr.names.normalise(string(c.Request))), &nc.Request); err != nil {
			tr.t.Fatalf("a recorded request: %v", err)
		}
		r.Calls = append(r.Calls, nc)
		if id, ok := nc.Request["volume_id"].(string); ok {
			r.ByVolume[id] = append(r.ByVolume[id], nc)
		} else {
			r.Counts[method]++
		}
	}
	return r
}

// writeReport writes the test's report and, on a podstart node, compares
// each volume's calls with kubelet's report of the same test when the
// directory holds one (run.sh --node kubelet first); with ordered (a test
// of one pod at a time), the whole sequence too.
func (tr *tier) writeReport(name string, r report, ordered bool) {
	tr.t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the labels' <...> as they are
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		tr.t.Fatal(err)
	}
	path := filepath.Join(tr.report, name+"-"+tr.kind+".json")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		tr.t.Fatal(err)
	}
	tr.t.Logf("the node's CSI calls, normalised: %s", path)
	if tr.kind == "kubelet" {
		return
	}
	ref, err := os.ReadFile(filepath.Join(tr.report, name+"-kubelet.json"))
	if err != nil {
		tr.t.Logf("no kubelet report to compare with: %v", err)
		return
	}
	var k report
	if err := json.Unmarshal(ref, &k); err != nil {
		tr.t.Fatal(err)
	}
	for _, d := range reportDiffs(k, r, ordered) {
		tr.t.Error(d)
	}
}

// reportDiffs compares a node's report with kubelet's: each volume's
// calls, the objects, and with ordered the whole sequence.
func reportDiffs(kubelet, node report, ordered bool) []string {
	var out []string
	want, _ := json.MarshalIndent(kubelet.ByVolume, "", "  ")
	got, _ := json.MarshalIndent(node.ByVolume, "", "  ")
	if !bytes.Equal(want, got) {
		out = append(out, fmt.Sprintf("the %s node's CSI calls per volume differ from kubelet's:\nkubelet:\n%s\n%s:\n%s", node.Node, want, node.Node, got))
	}
	want, _ = json.MarshalIndent(kubelet.Objects, "", "  ")
	got, _ = json.MarshalIndent(node.Objects, "", "  ")
	if !bytes.Equal(want, got) {
		out = append(out, fmt.Sprintf("the %s node's objects differ from kubelet's:\nkubelet:\n%s\n%s:\n%s", node.Node, want, node.Node, got))
	}
	if !ordered {
		return out
	}
	want, _ = json.MarshalIndent(kubelet.Calls, "", "  ")
	got, _ = json.MarshalIndent(node.Calls, "", "  ")
	if !bytes.Equal(want, got) {
		out = append(out, fmt.Sprintf("the %s node's CSI calls differ from kubelet's:\nkubelet:\n%s\n%s:\n%s", node.Node, sequence(kubelet.Calls), node.Node, sequence(node.Calls)))
	}
	return out
}

// sequence is a one-line-per-call digest of calls, for the log.
func sequence(calls []nodeCall) string {
	var b strings.Builder
	for _, c := range calls {
		fmt.Fprintf(&b, "  %s", c.Method)
		for _, k := range []string{"volume_id", "staging_target_path", "target_path"} {
			if v, ok := c.Request[k]; ok {
				fmt.Fprintf(&b, " %s=%v", k, v)
			}
		}
		if c.Error != "" {
			fmt.Fprintf(&b, " error=%q", c.Error)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// lifecycleProblems checks one volume's calls: each publish after a
// stage (persistent volumes), each publish undone by an unpublish of the
// same target, each stage undone by an unstage, and none failed.
func lifecycleProblems(volume string, calls []nodeCall, staged bool) []string {
	var out []string
	published := map[any]int{}
	stages := 0
	for _, c := range calls {
		if c.Error != "" {
			out = append(out, fmt.Sprintf("volume %s: %s failed: %s", volume, c.Method, c.Error))
		}
		switch c.Method {
		case "NodeStageVolume":
			stages++
		case "NodeUnstageVolume":
			if stages == 0 {
				out = append(out, fmt.Sprintf("volume %s: NodeUnstageVolume without a stage", volume))
			}
			if len(published) > 0 {
				out = append(out, fmt.Sprintf("volume %s: unstaged while published at %v", volume, published))
			}
			stages = 0
		case "NodePublishVolume":
			if staged && stages == 0 {
				out = append(out, fmt.Sprintf("volume %s: NodePublishVolume before NodeStageVolume", volume))
			}
			published[c.Request["target_path"]]++
		case "NodeUnpublishVolume":
			delete(published, c.Request["target_path"])
		}
	}
	if len(published) > 0 || stages > 0 {
		out = append(out, fmt.Sprintf("volume %s: left published at %v, staged %d; calls:\n%s", volume, published, stages, sequence(calls)))
	}
	return out
}

// checkLifecycle reports lifecycleProblems as test errors.
func checkLifecycle(t *testing.T, volume string, calls []nodeCall, staged bool) {
	t.Helper()
	for _, p := range lifecycleProblems(volume, calls, staged) {
		t.Error(p)
	}
}
