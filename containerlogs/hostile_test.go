package containerlogs_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/podstart/podstart/containerlogs"
)

const secret = "root:x:0:0:s3cret-host-file\n"

// hostFile is a file outside the pod logs directory: a CRI log whose
// lines a symlink would have served, or a host file.
func hostFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "host-file")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadLogsRefusesSymlink: a symlink at the live log path is refused
// with ErrNotRegular and nothing is written, as rotation refuses it;
// before, ReadLogs followed it to any host file and served its lines.
func TestReadLogsRefusesSymlink(t *testing.T) {
	t.Parallel()
	for _, target := range []string{
		"2026-11-26T17:00:00Z stdout F host line\n", // a CRI log: its lines were served
		secret, // a host file: its first line was quoted in the error
	} {
		logsDir := t.TempDir()
		ctrDir := filepath.Join(logsDir, "ns_pod_uid", "app")
		if err := os.MkdirAll(ctrDir, 0o755); err != nil {
			t.Fatal(err)
		}
		live := filepath.Join(ctrDir, "0.log")
		if err := os.Symlink(hostFile(t, target), live); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		for name, err := range map[string]error{
			"ReadLogs":   containerlogs.ReadLogs(context.Background(), live, "", containerlogs.LogOptions{}, nil, &out, &out),
			"ReadLogsIn": containerlogs.ReadLogsIn(context.Background(), logsDir, live, "", containerlogs.LogOptions{}, nil, &out, &out),
		} {
			if !errors.Is(err, containerlogs.ErrNotRegular) {
				t.Errorf("%s through a symlink = %v, want ErrNotRegular", name, err)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("%s's error quotes the file: %v", name, err)
			}
		}
		if out.Len() > 0 {
			t.Errorf("read through a symlink: %q", out.String())
		}
	}
}

// TestReadLogsInRefusesLinkOut: under ReadLogsIn, a container directory
// linked out of the pod logs directory is not followed (rotation's
// os.Root refuses it too), and a path outside it is ErrOutsideLogsDir.
func TestReadLogsInRefusesLinkOut(t *testing.T) {
	t.Parallel()
	logsDir := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "0.log"), []byte("2026-11-26T17:00:00Z stdout F host line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(logsDir, "ns_pod_uid"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(logsDir, "ns_pod_uid", "app")); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := containerlogs.ReadLogsIn(context.Background(), logsDir, filepath.Join(logsDir, "ns_pod_uid", "app", "0.log"), "", containerlogs.LogOptions{}, nil, &out, &out)
	if err == nil || out.Len() > 0 {
		t.Errorf("ReadLogsIn through a directory linked out = %v, wrote %q", err, out.String())
	}
	err = containerlogs.ReadLogsIn(context.Background(), logsDir, filepath.Join(outside, "0.log"), "", containerlogs.LogOptions{}, nil, &out, &out)
	if !errors.Is(err, containerlogs.ErrOutsideLogsDir) || out.Len() > 0 {
		t.Errorf("ReadLogsIn outside the logs directory = %v, wrote %q; want ErrOutsideLogsDir", err, out.String())
	}
}

// TestReadLogsDoesNotQuoteContent: a regular file whose first line is in
// no log format fails with ErrUnsupportedLogFormat, without its content.
func TestReadLogsDoesNotQuoteContent(t *testing.T) {
	t.Parallel()
	p := hostFile(t, secret)
	err := containerlogs.ReadLogs(context.Background(), p, "", containerlogs.LogOptions{}, nil, nil, nil)
	if !errors.Is(err, containerlogs.ErrUnsupportedLogFormat) {
		t.Fatalf("ReadLogs = %v, want ErrUnsupportedLogFormat", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error quotes the file: %v", err)
	}
}

// TestReadLogsFIFO: a FIFO at the live log path is refused with
// ErrNotRegular at once, with and without follow; before, the open
// waited for a writer whatever the context (the test's own timeout
// catches a hang).
func TestReadLogsFIFO(t *testing.T) {
	t.Parallel()
	logsDir := t.TempDir()
	live := filepath.Join(logsDir, "0.log")
	if err := syscall.Mkfifo(live, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, follow := range []bool{false, true} {
		err := containerlogs.ReadLogs(context.Background(), live, "c1", containerlogs.LogOptions{Follow: follow}, nil, nil, nil)
		if !errors.Is(err, containerlogs.ErrNotRegular) {
			t.Errorf("ReadLogs (follow %v) of a FIFO = %v, want ErrNotRegular", follow, err)
		}
		err = containerlogs.ReadLogsIn(context.Background(), logsDir, live, "c1", containerlogs.LogOptions{Follow: follow}, nil, nil, nil)
		if !errors.Is(err, containerlogs.ErrNotRegular) {
			t.Errorf("ReadLogsIn (follow %v) of a FIFO = %v, want ErrNotRegular", follow, err)
		}
	}
}
