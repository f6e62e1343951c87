package podsync

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestTailCRILog(t *testing.T) {
	cases := []struct {
		name, log  string
		lines, max int
		want       string
	}{
		{"empty", "", 80, 2048, ""},
		{"full lines", "2026-11-24T00:00:00.000000000Z stdout F hello\n2026-11-24T00:00:00.1Z stderr F world\n", 80, 2048, "hello\nworld\n"},
		{"partial joins", "t stdout P hel\nt stdout F lo\n", 80, 2048, "hello\n"},
		{"empty content", "t stdout F\nt stdout F \n", 80, 2048, "\n\n"},
		{"last lines only", "t stdout F a\nt stdout F b\nt stdout F c\n", 2, 2048, "b\nc\n"},
		{"last bytes only", "t stdout F abcdef\n", 80, 3, "ef\n"},
		{"garbage skipped", "nonsense\nt stdout F ok\n", 80, 2048, "ok\n"},
		{"spaces kept", "t stdout F a  b \n", 80, 2048, "a  b \n"},
	}
	for _, c := range cases {
		if got := string(tailCRILog([]byte(c.log), c.lines, c.max)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func FuzzTailCRILog(f *testing.F) {
	f.Add([]byte("t stdout F hello\nt stderr P par\nt stderr F tial\n"), 80, 2048)
	f.Add([]byte("\n\n\n"), 1, 1)
	f.Fuzz(func(t *testing.T, raw []byte, lines, max int) {
		if lines < 1 || lines > 1000 || max < 1 || max > 1<<16 {
			return
		}
		out := tailCRILog(raw, lines, max)
		if len(out) > max {
			t.Fatalf("%d bytes, more than %d", len(out), max)
		}
	})
}

func TestTerminationMessage(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "termination")
	logFile := filepath.Join(dir, "0.log")
	if err := os.WriteFile(logFile, []byte(strings.Repeat("t stderr F line\n", 100)+"t stderr F the end\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	status := func(policy string) *runtimeapi.ContainerStatus {
		return &runtimeapi.ContainerStatus{
			LogPath: logFile,
			Annotations: map[string]string{AnnotationTerminationMessagePath: "/dev/termination-log",
				AnnotationTerminationMessagePolicy: policy},
			Mounts: []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: file}},
		}
	}
	if got := terminationMessage(status("File"), 1, "Error"); got != "" {
		t.Errorf("no file: %q", got)
	}
	tail := terminationMessage(status("FallbackToLogsOnError"), 1, "Error")
	if !strings.HasSuffix(tail, "line\nthe end\n") || strings.Count(tail, "\n") != 80 {
		t.Errorf("log tail: %d lines, ends %q", strings.Count(tail, "\n"), tail[max(0, len(tail)-20):])
	}
	if got := terminationMessage(status("FallbackToLogsOnError"), 0, "Completed"); got != "" {
		t.Errorf("exit 0 falls back to logs: %q", got)
	}
	big := strings.Repeat("x", 5000) + "END"
	if err := os.WriteFile(file, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	got := terminationMessage(status("FallbackToLogsOnError"), 1, "Error")
	if len(got) != MaxTerminationMessageLength || !strings.HasSuffix(got, "END") {
		t.Errorf("file message: %d bytes, want the last %d", len(got), MaxTerminationMessageLength)
	}
}
