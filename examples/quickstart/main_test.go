package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func TestQuickstartRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, t.TempDir()); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if want := "pod default/web Running after 1 syncs\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}

// The README's "Using it" snippet is the marked region of main.go, so it
// compiles and runs.
func TestReadmeSnippet(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := region(t, string(src))
	got := readmeBlock(t, string(readme))
	if got != want {
		t.Errorf("README.md's Go block under \"## Using it\" differs from main.go's README region; replace it with:\n%s", want)
	}
}

// region returns the lines between "// README:begin" and "// README:end",
// with their common indentation (one tab) removed.
func region(t *testing.T, src string) string {
	t.Helper()
	_, rest, ok := strings.Cut(src, "// README:begin\n")
	if !ok {
		t.Fatal("main.go has no // README:begin")
	}
	body, _, ok := strings.Cut(rest, "// README:end")
	if !ok {
		t.Fatal("main.go has no // README:end")
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(body, "\n") {
		if strings.TrimSpace(line) == "" && !strings.HasSuffix(line, "\n") {
			continue // the indentation before // README:end
		}
		b.WriteString(strings.TrimPrefix(line, "\t"))
	}
	return b.String()
}

// readmeBlock returns the first ```go block after "## Using it".
func readmeBlock(t *testing.T, readme string) string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "\n## Using it\n")
	if !ok {
		t.Fatal(`README.md has no "## Using it" section`)
	}
	if next := strings.Index(rest, "\n## "); next >= 0 {
		rest = rest[:next]
	}
	_, rest, ok = strings.Cut(rest, "```go\n")
	if !ok {
		t.Fatal(`README.md has no go block under "## Using it"`)
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal(`README.md's go block under "## Using it" is not closed`)
	}
	return block
}
