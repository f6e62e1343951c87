package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/containerlogs"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime"
)

// Log rotation against containerd, scaled down from the 5 MB/s for
// 60 s: a container writes numbered lines at about 5 MB/s (on disk, with
// the CRI log prefix) for 12 s while containerlogs.Manager.Run rotates
// with a 1 s monitor interval, an 8 MiB maximum size and 4 files. At the end
// the container's log directory holds at most 4 files: the live log, the
// newest rotated file uncompressed and the older ones gzipped, as kubelet
// leaves them; each (uncompressed) is at most the maximum size plus what
// the container wrote between two passes (the bound kubelet's rotation
// has too: from the start of the pass that last found the file under the
// maximum size to the rotation's reopen, measured by recording both);
// the lines across the files are one unbroken sequence (containerd's
// partial lines joined) ending in the last line written, which is read
// from the live log as soon as it is written. Under -race on a loaded
// machine the passes slow down (gzip of the previous file comes before
// the rename, as in kubelet), and the files grow past the maximum size by
// what is written meanwhile; the bound still holds.
func TestLogRotationOnContainerd(t *testing.T) {
	const (
		maxSize     = 8 << 20
		maxFiles    = 4
		interval    = time.Second
		seconds     = 12
		chunksPerS  = 10
		linesPerChk = 4700 // 106-byte lines on disk: ~5 MB/s
		tailLines   = 10
	)
	e, rt := setup(t)
	root := t.TempDir()
	a := newAgent(t, rt, root)
	bulk := seconds * chunksPerS * linesPerChk
	total := bulk + tailLines
	// Each line: an 8-digit counter and padding, 61 bytes with the newline;
	// a chunk of lines every tenth of a second by the kernel's uptime; then
	// a few short lines, two a second, for the last passes to catch up,
	// and the last line.
	script := fmt.Sprintf(`awk 'function now(  u, a) {getline u < "/proc/uptime"; close("/proc/uptime"); split(u, a, " "); return a[1]}
BEGIN{pad=sprintf("%%51s",""); gsub(/ /,"x",pad); n=0; t0=now();
for(c=0;c<%d;c++){for(j=0;j<%d;j++){printf "%%08d %%s\n", n, pad; n++}; fflush(); while(now()-t0 < (c+1)/%d) system("sleep 0.02")}
for(j=0;j<%d;j++){printf "%%08d tail\n", n; n++; fflush(); system("sleep 0.5")}
printf "done %%d\n", n; fflush()}'; exec sleep 3600`, seconds*chunksPerS, linesPerChk, chunksPerS, tailLines)
	writer := corev1.Container{Name: "writer", Image: e.openImage, ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{"sh", "-c", script}}
	pod := newPod(t, rt, "log-rotation", writer)

	passes := &passRecorder{Runtime: rt, uid: string(pod.UID)}
	m, err := containerlogs.New(passes, containerlogs.WithPodLogsDir(filepath.Join(root, "logs")),
		containerlogs.WithMaxSize(maxSize), containerlogs.WithMaxFiles(maxFiles), containerlogs.WithMonitorInterval(interval))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	defer stop()

	a.converge(pod)
	cs := a.status(pod).FindContainerStatusByName("writer")
	if cs == nil || cs.LogPath == "" {
		t.Fatalf("writer status %+v", cs)
	}
	live := cs.LogPath
	if !strings.HasPrefix(live, filepath.Join(root, "logs")+string(filepath.Separator)) {
		t.Fatalf("log path %s is not under the agent's logs directory", live)
	}
	// Wait for the writer's last line in the live log (the container
	// writes on its own time), where kubectl logs reads it; then for the
	// pass under way to finish and one more to begin, so that no pass is
	// cut short by the stop.
	start := time.Now()
	wantLast := fmt.Sprintf("done %d", total)
	deadline := start.Add(45 * time.Second)
	for !strings.Contains(tail(t, live, 4096), wantLast) {
		if time.Now().After(deadline) {
			t.Fatalf("the writer did not finish in 45 s; live log ends %q", tail(t, live, 200))
		}
		time.Sleep(100 * time.Millisecond)
	}
	finished := time.Since(start)
	t.Logf("the live log ends %q", tail(t, live, 100))
	// A pass that rotates compresses the previous file first (tens of MB
	// under -race on a loaded machine): its own hang guard, not the
	// writer's.
	passesDeadline := time.Now().Add(3 * time.Minute)
	for n := passes.count() + 2; passes.count() < n; {
		if time.Now().After(passesDeadline) {
			t.Fatalf("no two passes in 3 minutes after the last line (%d passes)", passes.count())
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()

	files, err := filepath.Glob(live + "*")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files) // <live>, <live>.<stamp>[.gz]: the live log first, then oldest to newest
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f)
	}
	t.Logf("after %v of writing, %d passes, files: %v", finished.Round(time.Millisecond), passes.count(), names)
	if len(files) > maxFiles {
		t.Errorf("%d files, want at most %d: %v", len(files), maxFiles, names)
	}
	if len(files) < 3 {
		t.Fatalf("%d files: the log was not rotated twice: %v", len(files), names)
	}
	rotated := files[1:]
	stamp := regexp.MustCompile(`^` + regexp.QuoteMeta(filepath.Base(live)) + `\.\d{8}-\d{6}(\.gz)?$`)
	for i, f := range rotated {
		n := filepath.Base(f)
		if !stamp.MatchString(n) {
			t.Errorf("rotated file %s: not <live>.<timestamp>[.gz]", n)
		}
		if gz := strings.HasSuffix(n, ".gz"); gz != (i < len(rotated)-1) {
			t.Errorf("rotated file %s: want the newest uncompressed and the older ones gzipped (%v)", n, names)
		}
	}

	// Read every file, oldest first; measure the write rate from the CRI
	// timestamps and check the sequence of lines.
	order := append(append([]string(nil), rotated...), live)
	var (
		first, last         time.Time
		bulkFirst, bulkLast time.Time
		bulkBytes           int64
		allBytes            int64
		next                = -1
		doneSeen            bool
		partial             string
		partials            int
		lineStart           = regexp.MustCompile(`^(\d{8} |done )`)
	)
	sizes := map[string]int64{}
	type stamped struct {
		ts    time.Time
		bytes int
	}
	lines := map[string][]stamped{}
	for _, f := range order {
		data := readLog(t, f)
		sizes[filepath.Base(f)] = int64(len(data))
		allBytes += int64(len(data))
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			ts, stream, tag, msg, ok := parseCRILine(sc.Text())
			lines[filepath.Base(f)] = append(lines[filepath.Base(f)], stamped{ts, len(sc.Bytes()) + 1})
			if !ok || stream != "stdout" || (tag != "F" && tag != "P") {
				t.Fatalf("%s: not a CRI stdout line: %q", filepath.Base(f), sc.Text())
			}
			if first.IsZero() {
				first = ts
			}
			last = ts
			// containerd may cut a line in parts (tag P), across a
			// rotation too; a reader joins them, as kubectl logs does.
			if tag == "P" {
				partial += msg
				partials++
				continue
			}
			msg, partial = partial+msg, ""
			if next < 0 && !lineStart.MatchString(msg) {
				continue // the end of a line whose start was in a removed file
			}
			if msg == wantLast {
				// A pass that found the live log still over the maximum
				// size after the last line was written moves it to the
				// newest rotated file, uncompressed until the next rotation.
				doneSeen = true
				if f != live && (f != rotated[len(rotated)-1] || strings.HasSuffix(f, ".gz")) {
					t.Errorf("the last line is in %s, neither the live log nor the newest rotated file", filepath.Base(f))
				}
				continue
			}
			n, err := strconv.Atoi(strings.Fields(msg)[0])
			if err != nil || doneSeen {
				t.Fatalf("%s: unexpected line %q", filepath.Base(f), msg)
			}
			if next >= 0 && n != next {
				t.Fatalf("%s: line %d follows %d: lines lost across a rotation", filepath.Base(f), n, next-1)
			}
			next = n + 1
			if n < bulk {
				if bulkFirst.IsZero() {
					bulkFirst = ts
				}
				bulkLast = ts
				bulkBytes += int64(len(sc.Bytes()) + 1)
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if !doneSeen || next != total {
		t.Fatalf("last counter %d (want %d), last line seen: %v", next-1, total-1, doneSeen)
	}
	span := bulkLast.Sub(bulkFirst).Seconds()
	rate := float64(bulkBytes) / span
	// A pass that finds a file under the maximum size leaves it; the next
	// rotates it if it is over. So each file held less than the maximum
	// size when the pass before the one that rotated it began, and the
	// rest of it is what the container wrote between that pass and the
	// rotation (kubelet compresses the older files before it renames the
	// live one, so a slow compression lengthens that window, in kubelet
	// too). Lines carry containerd's time; 50 ms is allowed for its
	// write. The live log: the pass before the last, which surely
	// finished, found it under the maximum size or rotated it.
	starts, reopens := passes.record()
	if len(reopens) < len(rotated) {
		t.Fatalf("%d reopens for %d rotated files", len(reopens), len(rotated))
	}
	since := map[string]time.Time{}
	for i, f := range rotated {
		since[filepath.Base(f)] = passBefore(starts, reopens[len(reopens)-len(rotated)+i], 1)
	}
	since[filepath.Base(live)] = starts[max(len(starts)-2, 0)]
	t.Logf("kept %d bytes spanning %.1f s (%d of the fast lines in %.1f s: %.2f MB/s on disk); %d partial lines joined; %d passes, %d rotations, longest gap between pass starts %v",
		allBytes, last.Sub(first).Seconds(), bulkBytes, span, rate/1e6, partials, len(starts), len(reopens), maxGap(starts).Round(time.Millisecond))
	for _, f := range order {
		n := filepath.Base(f)
		var before int64
		for _, l := range lines[n] {
			if l.ts.Before(since[n].Add(-50 * time.Millisecond)) {
				before += int64(l.bytes)
			}
		}
		if f == live {
			t.Logf("  %s: %d bytes, %d of them written before the start of the last pass sure to have finished", n, sizes[n], before)
		} else {
			t.Logf("  %s: %d bytes uncompressed: %d before the start of the pass that left it, %d written from then until its rotation (%v)",
				n, sizes[n], before, sizes[n]-before, lines[n][len(lines[n])-1].ts.Sub(since[n]).Round(time.Millisecond))
		}
		if before >= maxSize {
			t.Errorf("%s: %d bytes by the start of a pass that did not rotate it: over the maximum size %d", n, before, maxSize)
		}
	}
	if rate < 2e6 {
		t.Errorf("the writer wrote %.2f MB/s, want about 5", rate/1e6)
	}
}

// passRecorder shows the Manager only the test pod's containers (other
// tests share containerd) and records when each pass began (its
// ListContainers) and when each rotation's reopen returned.
type passRecorder struct {
	containerlogs.Runtime
	uid             string
	mu              sync.Mutex
	starts, reopens []time.Time
}

func (p *passRecorder) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	p.mu.Lock()
	p.starts = append(p.starts, time.Now())
	p.mu.Unlock()
	return p.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{podsync.LabelPodUID: p.uid}})
}

func (p *passRecorder) ReopenContainerLog(ctx context.Context, id string) error {
	err := p.Runtime.ReopenContainerLog(ctx, id)
	if err == nil {
		p.mu.Lock()
		p.reopens = append(p.reopens, time.Now())
		p.mu.Unlock()
	}
	return err
}

func (p *passRecorder) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.starts)
}

func (p *passRecorder) record() (starts, reopens []time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.starts), slices.Clone(p.reopens)
}

// passBefore is the start of the pass n passes before the one under way
// at t (the first pass's start if there is none so early).
func passBefore(starts []time.Time, t time.Time, n int) time.Time {
	k := 0
	for i, s := range starts {
		if !s.After(t) {
			k = i
		}
	}
	return starts[max(k-n, 0)]
}

func maxGap(times []time.Time) (gap time.Duration) {
	for i := 1; i < len(times); i++ {
		gap = max(gap, times[i].Sub(times[i-1]))
	}
	return gap
}

var _ containerlogs.Runtime = (*runtime.Client)(nil)

// parseCRILine splits "<RFC3339Nano> <stream> <P|F> <message>".
func parseCRILine(l string) (ts time.Time, stream, tag, msg string, ok bool) {
	f := strings.SplitN(l, " ", 4)
	if len(f) != 4 {
		return ts, "", "", "", false
	}
	ts, err := time.Parse(time.RFC3339Nano, f[0])
	return ts, f[1], f[2], f[3], err == nil
}

// readLog reads a log file, gunzipping a .gz one.
func readLog(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(path), err)
		}
		r = z
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(path), err)
	}
	return b
}

// tail is the last n bytes of a file ("" when it is missing).
func tail(t *testing.T, path string, n int64) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	off := max(st.Size()-n, 0)
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return string(b)
}
