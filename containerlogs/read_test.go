package containerlogs_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/containerlogs"
	"github.com/podstart/podstart/runtime"
)

// Any runtime.RuntimeService tells a follow whether its container runs.
var _ containerlogs.ContainerStatusReader = runtime.RuntimeService(nil)

// criLog is a log in the CRI format, as containerd writes it.
const criLog = `2026-11-26T17:00:00.000000001Z stdout F one
2026-11-26T17:00:01.5Z stderr F two
2026-11-26T17:00:02Z stdout P thr
2026-11-26T17:00:02.1Z stdout P ee-
2026-11-26T17:00:03Z stdout F end
2026-11-26T17:00:04.000000004Z stderr F five
`

func writeLog(t testing.TB, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(p, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadLogs(t *testing.T) {
	t.Parallel()
	since := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	tests := []struct {
		name       string
		log        string
		opts       containerlogs.LogOptions
		split      string // "" both to one writer; "out" or "err": that stream only
		want       string
		wantErr    error
		wantErrMsg string
	}{
		{name: "all", log: criLog, want: "one\ntwo\nthree-end\nfive\n"},
		{name: "empty file", log: "", want: ""},
		{name: "timestamps on line starts only", log: criLog, opts: containerlogs.LogOptions{Timestamp: true},
			want: "2026-11-26T17:00:00.000000001Z one\n2026-11-26T17:00:01.500000000Z two\n" +
				"2026-11-26T17:00:02.000000000Z three-end\n2026-11-26T17:00:04.000000004Z five\n"},
		{name: "stdout only", log: criLog, split: "out", want: "one\nthree-end\n"},
		{name: "stderr only", log: criLog, split: "err", want: "two\nfive\n"},
		{name: "tail 2", log: criLog, opts: containerlogs.LogOptions{TailLines: ptr.To[int64](2)}, want: "end\nfive\n"},
		{name: "tail 0", log: criLog, opts: containerlogs.LogOptions{TailLines: ptr.To[int64](0)}, want: ""},
		{name: "tail more than lines", log: criLog, opts: containerlogs.LogOptions{TailLines: ptr.To[int64](100)}, want: "one\ntwo\nthree-end\nfive\n"},
		{name: "tail huge", log: criLog, opts: containerlogs.LogOptions{TailLines: ptr.To[int64](1 << 62)}, want: "one\ntwo\nthree-end\nfive\n"},
		{name: "tail counts file lines, partial ones too", log: criLog, opts: containerlogs.LogOptions{TailLines: ptr.To[int64](3)}, want: "ee-end\nfive\n"},
		{name: "limit cuts a line", log: criLog, opts: containerlogs.LogOptions{LimitBytes: ptr.To[int64](6)}, want: "one\ntw"},
		{name: "limit huge", log: criLog, opts: containerlogs.LogOptions{LimitBytes: ptr.To[int64](1 << 62)}, want: "one\ntwo\nthree-end\nfive\n"},
		{name: "limit counts timestamps", log: criLog, opts: containerlogs.LogOptions{LimitBytes: ptr.To[int64](33), Timestamp: true}, want: "2026-11-26T17:00:00.000000001Z on"},
		{name: "limit skips other stream", log: criLog, split: "err", opts: containerlogs.LogOptions{LimitBytes: ptr.To[int64](5)}, want: "two\nf"},
		{name: "since keeps equal", log: criLog, opts: containerlogs.LogOptions{Since: since("2026-11-26T17:00:01.5Z")}, want: "two\nthree-end\nfive\n"},
		{name: "since in a partial line", log: criLog, opts: containerlogs.LogOptions{Since: since("2026-11-26T17:00:02.05Z"), Timestamp: true},
			want: "ee-end\n2026-11-26T17:00:04.000000004Z five\n"},
		{name: "incomplete last line read", log: criLog + "2026-11-26T17:00:05Z stdout F no newline", want: "one\ntwo\nthree-end\nfive\nno newline"},
		{name: "tail ignores incomplete last line", log: "2026-11-26T17:00:05Z stdout F a\n2026-11-26T17:00:05Z stdout F b\n2026-11-26T17:00:05Z stdout F c",
			opts: containerlogs.LogOptions{TailLines: ptr.To[int64](1)}, want: "b\n"},
		{name: "bad lines skipped", log: criLog[:44] + "garbage\n2026-11-26T17:00:05Z stdin F x\n" + criLog[44:], want: "one\ntwo\nthree-end\nfive\n"},
		{name: "extra tags", log: "2026-11-26T17:00:05Z stdout P:x a\n2026-11-26T17:00:05Z stdout F:y b\n", want: "ab\n"},
		{name: "unknown tag is full", log: "2026-11-26T17:00:05Z stdout Q a\n2026-11-26T17:00:05Z stdout P b\n", want: "a\nb"},
		{name: "first line decides format", log: "garbage\n" + criLog, wantErr: containerlogs.ErrUnsupportedLogFormat,
			wantErrMsg: `failed to get parse function: unsupported log format`},
		{name: "docker json", log: `{"log":"a\n","stream":"stdout","time":"2016-10-20T18:39:20.57606443Z"}` + "\n" +
			`{"log":"b","stream":"stderr","time":"2016-10-20T18:39:21Z"}` + "\n" + `{"log":"c\n","stream":"stderr","time":"2016-10-20T18:39:22Z"}` + "\n",
			opts: containerlogs.LogOptions{Timestamp: true},
			want: "2016-10-20T18:39:20.576064430Z a\n2016-10-20T18:39:21.000000000Z bc\n"},
		{name: "docker json other stream stops", log: `{"log":"a\n","stream":"stdout","time":"2016-10-20T18:39:20Z"}` + "\n" +
			`{"log":"b\n","stream":"stdin","time":"2016-10-20T18:39:21Z"}` + "\n" + `{"log":"c\n","stream":"stdout","time":"2016-10-20T18:39:22Z"}` + "\n",
			wantErrMsg: `unexpected stream type "stdin"`, want: "a\n"},
		{name: "negative limit", log: criLog, opts: containerlogs.LogOptions{LimitBytes: ptr.To[int64](-1)}, wantErr: containerlogs.ErrInvalidLogOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := writeLog(t, tt.log)
			var out bytes.Buffer
			var stdout, stderr io.Writer = &out, &out
			switch tt.split {
			case "out":
				stderr = nil
			case "err":
				stdout = nil
			}
			err := containerlogs.ReadLogs(context.Background(), p, "", tt.opts, nil, stdout, stderr)
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) || tt.wantErr == nil && tt.wantErrMsg == "" && err != nil {
				t.Fatalf("ReadLogs = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErrMsg != "" && (err == nil || err.Error() != tt.wantErrMsg) {
				t.Fatalf("ReadLogs = %v, want %q", err, tt.wantErrMsg)
			}
			if got := out.String(); got != tt.want {
				t.Errorf("ReadLogs wrote\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestReadLogsMissingFile(t *testing.T) {
	t.Parallel()
	err := containerlogs.ReadLogs(context.Background(), filepath.Join(t.TempDir(), "0.log"), "", containerlogs.LogOptions{}, nil, io.Discard, io.Discard)
	if !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "failed to try resolving symlinks in path") {
		t.Fatalf("ReadLogs = %v, want kubelet's error matching os.ErrNotExist", err)
	}
}

// shortWriter writes one byte less than it is given.
type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return max(len(p)-1, 0), nil }

func TestReadLogsShortWrite(t *testing.T) {
	t.Parallel()
	err := containerlogs.ReadLogs(context.Background(), writeLog(t, criLog), "", containerlogs.LogOptions{}, nil, shortWriter{}, shortWriter{})
	if !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("ReadLogs = %v, want io.ErrShortWrite", err)
	}
}

func TestNewLogOptions(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 17, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		in   corev1.PodLogOptions
		want containerlogs.LogOptions
	}{
		{name: "empty", want: containerlogs.LogOptions{}},
		{name: "copied", in: corev1.PodLogOptions{TailLines: ptr.To[int64](3), LimitBytes: ptr.To[int64](4), Follow: true, Timestamps: true},
			want: containerlogs.LogOptions{TailLines: ptr.To[int64](3), LimitBytes: ptr.To[int64](4), Follow: true, Timestamp: true}},
		{name: "sinceSeconds", in: corev1.PodLogOptions{SinceSeconds: ptr.To[int64](60)}, want: containerlogs.LogOptions{Since: now.Add(-time.Minute)}},
		{name: "later sinceTime wins", in: corev1.PodLogOptions{SinceSeconds: ptr.To[int64](60), SinceTime: &metav1.Time{Time: now.Add(-time.Second)}},
			want: containerlogs.LogOptions{Since: now.Add(-time.Second)}},
		{name: "earlier sinceTime loses", in: corev1.PodLogOptions{SinceSeconds: ptr.To[int64](60), SinceTime: &metav1.Time{Time: now.Add(-time.Hour)}},
			want: containerlogs.LogOptions{Since: now.Add(-time.Minute)}},
	}
	for _, tt := range tests {
		got := containerlogs.NewLogOptions(&tt.in, now)
		if !got.Since.Equal(tt.want.Since) || got.Follow != tt.want.Follow || got.Timestamp != tt.want.Timestamp ||
			!ptrEq(got.TailLines, tt.want.TailLines) || !ptrEq(got.LimitBytes, tt.want.LimitBytes) {
			t.Errorf("%s: NewLogOptions = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func ptrEq(a, b *int64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

func TestStreamWriters(t *testing.T) {
	t.Parallel()
	var w bytes.Buffer
	tests := []struct {
		stream           *string
		split            bool
		wantOut, wantErr bool
		err              error
	}{
		{stream: nil, wantOut: true, wantErr: true},
		{stream: ptr.To(corev1.LogStreamAll), wantOut: true, wantErr: true},
		{stream: ptr.To(corev1.LogStreamStdout), err: containerlogs.ErrStreamNotEnabled},
		{stream: ptr.To(corev1.LogStreamStdout), split: true, wantOut: true},
		{stream: ptr.To(corev1.LogStreamStderr), split: true, wantErr: true},
		{stream: ptr.To("Stdin"), split: true, err: containerlogs.ErrInvalidStream},
	}
	for _, tt := range tests {
		o, e, err := containerlogs.StreamWriters(tt.stream, &w, tt.split)
		if !errors.Is(err, tt.err) || (o != nil) != tt.wantOut || (e != nil) != tt.wantErr {
			t.Errorf("StreamWriters(%v, %v) = %v, %v, %v", ptr.Deref(tt.stream, "nil"), tt.split, o, e, err)
		}
	}
}

func TestValidateLogOptions(t *testing.T) {
	t.Parallel()
	ok := []corev1.PodLogOptions{{}, {TailLines: ptr.To[int64](0), LimitBytes: ptr.To[int64](1), SinceSeconds: ptr.To[int64](1)},
		{Stream: ptr.To(corev1.LogStreamStderr)}, {Stream: ptr.To(corev1.LogStreamAll), TailLines: ptr.To[int64](1)}}
	bad := []corev1.PodLogOptions{{TailLines: ptr.To[int64](-1)}, {LimitBytes: ptr.To[int64](0)}, {SinceSeconds: ptr.To[int64](0)},
		{SinceSeconds: ptr.To[int64](1), SinceTime: &metav1.Time{}}, {Stream: ptr.To("x")},
		{Stream: ptr.To(corev1.LogStreamStdout), TailLines: ptr.To[int64](1)}}
	for _, o := range ok {
		if err := containerlogs.ValidateLogOptions(&o); err != nil {
			t.Errorf("ValidateLogOptions(%+v) = %v", o, err)
		}
	}
	for _, o := range bad {
		if err := containerlogs.ValidateLogOptions(&o); !errors.Is(err, containerlogs.ErrInvalidLogOptions) {
			t.Errorf("ValidateLogOptions(%+v) = %v, want ErrInvalidLogOptions", o, err)
		}
	}
}
