package containerlogs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/podstart/podstart/containerlogs"
)

// A container writing without pause, at 5 MB/s for 60 s scaled down by
// 64 (78 125 bytes a second against a 160 KiB maximum, kubelet's 10Mi / 64;
// the ratio of rate to size is the issue's), with the passes driven by the
// fake clock: after every pass the container has at most MaxFiles files,
// each at most MaxSize plus what it wrote between two passes, its previous
// restart's log is untouched, and at the end its files read, oldest first,
// as one run of lines that ends with the last line written.
func TestSteadyWriter(t *testing.T) {
	const (
		scale    = 64
		maxSize  = 10 * 1024 * 1024 / scale
		rate     = 5_000_000 / scale // bytes per fake second
		seconds  = 60
		maxFiles = containerlogs.DefaultMaxFiles
		lineLen  = 100
	)
	for _, interval := range []time.Duration{containerlogs.DefaultMonitorInterval, time.Second} {
		t.Run(interval.String(), func(t *testing.T) {
			ctx := context.Background()
			n := newNode(t)
			n.container("app", 0, false)
			n.files(map[string]string{podDir + "/app/0.log": "the previous run's last words\n"})
			id := n.container("app", 1, true)
			m, err := containerlogs.New(n.rt, containerlogs.WithPodLogsDir(n.dir), containerlogs.WithMaxSize(maxSize),
				containerlogs.WithClock(n.clock), containerlogs.WithMonitorInterval(interval))
			if err != nil {
				t.Fatal(err)
			}
			appDir := filepath.Join(n.dir, podDir, "app")
			perPass := int64(rate * interval.Seconds())
			line := 0
			var peakFiles int
			var peakSize int64
			for sec := 1; sec <= seconds; sec++ {
				var b strings.Builder
				for b.Len()+lineLen <= rate {
					fmt.Fprintf(&b, "%-*s\n", lineLen-1, "line "+strconv.Itoa(line))
					line++
				}
				n.write(id, []byte(b.String()))
				n.clock.Step(time.Second)
				if time.Duration(sec)*time.Second%interval != 0 {
					continue
				}
				if err := m.RotateOnce(ctx); err != nil {
					t.Fatalf("second %d: %v", sec, err)
				}
				entries, err := os.ReadDir(appDir)
				if err != nil {
					t.Fatal(err)
				}
				files := 0
				for _, e := range entries {
					if !strings.HasPrefix(e.Name(), "1.log") {
						continue
					}
					files++
					if strings.HasSuffix(e.Name(), ".gz") {
						continue // its size is checked before compression
					}
					info, err := e.Info()
					if err != nil {
						t.Fatal(err)
					}
					peakSize = max(peakSize, info.Size())
					if info.Size() > maxSize+perPass {
						t.Errorf("second %d: %s is %d bytes, over %d + %d", sec, e.Name(), info.Size(), maxSize, perPass)
					}
				}
				peakFiles = max(peakFiles, files)
				if files > maxFiles {
					t.Errorf("second %d: %d files, want at most %d", sec, files, maxFiles)
				}
			}
			t.Logf("%d lines written; at most %d files, the largest %d bytes (max %d + %d per pass)", line, peakFiles, peakSize, maxSize, perPass)

			if got := readLog(t, filepath.Join(appDir, "0.log")); got != "the previous run's last words\n" {
				t.Errorf("previous restart's log: %q", got)
			}
			all, err := m.AllLogs(filepath.Join(appDir, "1.log"))
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, p := range all {
				if content := readLog(t, p); content != "" {
					lines = append(lines, strings.Split(strings.TrimSuffix(content, "\n"), "\n")...)
				}
			}
			first, err := strconv.Atoi(strings.Fields(lines[0])[1])
			if err != nil {
				t.Fatalf("first line %q: %v", lines[0], err)
			}
			for i, l := range lines {
				if want := "line " + strconv.Itoa(first+i); strings.TrimRight(l, " ") != want {
					t.Fatalf("line %d of the kept logs is %q, want %q", i, l, want)
				}
			}
			if last := first + len(lines) - 1; last != line-1 {
				t.Errorf("the kept logs end with line %d, want %d", last, line-1)
			}
			if kept := int64(len(lines) * lineLen); kept < (maxFiles-2)*maxSize {
				t.Errorf("only %d bytes kept, want at least %d", kept, (maxFiles-2)*maxSize)
			}
		})
	}
}

// Run checks at once and then on every tick of its clock, and returns
// when its context ends, leaving no goroutine behind.
func TestRun(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	n := newNode(t)
	id := n.container("app", 0, true)
	reopened := make(chan struct{}, 1)
	n.rt.InterceptAnswer(func(_ context.Context, method string, _, resp proto.Message, err error) (proto.Message, error) {
		if method == "ReopenContainerLog" {
			reopened <- struct{}{}
		}
		return resp, err
	})
	m, err := containerlogs.New(n.rt, containerlogs.WithPodLogsDir(n.dir), containerlogs.WithMaxSize(10), containerlogs.WithClock(n.clock))
	if err != nil {
		t.Fatal(err)
	}
	n.write(id, []byte("first run of output\n"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	wait := func(what string) {
		t.Helper()
		select {
		case <-reopened:
		case <-time.After(30 * time.Second):
			t.Fatalf("no reopen %s", what)
		}
	}
	wait("on the first pass")
	n.write(id, []byte("second run of output\n"))
	n.clock.Step(containerlogs.DefaultMonitorInterval)
	wait("after a tick")
	cancel()
	<-done
	t1 := t0.Add(containerlogs.DefaultMonitorInterval).Format(containerlogs.TimestampFormat)
	want := map[string]string{
		podDir + "/app/0.log." + ts + ".gz": "first run of output\n",
		podDir + "/app/0.log." + t1:         "second run of output\n",
		podDir + "/app/0.log":               "",
	}
	if diff := cmp.Diff(want, tree(t, n.dir)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A pass whose context ends says so.
func TestRotateOnceCancelled(t *testing.T) {
	n := newNode(t)
	n.container("app", 0, true)
	m, err := containerlogs.New(n.rt, containerlogs.WithPodLogsDir(n.dir), containerlogs.WithClock(n.clock))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.RotateOnce(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("RotateOnce: %v, want context.Canceled", err)
	}
}
