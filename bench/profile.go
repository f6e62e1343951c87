package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"
)

// fetchProfile writes the agent's CPU profile over d (net/http/pprof's
// /debug/pprof/profile at addr) to path.
func fetchProfile(ctx context.Context, addr string, d time.Duration, path string) error {
	secs := max(1, int(d.Round(time.Second)/time.Second))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs), nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: d + 30*time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// fetchNamed writes one of runtime/pprof's named profiles (heap,
// goroutine...) of the agent to path.
func fetchNamed(ctx context.Context, addr, name, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/%s", addr, name), nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// rssParts is RssAnon, RssFile and RssShmem of a /proc/<pid>/status.
func rssParts(status string) string {
	var parts []string
	for _, line := range strings.Split(status, "\n") {
		for _, k := range []string{"RssAnon:", "RssFile:", "RssShmem:"} {
			if v, ok := strings.CutPrefix(line, k); ok {
				parts = append(parts, strings.TrimSuffix(k, ":")+" "+strings.Join(strings.Fields(v), " "))
			}
		}
	}
	return strings.Join(parts, ", ")
}

// profileSlices takes 2 s CPU profiles one after another until ctx ends
// (the slice under way is finished: up to 2 s past the end) and returns
// the files written.
func profileSlices(ctx context.Context, addr, prefix string) []string {
	var files []string
	for i := 0; ctx.Err() == nil; i++ {
		p := fmt.Sprintf("%s-%03d.pb.gz", prefix, i)
		if err := fetchProfile(context.Background(), addr, 2*time.Second, p); err != nil {
			fmt.Fprintf(os.Stderr, "profile slice %s: %v\n", p, err)
			break
		}
		files = append(files, p)
	}
	return files
}

// stack is one sample of a profile: its value and its frames, leaf first.
type stack struct {
	ms     float64
	frames []string
}

// readTraces parses `go tool pprof -traces` output.
func readTraces(r io.Reader) ([]stack, error) {
	var out []stack
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "-----------+") {
			in = true
			continue
		}
		if !in || len(line) < 13 {
			continue
		}
		val, name := strings.TrimSpace(line[:10]), strings.TrimSpace(line[10:])
		name = strings.TrimSuffix(name, " (inline)")
		if val != "" {
			ms, err := parseMs(val)
			if err != nil {
				return nil, err
			}
			out = append(out, stack{ms: ms})
		}
		if len(out) > 0 && name != "" {
			out[len(out)-1].frames = append(out[len(out)-1].frames, name)
		}
	}
	return out, sc.Err()
}

// parseMs reads a pprof duration (10ms, 1.20s, 1.5mins, 500us, 3ns) in
// milliseconds.
func parseMs(s string) (float64, error) {
	for _, u := range []struct {
		suffix string
		ms     float64
	}{{"mins", 60000}, {"hrs", 3600000}, {"ms", 1}, {"us", 1e-3}, {"ns", 1e-6}, {"s", 1000}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("profile value %q: %w", s, err)
			}
			return f * u.ms, nil
		}
	}
	return 0, fmt.Errorf("profile value %q: no unit", s)
}

// funcPackage is the import path of a function's package:
// "github.com/x/y/pkg.(*T).M.func1" → "github.com/x/y/pkg".
func funcPackage(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	if i := strings.IndexByte(fn[slash+1:], '.'); i >= 0 {
		return fn[:slash+1+i]
	}
	return fn
}

// profileSummary is a profile's breakdown: total, time spent in each
// package's own code (flat), and time under each package anywhere on the
// stack (cum, counted once per sample), and per function.
type profileSummary struct {
	totalMs          float64
	flatPkg, cumPkg  map[string]float64
	flatFunc, cumFun map[string]float64
}

func summarize(stacks []stack) profileSummary {
	s := profileSummary{flatPkg: map[string]float64{}, cumPkg: map[string]float64{}, flatFunc: map[string]float64{}, cumFun: map[string]float64{}}
	for _, st := range stacks {
		s.totalMs += st.ms
		if len(st.frames) == 0 {
			continue
		}
		s.flatFunc[st.frames[0]] += st.ms
		s.flatPkg[funcPackage(st.frames[0])] += st.ms
		seenPkg, seenFn := map[string]bool{}, map[string]bool{}
		for _, f := range st.frames {
			if p := funcPackage(f); !seenPkg[p] {
				seenPkg[p] = true
				s.cumPkg[p] += st.ms
			}
			if !seenFn[f] {
				seenFn[f] = true
				s.cumFun[f] += st.ms
			}
		}
	}
	return s
}

// top returns the k largest entries of m as "name value (percent)" lines.
func top(m map[string]float64, total float64, k int) []string {
	keys := make([]string, 0, len(m))
	for n := range m {
		keys = append(keys, n)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	var out []string
	for _, n := range keys[:min(k, len(keys))] {
		out = append(out, fmt.Sprintf("%9.0fms %5.1f%%  %s", m[n], 100*m[n]/max(total, 1), strings.TrimPrefix(n, "github.com/podstart/podstart/")))
	}
	return out
}

// summarizeProfiles merges the profiles (go tool pprof -traces), prints
// its breakdown to w and writes it with the full listing to outPath.
func summarizeProfiles(w io.Writer, title, outPath string, files []string) error {
	cmd := exec.Command("go", append([]string{"tool", "pprof", "-traces"}, files...)...)
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go tool pprof -traces: %w", err)
	}
	stacks, err := readTraces(strings.NewReader(string(out)))
	if err != nil {
		return err
	}
	s := summarize(stacks)
	var b strings.Builder
	fmt.Fprintf(&b, "CPU profile, %s: %.0f ms sampled (%d profiles)\n", title, s.totalMs, len(files))
	section := func(name string, m map[string]float64, k int) {
		fmt.Fprintf(&b, "  %s:\n", name)
		for _, l := range top(m, s.totalMs, k) {
			fmt.Fprintf(&b, "    %s\n", l)
		}
	}
	section("by package, own code (flat)", s.flatPkg, 15)
	section("by package, anywhere on the stack (cum)", s.cumPkg, 30)
	section("by function (flat)", s.flatFunc, 15)
	fmt.Fprint(w, b.String())
	full := b.String()
	var fb strings.Builder
	for _, l := range top(s.cumFun, s.totalMs, 200) {
		fmt.Fprintf(&fb, "    %s\n", l)
	}
	return os.WriteFile(outPath, []byte(full+"  by function (cum), 200 largest:\n"+fb.String()), 0o644)
}
