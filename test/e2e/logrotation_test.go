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
// with a 1 s monitor interval, a 1 MiB maximum size and 4 files. At the end
// the container's log directory holds at most 4 files: the live log, the
// newest rotated file uncompressed and the older ones gzipped, as kubelet
// leaves them; each (uncompressed) is at most the maximum size plus what
// the container wrote between two passes (the bound kubelet's rotation
// has too); the lines across the files are one unbroken sequence ending in
// the last line written, which the live log holds.
func TestLogRotationOnContainerd(t *testing.T) {
	const (
		maxSize     = 1 << 20
		maxFiles    = 4
		interval    = time.Second
		seconds     = 12
		chunksPerS  = 10
		linesPerChk = 4700 // 106-byte lines on disk: ~5 MB/s
	)
	e, rt := setup(t)
	root := t.TempDir()
	a := newAgent(t, rt, root)
	total := seconds * chunksPerS * linesPerChk
	// Each line: an 8-digit counter and padding, 61 bytes with the newline;
	// a chunk of lines every tenth of a second by the kernel's uptime.
	script := fmt.Sprintf(`awk 'function now(  u, a) {getline u < "/proc/uptime"; close("/proc/uptime"); split(u, a, " "); return a[1]}
BEGIN{pad=sprintf("%%51s",""); gsub(/ /,"x",pad); n=0; t0=now();
for(c=0;c<%d;c++){for(j=0;j<%d;j++){printf "%%08d %%s\n", n, pad; n++}; fflush(); while(now()-t0 < (c+1)/%d) system("sleep 0.02")}
printf "done %%d\n", n; fflush()}'; exec sleep 3600`, seconds*chunksPerS, linesPerChk, chunksPerS)
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
	// writes on its own time), then one more pass.
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
		first, last time.Time
		allBytes    int64
		next        = -1
		doneSeen    bool
	)
	sizes := map[string]int64{}
	for _, f := range order {
		data := readLog(t, f)
		sizes[filepath.Base(f)] = int64(len(data))
		allBytes += int64(len(data))
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			ts, stream, tag, msg, ok := parseCRILine(sc.Text())
			if !ok || stream != "stdout" || tag != "F" {
				t.Fatalf("%s: not a full CRI stdout line: %q", filepath.Base(f), sc.Text())
			}
			if first.IsZero() {
				first = ts
			}
			last = ts
			if msg == wantLast {
				doneSeen = true
				if f != live {
					t.Errorf("the last line is in %s, not the live log", filepath.Base(f))
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
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if !doneSeen || next != total {
		t.Fatalf("last counter %d (want %d), last line seen: %v", next-1, total-1, doneSeen)
	}
	span := last.Sub(first).Seconds()
	rate := float64(allBytes) / span
	gap := passes.maxGap()
	bound := int64(maxSize + rate*(gap.Seconds()+0.2))
	t.Logf("kept %d bytes spanning %.1f s: %.2f MB/s on disk; longest gap between passes %v; bound per file %d bytes (max size %d + rate x (gap + 0.2 s))",
		allBytes, span, rate/1e6, gap.Round(time.Millisecond), bound, maxSize)
	for _, f := range order {
		n := filepath.Base(f)
		t.Logf("  %s: %d bytes uncompressed", n, sizes[n])
		if sizes[n] > bound {
			t.Errorf("%s: %d bytes, over max size + what is written between two passes (%d)", n, sizes[n], bound)
		}
	}
	if rate < 3e6 {
		t.Errorf("the writer wrote %.2f MB/s, want about 5", rate/1e6)
	}
}

// passRecorder shows the Manager only the test pod's containers (other
// tests share containerd) and records when each pass began.
type passRecorder struct {
	containerlogs.Runtime
	uid   string
	mu    sync.Mutex
	times []time.Time
}

func (p *passRecorder) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	p.mu.Lock()
	p.times = append(p.times, time.Now())
	p.mu.Unlock()
	return p.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{podsync.LabelPodUID: p.uid}})
}

func (p *passRecorder) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.times)
}

func (p *passRecorder) maxGap() (gap time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := 1; i < len(p.times); i++ {
		gap = max(gap, p.times[i].Sub(p.times[i-1]))
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
