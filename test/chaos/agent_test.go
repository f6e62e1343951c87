//go:build chaos

package chaos

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// agent is examples/nodeagent run as a process of its own, so that it can
// be SIGKILLed and started again on the same root directory.
type agent struct {
	t    *testing.T
	bin  string
	args []string
	log  string
	// nextEnv is added to the environment of the next start only.
	nextEnv []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	runs int
}

// buildAgent builds examples/nodeagent into dir.
func buildAgent(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "nodeagent")
	cmd := exec.Command("go", "build", "-o", bin, "./examples/nodeagent")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build examples/nodeagent: %v\n%s", err, out)
	}
	return bin
}

// start starts the agent; it must not be running.
func (a *agent) start() {
	a.t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := os.OpenFile(a.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		a.t.Fatal(err)
	}
	a.runs++
	fmt.Fprintf(f, "=== chaos: agent run %d at %s\n", a.runs, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(a.bin, a.args...)
	cmd.Env = append(os.Environ(), a.nextEnv...)
	if len(a.nextEnv) > 0 {
		fmt.Fprintf(f, "=== chaos: with %s\n", strings.Join(a.nextEnv, " "))
	}
	a.nextEnv = nil
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		a.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		f.Close()
		close(done)
	}()
	a.cmd, a.done = cmd, done
}

// kill sends sig (SIGKILL for a crash, SIGTERM for a clean stop) and waits
// until the process has exited.
func (a *agent) kill(sig syscall.Signal) {
	a.mu.Lock()
	cmd, done := a.cmd, a.done
	a.cmd = nil
	a.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		a.t.Errorf("agent ignored %v for 30s", sig)
	}
}

// exited reports whether the agent ended by itself (it should never).
func (a *agent) exited() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil {
		return false
	}
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

// tail is the last n lines of the agent's log.
func (a *agent) tail(n int) string {
	b, _ := os.ReadFile(a.log)
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(string(bytes.Join(lines, []byte("\n"))))
}

// pid is the running agent's process ID (0 when stopped).
func (a *agent) pid() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil {
		return 0
	}
	return a.cmd.Process.Pid
}
