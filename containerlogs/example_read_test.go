package containerlogs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/containerlogs"
)

// kubectl logs --tail=2 --timestamps on a CRI log with a partial line.
func ExampleReadLogs() {
	dir, _ := os.MkdirTemp("", "logs")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "0.log")
	_ = os.WriteFile(path, []byte(`2026-11-26T17:00:00Z stdout F starting
2026-11-26T17:00:01.5Z stdout P hello, 
2026-11-26T17:00:01.6Z stdout F world
2026-11-26T17:00:02Z stderr F bye
`), 0o640)

	apiOpts := &corev1.PodLogOptions{TailLines: ptr.To[int64](3), Timestamps: true}
	if err := containerlogs.ValidateLogOptions(apiOpts); err != nil {
		fmt.Println(err)
		return
	}
	stdout, stderr, _ := containerlogs.StreamWriters(apiOpts.Stream, os.Stdout, false)
	opts := containerlogs.NewLogOptions(apiOpts, time.Now())
	err := containerlogs.ReadLogs(context.Background(), path, "", opts, nil, stdout, stderr)
	fmt.Println("error:", err)
	// Output:
	// 2026-11-26T17:00:01.500000000Z hello, world
	// 2026-11-26T17:00:02.000000000Z bye
	// error: <nil>
}
