// Command summary reads the conformance tier's ginkgo JSON report and its
// skip list and prints what the tier promises: the specs in scope and how
// many passed, failed and were skipped, every failure with its message,
// every skip with its reason, the run's wall time and the slowest specs.
// It exits 1 when a spec in scope failed (or none ran).
//
//	go run ./test/conformance/summary -report report.json -skips test/conformance/skips.txt [-slow]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

// specReport is the part of ginkgo v2's types.SpecReport read here.
type specReport struct {
	ContainerHierarchyTexts []string
	LeafNodeType            string
	LeafNodeText            string
	LeafNodeLocation        struct{ FileName string }
	State                   string
	StartTime, EndTime      time.Time
	RunTime                 time.Duration
	Failure                 struct {
		Message  string
		Location struct {
			FileName   string
			LineNumber int
		}
	}
}

type report struct {
	StartTime, EndTime time.Time
	RunTime            time.Duration
	SpecReports        []specReport
}

// skip is one line of the skip list: a regular expression over the spec's
// full text and why.
type skip struct {
	re     *regexp.Regexp
	reason string
}

// Scope: the node-level conformance specs of the suite.
var (
	inFiles  = regexp.MustCompile(`test/e2e/common/(node|storage)/`)
	tagged   = regexp.MustCompile(`\[NodeConformance\]|\[Conformance\]`)
	excluded = regexp.MustCompile(`\[Serial\]|\[Disruptive\]|\[Flaky\]`)
	slow     = regexp.MustCompile(`\[Slow\]`)
)

func main() {
	reportPath := flag.String("report", "", "ginkgo's --json-report")
	skipsPath := flag.String("skips", "", "the skip list")
	withSlow := flag.Bool("slow", false, "[Slow] specs are in scope")
	top := flag.Int("slowest", 15, "how many of the slowest specs to list")
	markdown := flag.String("markdown", "", "also write the summary as Markdown to this file")
	selected := flag.String("selected", "", `the run chose some specs (run.sh --subset or --focus, named here): specs in scope it did not run are counted apart, not as skipped`)
	flag.Parse()
	ok, err := run(os.Stdout, *reportPath, *skipsPath, *withSlow, *top, *markdown, *selected)
	if err != nil {
		fmt.Fprintln(os.Stderr, "summary:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

func readSkips(path string) ([]skip, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var skips []skip
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndex(line, " | ")
		if i < 0 || strings.TrimSpace(line[i+3:]) == "" {
			return nil, fmt.Errorf("%s:%d: want '<regexp> | <reason>'", path, n)
		}
		re, err := regexp.Compile(strings.TrimSpace(line[:i]))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		skips = append(skips, skip{re: re, reason: strings.TrimSpace(line[i+3:])})
	}
	return skips, sc.Err()
}

func fullText(s specReport) string {
	return strings.Join(append(append([]string{}, s.ContainerHierarchyTexts...), s.LeafNodeText), " ")
}

func firstLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}

func run(out io.Writer, reportPath, skipsPath string, withSlow bool, top int, markdown, selected string) (bool, error) {
	data, err := os.ReadFile(reportPath)
	if err != nil {
		return false, err
	}
	var reports []report
	if err := json.Unmarshal(data, &reports); err != nil {
		return false, fmt.Errorf("%s: %w", reportPath, err)
	}
	skips, err := readSkips(skipsPath)
	if err != nil {
		return false, err
	}
	type result struct {
		name, file, why string
		d               time.Duration
	}
	var passed, failed, listed, skippedAtRun, notRun []result
	unselected := 0
	var wall time.Duration
	used := map[int]bool{}
	for _, r := range reports {
		wall += r.RunTime
		for _, s := range r.SpecReports {
			if s.LeafNodeType != "It" {
				if s.State != "passed" && s.State != "skipped" {
					failed = append(failed, result{name: s.LeafNodeType, why: firstLine(s.Failure.Message, 300)})
				}
				continue
			}
			name := fullText(s)
			if !inFiles.MatchString(s.LeafNodeLocation.FileName) || !tagged.MatchString(name) || excluded.MatchString(name) || (!withSlow && slow.MatchString(name)) {
				continue
			}
			res := result{name: name, d: s.RunTime}
			if i := strings.Index(s.LeafNodeLocation.FileName, "test/e2e/"); i >= 0 {
				res.file = s.LeafNodeLocation.FileName[i:]
			}
			reason := ""
			for i, sk := range skips {
				if sk.re.MatchString(name) {
					reason, used[i] = sk.reason, true
					break
				}
			}
			switch {
			case s.State == "passed":
				passed = append(passed, res)
			case s.State == "skipped" && reason != "":
				res.why = reason
				listed = append(listed, res)
			case s.State == "skipped" && s.Failure.Message != "":
				res.why = firstLine(s.Failure.Message, 300)
				skippedAtRun = append(skippedAtRun, res)
			case s.State == "skipped" && selected != "":
				unselected++
			case s.State == "skipped":
				res.why = "not run (no reason recorded: filtered out, or the suite stopped)"
				notRun = append(notRun, res)
			default:
				res.why = s.State + ": " + firstLine(s.Failure.Message, 400)
				if s.Failure.Location.FileName != "" {
					res.why += fmt.Sprintf(" (%s:%d)", trimPath(s.Failure.Location.FileName), s.Failure.Location.LineNumber)
				}
				failed = append(failed, res)
			}
		}
	}
	inScope := len(passed) + len(failed) + len(listed) + len(skippedAtRun) + len(notRun)
	what := "in scope"
	if selected != "" {
		what = "chosen"
	}
	var b strings.Builder
	scope := "[NodeConformance] and [Conformance] specs of test/e2e/common/{node,storage}, without [Serial], [Disruptive], [Flaky]"
	if !withSlow {
		scope += ", [Slow]"
	}
	fmt.Fprintf(&b, "## Node conformance: %d %s, %d passed, %d failed, %d skipped\n\n", inScope, what, len(passed), len(failed), len(listed)+len(skippedAtRun)+len(notRun))
	fmt.Fprintf(&b, "Scope: %s. Wall time of the run: %s.\n\n", scope, wall.Round(time.Second))
	if selected != "" {
		fmt.Fprintf(&b, "This run chose its specs (%s): the %d specs in scope it did not choose are not counted above.\n\n", selected, unselected)
	}
	section := func(title string, rs []result, withWhy bool) {
		if len(rs) == 0 {
			return
		}
		fmt.Fprintf(&b, "### %s (%d)\n\n", title, len(rs))
		for _, r := range rs {
			if withWhy {
				fmt.Fprintf(&b, "- %s\n  - %s\n", r.name, r.why)
			} else {
				fmt.Fprintf(&b, "- %s\n", r.name)
			}
		}
		b.WriteString("\n")
	}
	section("Failed", failed, true)
	section("Skipped by the skip list", listed, true)
	section("Skipped by the spec itself", skippedAtRun, true)
	section("Not run", notRun, true)
	all := append(append([]result{}, passed...), failed...)
	sort.Slice(all, func(i, j int) bool { return all[i].d > all[j].d })
	if len(all) > top {
		all = all[:top]
	}
	if len(all) > 0 {
		fmt.Fprintf(&b, "### Slowest specs\n\n")
		for _, r := range all {
			fmt.Fprintf(&b, "- %s  %s\n", r.d.Round(100*time.Millisecond), r.name)
		}
		b.WriteString("\n")
	}
	for i, sk := range skips {
		if !used[i] {
			fmt.Fprintf(&b, "note: skip list entry %q matched no spec in scope\n", sk.re.String())
		}
	}
	fmt.Fprint(out, b.String())
	if markdown != "" {
		if err := os.WriteFile(markdown, []byte(b.String()), 0o644); err != nil {
			return false, err
		}
	}
	return len(failed) == 0 && len(passed) > 0, nil
}

func trimPath(p string) string {
	if i := strings.Index(p, "test/e2e/"); i >= 0 {
		return p[i:]
	}
	return p
}
