package csi

import (
	"strings"
	"testing"
)

// The normalisation the reports rely on, without the tier.
func TestNormalise(t *testing.T) {
	n := newNames("/tmp/podstart-csi/node")
	n.add("3c1f5a0e-1111-2222-3333-444455556666", "<uid ns/web-0>")
	n.pv("pvc-9d2e", "ns/data-web-0", "pvc-9d2e-extra")
	n.add("pvc-9d2e-extra", "<handle ns/data-web-0>")
	in := `{"staging_target_path":"/tmp/podstart-csi/node/plugins/kubernetes.io/csi/bind.csi.podstart.test/` +
		sha("pvc-9d2e-extra") + `/globalmount","volume_id":"pvc-9d2e-extra","pv":"pvc-9d2e",` +
		`"uid":"3c1f5a0e-1111-2222-3333-444455556666","id":"1764650000000-1234-bind.csi.podstart.test","other":"` +
		strings.Repeat("ab", 32) + `"}`
	want := `{"staging_target_path":"<root>/plugins/kubernetes.io/csi/bind.csi.podstart.test/<sha256 of handle ns/data-web-0>/globalmount",` +
		`"volume_id":"<handle ns/data-web-0>","pv":"<pv ns/data-web-0>","uid":"<uid ns/web-0>","id":"<provisioner-identity>","other":"<sha256>"}`
	if got := n.normalise(in); got != want {
		t.Errorf("normalise:\n got %s\nwant %s", got, want)
	}
}

func TestLifecycleProblems(t *testing.T) {
	c := func(m, target string) nodeCall {
		nc := nodeCall{Method: m, Request: map[string]any{"volume_id": "v"}}
		if target != "" {
			nc.Request["target_path"] = target
		}
		return nc
	}
	good := []nodeCall{c("NodeStageVolume", ""), c("NodePublishVolume", "/a"), c("NodeUnpublishVolume", "/a"), c("NodeUnstageVolume", "")}
	if p := lifecycleProblems("v", good, true); len(p) != 0 {
		t.Errorf("a clean lifecycle: %v", p)
	}
	for name, calls := range map[string][]nodeCall{
		"publish before stage":  {c("NodePublishVolume", "/a"), c("NodeUnpublishVolume", "/a")},
		"left published":        {c("NodeStageVolume", ""), c("NodePublishVolume", "/a")},
		"unstaged while in use": {c("NodeStageVolume", ""), c("NodePublishVolume", "/a"), c("NodeUnstageVolume", ""), c("NodeUnpublishVolume", "/a")},
		"left staged":           {c("NodeStageVolume", "")},
		"a call failed":         {{Method: "NodeStageVolume", Error: "boom"}, c("NodeUnstageVolume", "")},
	} {
		if p := lifecycleProblems("v", calls, true); len(p) == 0 {
			t.Errorf("%s: no problem found", name)
		}
	}
	inline := []nodeCall{c("NodePublishVolume", "/a"), c("NodeUnpublishVolume", "/a")}
	if p := lifecycleProblems("v", inline, false); len(p) != 0 {
		t.Errorf("an inline volume's lifecycle: %v", p)
	}
}

func TestReportDiffs(t *testing.T) {
	stage := nodeCall{Method: "NodeStageVolume", Request: map[string]any{"volume_id": "<handle ns/c>", "staging_target_path": "<root>/a"}}
	caps := nodeCall{Method: "NodeGetCapabilities"}
	kubelet := report{Node: "kubelet", Calls: []nodeCall{caps, stage}, ByVolume: map[string][]nodeCall{"<handle ns/c>": {stage}}}
	same := report{Node: "podstart", Calls: []nodeCall{caps, stage}, ByVolume: map[string][]nodeCall{"<handle ns/c>": {stage}}}
	if d := reportDiffs(kubelet, same, true); len(d) != 0 {
		t.Errorf("the same calls: %v", d)
	}
	// Another order of calls without a volume: a difference only when ordered.
	reordered := report{Node: "podstart", Calls: []nodeCall{stage, caps}, ByVolume: same.ByVolume}
	if d := reportDiffs(kubelet, reordered, false); len(d) != 0 {
		t.Errorf("unordered: %v", d)
	}
	if d := reportDiffs(kubelet, reordered, true); len(d) != 1 {
		t.Errorf("ordered: %d differences, want 1: %v", len(d), d)
	}
	other := nodeCall{Method: "NodeStageVolume", Request: map[string]any{"volume_id": "<handle ns/c>", "staging_target_path": "<root>/b"}}
	moved := report{Node: "podstart", Calls: []nodeCall{caps, other}, ByVolume: map[string][]nodeCall{"<handle ns/c>": {other}}}
	if d := reportDiffs(kubelet, moved, false); len(d) != 1 {
		t.Errorf("another staging path: %d differences, want 1: %v", len(d), d)
	}
}
