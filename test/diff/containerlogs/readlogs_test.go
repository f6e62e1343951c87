// Package containerlogs compares podstart's containerlogs.ReadLogs with
// kubelet v1.37.2's log reader, k8s.io/cri-client/pkg/logs.ReadLogs (what
// pkg/kubelet/kuberuntime's ReadLogs calls after converting the API's
// options), byte for byte:
//
//	go test ./containerlogs/                     # random files and options, a new seed each run
//	go test ./containerlogs/ -seed 42 -scale 10  # replay a seed, ten times as many cases
package containerlogs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	kubeletlogs "k8s.io/cri-client/pkg/logs"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/containerlogs"
	"github.com/podstart/podstart/test/diff/internal/seeded"
)

// kubeletOptions is pkg/kubelet/kuberuntime's conversion of the API's
// options (kubeGenericRuntimeManager.ReadLogs, kuberuntime_logs.go), which
// is a method of an unexported type: restated here, at time now.
func kubeletOptions(o *corev1.PodLogOptions, now time.Time) *kubeletlogs.LogOptions {
	opts := &kubeletlogs.LogOptions{TailLines: o.TailLines, LimitBytes: o.LimitBytes, Follow: o.Follow, Timestamp: o.Timestamps}
	if o.SinceSeconds != nil {
		opts.Since = now.Add(-time.Duration(*o.SinceSeconds) * time.Second)
	}
	if o.SinceTime != nil && o.SinceTime.After(opts.Since) {
		opts.Since = o.SinceTime.Time
	}
	return opts
}

var base = time.Date(2026, 11, 26, 17, 0, 0, 0, time.UTC)

var contents = []string{"", " ", "hello", "a b  c", "tab\there", "ünïcødé", "{\"json\":1}", "\x00\xff", "P F", "stdout F x",
	"2026-11-26T17:00:00Z stdout F nested", "\r", "end\\n"}

// randomTime is a time near base, written in one of the layouts runtimes
// use (fractions of any length, offsets).
func randomTime(r *rand.Rand) (time.Time, string) {
	ts := base.Add(time.Duration(r.IntN(120)) * time.Second).Add(time.Duration(r.IntN(1000)) * time.Millisecond / time.Duration(1+r.IntN(1000)))
	switch r.IntN(6) {
	case 0:
		return ts, ts.Format(time.RFC3339)
	case 1:
		z := ts.In(time.FixedZone("", (r.IntN(25)-12)*3600))
		return z, z.Format(time.RFC3339Nano)
	case 2:
		return ts, ts.Format("2006-01-02T15:04:05.000000000Z07:00")
	default:
		return ts, ts.Format(time.RFC3339Nano)
	}
}

func randomContent(r *rand.Rand) string {
	if r.IntN(200) == 0 {
		return strings.Repeat("long", 1+r.IntN(20000)) // past bufio's buffers
	}
	var b strings.Builder
	for i := 0; i < r.IntN(4); i++ {
		b.WriteString(contents[r.IntN(len(contents))])
	}
	return b.String()
}

// randomLog returns a random log file: mostly CRI lines, sometimes
// Docker JSON lines, with bad lines, odd tags and an incomplete end.
func randomLog(r *rand.Rand) []byte {
	var b bytes.Buffer
	n := r.IntN(60)
	if r.IntN(10) == 0 {
		n = r.IntN(3000)
	}
	docker := r.IntN(8) == 0
	streams := []string{"stdout", "stderr"}
	for i := 0; i < n; i++ {
		_, ts := randomTime(r)
		stream := streams[r.IntN(2)]
		switch {
		case r.IntN(40) == 0:
			b.WriteString(pickOne(r, []string{"garbage", "", "2026-11-26T17:00:00Z", "2026-11-26T17:00:00Z stdin F x",
				"2026-11-26T17:00:00Z stdout", "2026-11-26T17:00:00Z stdout F", "26-11-2026 stdout F x", `{"log":`}))
		case docker:
			if r.IntN(20) == 0 {
				stream = pickOne(r, []string{"stdin", "", "STDOUT"})
			}
			c := randomContent(r)
			if r.IntN(3) > 0 {
				c += "\n"
			}
			line, _ := json.Marshal(map[string]string{"log": c, "stream": stream, "time": ts})
			b.Write(line)
		default:
			tag := pickOne(r, []string{"F", "F", "P", "P", "P:x", "F:y", "X", "p"})
			fmt.Fprintf(&b, "%s %s %s %s", ts, stream, tag, randomContent(r))
		}
		if i < n-1 || r.IntN(4) > 0 {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func pickOne[T any](r *rand.Rand, list []T) T { return list[r.IntN(len(list))] }

func randomOptions(r *rand.Rand, lines int64, size int64, now time.Time) *corev1.PodLogOptions {
	o := &corev1.PodLogOptions{Timestamps: r.IntN(2) == 0}
	switch r.IntN(4) {
	case 0:
		o.TailLines = ptr.To(r.Int64N(lines + 3))
	case 1:
		o.TailLines = ptr.To(pickOne(r, []int64{0, 1, 1 << 40, 1<<63 - 1}))
	}
	switch r.IntN(4) {
	case 0:
		o.LimitBytes = ptr.To(1 + r.Int64N(size+10))
	case 1:
		o.LimitBytes = ptr.To(pickOne(r, []int64{1, 2, 1 << 40, 1<<63 - 1}))
	}
	switch r.IntN(5) {
	case 0:
		o.SinceTime = &metav1.Time{Time: base.Add(time.Duration(r.IntN(130)) * time.Second)}
	case 1:
		o.SinceSeconds = ptr.To(1 + r.Int64N(int64(now.Sub(base)/time.Second)+10))
	case 2:
		o.SinceSeconds = ptr.To(1 + r.Int64N(100))
		o.SinceTime = &metav1.Time{Time: base.Add(time.Duration(r.IntN(130)) * time.Second)}
	}
	return o
}

type output struct {
	stdout, stderr bytes.Buffer
	err            string
}

func (o *output) String() string {
	return fmt.Sprintf("stdout %q\nstderr %q\nerr %s", o.stdout.String(), o.stderr.String(), o.err)
}

// writers returns the writers as kubelet's server picks them for a
// stream: both, or one and nil.
func (o *output) writers(stream string) (io.Writer, io.Writer) {
	switch stream {
	case corev1.LogStreamStdout:
		return &o.stdout, nil
	case corev1.LogStreamStderr:
		return nil, &o.stderr
	}
	return &o.stdout, &o.stderr
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestReadLogs compares the bytes written to each stream and the error
// on random files and random options, without follow.
func TestReadLogs(t *testing.T) {
	r := seeded.Rand(t)
	path := filepath.Join(t.TempDir(), "0.log")
	now := base.Add(90 * time.Second)
	n := seeded.Cases(3000)
	differ, written, failed := 0, 0, 0
	for i := 0; i < n; i++ {
		log := randomLog(r)
		if err := os.WriteFile(path, log, 0o640); err != nil {
			t.Fatal(err)
		}
		apiOpts := randomOptions(r, int64(bytes.Count(log, []byte{'\n'})), int64(len(log)), now)
		stream := pickOne(r, []string{corev1.LogStreamAll, corev1.LogStreamAll, corev1.LogStreamStdout, corev1.LogStreamStderr})
		var want, got output
		o, e := want.writers(stream)
		want.err = errText(kubeletlogs.ReadLogs(context.Background(), path, "", kubeletOptions(apiOpts, now), nil, o, e))
		// A deliberate difference: podstart never quotes the file's
		// first line (it may be any file's content).
		if i := strings.Index(want.err, "unsupported log format: "); i >= 0 {
			want.err = want.err[:i] + "unsupported log format"
		}
		o, e = got.writers(stream)
		got.err = errText(containerlogs.ReadLogs(context.Background(), path, "", containerlogs.NewLogOptions(apiOpts, now), nil, o, e))
		if want.stdout.Len()+want.stderr.Len() > 0 {
			written++
		}
		if want.err != "<nil>" {
			failed++
		}
		if got.String() != want.String() {
			if differ++; differ <= 5 {
				t.Errorf("case %d: file %q, options %+v, stream %s:\npodstart:\n%s\nkubelet:\n%s", i, truncate(log), apiOpts, stream, &got, &want)
			}
		}
	}
	t.Logf("%d random files and options compared (%d with output, %d with kubelet's errors), %d differ", n, written, failed, differ)
	if differ > 0 {
		t.Errorf("%d of %d reads differ from kubelet's", differ, n)
	}
}

func truncate(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "..."
	}
	return string(b)
}

// syncBuffer is a bytes.Buffer safe for a reader and a writer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestFollow runs kubelet's follow and podstart's side by side on
// scripted writes to one file, steps apart, then stops the container.
func TestFollow(t *testing.T) {
	l := func(sec int, stream, tag, s string) string {
		return fmt.Sprintf("2026-11-26T17:00:%02dZ %s %s %s\n", sec, stream, tag, s)
	}
	type step struct {
		write  string // appended to the live file
		rotate bool   // rename the live file and create it anew
	}
	tests := []struct {
		name    string
		initial string
		opts    corev1.PodLogOptions
		steps   []step
	}{
		{name: "appends", initial: l(0, "stdout", "F", "a") + l(1, "stderr", "F", "b"),
			opts:  corev1.PodLogOptions{Follow: true, Timestamps: true},
			steps: []step{{write: l(2, "stdout", "F", "c")}, {write: l(3, "stdout", "P", "d")}, {write: l(4, "stdout", "F", "e")}}},
		{name: "incomplete line completed", initial: l(0, "stdout", "F", "a"),
			opts:  corev1.PodLogOptions{Follow: true, TailLines: ptr.To[int64](0)},
			steps: []step{{write: "2026-11-26T17:00:05Z stdout F hal"}, {write: "f\n"}, {write: l(6, "stderr", "F", "x")}}},
		{name: "tail limit since", initial: l(0, "stdout", "F", "a") + l(10, "stdout", "F", "b") + l(20, "stdout", "F", "c"),
			opts:  corev1.PodLogOptions{Follow: true, TailLines: ptr.To[int64](2), LimitBytes: ptr.To[int64](9), SinceTime: &metav1.Time{Time: base.Add(15 * time.Second)}},
			steps: []step{{write: l(30, "stdout", "F", "dddd")}, {write: l(40, "stdout", "F", "eeee")}}},
		{name: "rotation", initial: l(0, "stdout", "F", "a"),
			opts:  corev1.PodLogOptions{Follow: true},
			steps: []step{{write: l(1, "stdout", "F", "b")}, {rotate: true}, {write: l(2, "stdout", "F", "c")}, {rotate: true}, {write: l(3, "stderr", "F", "d")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "0.log")
			if err := os.WriteFile(path, []byte(tt.initial), 0o640); err != nil {
				t.Fatal(err)
			}
			rt := critest.NewFakeRuntimeService()
			setState := func(s runtimeapi.ContainerState) {
				rt.SetFakeContainers([]*critest.FakeContainer{{ContainerStatus: runtimeapi.ContainerStatus{Id: "c1", State: s}}})
			}
			setState(runtimeapi.ContainerState_CONTAINER_RUNNING)
			now := base.Add(time.Minute)
			var kout, pout syncBuffer
			var kerr, perr error
			var wg sync.WaitGroup
			wg.Add(2)
			go func() {
				defer wg.Done()
				kerr = kubeletlogs.ReadLogs(context.Background(), path, "c1", kubeletOptions(&tt.opts, now), rt, &kout, &kout)
			}()
			go func() {
				defer wg.Done()
				perr = containerlogs.ReadLogs(context.Background(), path, "c1", containerlogs.NewLogOptions(&tt.opts, now), rt, &pout, &pout)
			}()
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { f.Close() }()
			for i, s := range tt.steps {
				time.Sleep(150 * time.Millisecond)
				if s.rotate {
					if err := os.Rename(path, fmt.Sprintf("%s.%d", path, i)); err != nil {
						t.Fatal(err)
					}
					f.Close()
					if f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if _, err := f.WriteString(s.write); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(300 * time.Millisecond)
			setState(runtimeapi.ContainerState_CONTAINER_EXITED)
			wg.Wait()
			if kout.String() != pout.String() || errText(kerr) != errText(perr) {
				t.Errorf("podstart wrote %q (%v), kubelet %q (%v)", pout.String(), perr, kout.String(), kerr)
			}
			t.Logf("both wrote %q", kout.String())
		})
	}
}
