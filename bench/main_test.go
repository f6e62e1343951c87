package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestParseStat(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, line string
		want       float64
		wantErr    bool
	}{
		{name: "plain", line: "123 (kubelet) S 1 123 123 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 12 0 100 1000 200", want: 3.1},
		{name: "name with spaces and parentheses", line: "9 (a b) (c)) R 1 9 9 0 -1 0 0 0 0 0 100 0 0 0 20 0 1 0 1 1 1", want: 1},
		{name: "short", line: "9 (x) R 1 2 3", wantErr: true},
		{name: "no name", line: "9 x R", wantErr: true},
		{name: "not a number", line: "1 (x) S 1 1 1 0 -1 0 0 0 0 0 a 0 0 0 20 0 1 0 1 1 1", wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat(tt.line)
			if (err != nil) != tt.wantErr || !tt.wantErr && got != tt.want {
				t.Errorf("parseStat = %v, %v; want %v (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
	// This process has a stat file of that shape.
	if _, err := cpuSeconds(os.Getpid()); err != nil {
		t.Error(err)
	}
}

func TestParseRSS(t *testing.T) {
	t.Parallel()
	if got, err := parseRSS("Name:\tx\nVmRSS:\t   24576 kB\nThreads: 3\n"); err != nil || got != 24576 {
		t.Errorf("parseRSS = %d, %v", got, err)
	}
	if _, err := parseRSS("Name:\tx\n"); err == nil {
		t.Error("no VmRSS: no error")
	}
	if _, err := parseRSS("VmRSS: 12 MB\n"); err == nil {
		t.Error("VmRSS in MB: no error")
	}
	if kb, err := rssKiB(os.Getpid()); err != nil || kb == 0 {
		t.Errorf("rssKiB(self) = %d, %v", kb, err)
	}
}

func TestKubeletYAML(t *testing.T) {
	t.Parallel()
	y := kubeletYAML("unix:///run/x.sock", "/logs", "/manifests", "/podstart-bench-kubelet", 10250)
	for _, want := range []string{"maxPods: 1000\n", "staticPodPath: /manifests\n", "containerRuntimeEndpoint: unix:///run/x.sock\n",
		"cgroupRoot: /podstart-bench-kubelet\n", "failSwapOn: false\n"} {
		if !strings.Contains(y, want) {
			t.Errorf("kubelet.yaml lacks %q:\n%s", want, y)
		}
	}
	if strings.Contains(y, "fileCheckFrequency") {
		t.Errorf("kubelet.yaml sets fileCheckFrequency (kubelet's default is wanted):\n%s", y)
	}
	if y := kubeletYAML("unix:///x", "/l", "/m", "", 1); !strings.Contains(y, "cgroupsPerQOS: false") {
		t.Errorf("no cgroup root: kubelet.yaml without cgroupsPerQOS false:\n%s", y)
	}
}

func TestManifest(t *testing.T) {
	t.Parallel()
	var p corev1.Pod
	if err := json.Unmarshal(manifest(7, "busybox:1.35"), &p); err != nil {
		t.Fatal(err)
	}
	if p.Name != "bench-0007" || len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Image != "busybox:1.35" || len(p.Spec.Containers[0].Command) != 0 {
		t.Errorf("manifest = %+v", p)
	}
}

func TestPrintRatios(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	printRatios(&b, []result{
		{side: "kubelet", n: 100, cpuPerMin: 1.5, rssMiB: 120, callsMin: 300},
		{side: "podstart", n: 100, cpuPerMin: 0.3, rssMiB: 40, callsMin: 122},
		{side: "kubelet", n: 250, cpuPerMin: 2}, // no podstart run: no line
	})
	out := b.String()
	if !strings.Contains(out, "5.0x") || !strings.Contains(out, "3.0x") || strings.Contains(out, "  250 |") {
		t.Errorf("ratios:\n%s", out)
	}
}

func TestParseCounts(t *testing.T) {
	t.Parallel()
	if got, err := parseCounts("100, 250,500"); err != nil || len(got) != 3 || got[2] != 500 {
		t.Errorf("parseCounts = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "x", "10,-1"} {
		if _, err := parseCounts(bad); err == nil {
			t.Errorf("parseCounts(%q): no error", bad)
		}
	}
}

// TestAgentBuildLinksNoTemplates: built as the bench builds it, podagent
// links no text/template (through gRPC's x/net/trace or anything else),
// whose reflect.MethodByName keeps every exported method in the binary.
func TestAgentBuildLinksNoTemplates(t *testing.T) {
	t.Parallel()
	args := agentBuildArgs("unused")
	var tags string
	for i, a := range args {
		if a == "-tags" {
			tags = args[i+1]
		}
	}
	cmd := exec.Command("go", "list", "-deps", "-tags", tags, args[len(args)-1])
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		switch pkg {
		case "text/template", "html/template", "golang.org/x/net/trace", "runtime/cgo":
			t.Errorf("podagent links %s", pkg)
		}
	}
}
