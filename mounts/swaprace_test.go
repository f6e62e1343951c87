package mounts

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// TestSwapRace: while another goroutine swaps a directory of the volume
// with a symlink to outside it (renameat2 RENAME_EXCHANGE, atomic), Make
// with a subPath through that directory never returns a path outside the
// volume and never creates anything outside it. It runs until a counted
// amount of racing has happened (Make calls, successes and swaps), not for
// a time, so a loaded machine makes it slower, not weaker; the one-minute
// deadline only catches a swapper that never gets to run.
func TestSwapRace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	vol, outside := filepath.Join(dir, "volume"), filepath.Join(dir, "outside")
	for _, d := range []string{filepath.Join(vol, "a", "b"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(vol, "evil")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(vol, "a"), unix.AT_FDCWD, filepath.Join(vol, "evil"), unix.RENAME_EXCHANGE); err != nil {
		t.Fatalf("RENAME_EXCHANGE: %v", err)
	}
	var stop atomic.Bool
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(vol, "a"), unix.AT_FDCWD, filepath.Join(vol, "evil"), unix.RENAME_EXCHANGE); err == nil {
				swaps.Add(1)
			}
		}
	}()
	volReal, _ := filepath.EvalSymlinks(vol)
	// About half a second's worth on an idle machine (about 5,000 calls,
	// 1,500 successes and 35,000 swaps a second).
	const minCalls, minOKs, minSwaps = 2000, 500, 1000
	deadline := time.Now().Add(time.Minute)
	calls, oks := 0, 0
	subs := []string{"a/b", "a/b/new", "a", "a/b/c/d"}
	for calls < minCalls || oks < minOKs || swaps.Load() < minSwaps {
		if calls >= minCalls && oks == 0 {
			// About a third succeed when racing; none is a broken Make
			// (or pod), not a slow machine.
			stop.Store(true)
			wg.Wait()
			t.Fatalf("no Make call succeeded in %d", calls)
		}
		if time.Now().After(deadline) {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("no race within a minute: %d calls, %d successes, %d swaps", calls, oks, swaps.Load())
		}
		sub := subs[calls%len(subs)]
		calls++
		p, c := pod(corev1.VolumeMount{Name: "v", MountPath: "/d", SubPath: sub})
		got, err := Make(context.Background(), Request{Pod: p, Container: c, Volumes: VolumeMap{"v": {HostPath: vol}}})
		if err != nil {
			continue
		}
		oks++
		hp := got[0].HostPath
		if hp != volReal && !strings.HasPrefix(hp, volReal+"/") {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("escape after %d calls: subPath %q resolved to %q", calls, sub, hp)
		}
	}
	stop.Store(true)
	wg.Wait()
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("created outside the volume: %v", entries)
	}
	t.Logf("%d Make calls (%d succeeded) under %d swaps: 0 escapes", calls, oks, swaps.Load())
}
