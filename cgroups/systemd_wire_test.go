package cgroups

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	godbus "github.com/godbus/dbus/v5"

	"github.com/podstart/podstart/criconfig"
)

// startBus starts a private dbus-daemon with a config of its own in a
// temporary directory and returns its address. Without dbus-daemon the
// test is skipped, unless PODSTART_E2E_REQUIRED is set.
func startBus(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("dbus-daemon")
	if err != nil {
		if os.Getenv("PODSTART_E2E_REQUIRED") == "" {
			t.Skip("dbus-daemon not installed (Debian package dbus-daemon)")
		}
		t.Fatalf("dbus-daemon: %v", err)
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "bus.conf")
	conf := `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>custom</type>
  <listen>unix:path=` + filepath.Join(dir, "bus") + `</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`
	if err := os.WriteFile(config, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config-file="+config, "--nofork", "--nopidfile", "--nosyslog", "--print-address=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("dbus-daemon: %s", stderr.String())
		}
	})
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		if s.Scan() {
			line <- strings.TrimSpace(s.Text())
		}
		close(line)
	}()
	select {
	case addr, ok := <-line:
		if !ok || addr == "" {
			t.Fatal("dbus-daemon printed no address")
		}
		return addr
	case <-time.After(10 * time.Second):
		t.Fatal("dbus-daemon did not start")
	}
	return ""
}

// wireProp is a unit property as it travels: (sv).
type wireProp struct {
	Name  string
	Value godbus.Variant
}

type wireAux struct {
	Name  string
	Props []wireProp
}

// fakeSystemd1 is org.freedesktop.systemd1's Manager object on the bus:
// it records the calls and answers jobs with JobRemoved, as systemd.
type fakeSystemd1 struct {
	conn *godbus.Conn

	mu     sync.Mutex
	units  map[string]bool
	calls  []unitCall
	job    uint32
	result string // the job result of the next StartTransientUnit ("" is done)
	resets []string
}

const (
	systemd1Path  = godbus.ObjectPath("/org/freedesktop/systemd1")
	systemd1Iface = "org.freedesktop.systemd1.Manager"
)

func props(w []wireProp) []Property {
	out := make([]Property, len(w))
	for i, p := range w {
		out[i] = Property{p.Name, p.Value.Value()}
	}
	return out
}

// jobDone sends JobRemoved for a new job of unit and returns its path.
func (f *fakeSystemd1) jobDone(unit, result string) godbus.ObjectPath {
	f.job++
	id := f.job
	job := godbus.ObjectPath(fmt.Sprintf("/org/freedesktop/systemd1/job/%d", id))
	go func() {
		_ = f.conn.Emit(systemd1Path, systemd1Iface+".JobRemoved", id, job, unit, result)
	}()
	return job
}

func (f *fakeSystemd1) StartTransientUnit(name, mode string, p []wireProp, aux []wireAux) (godbus.ObjectPath, *godbus.Error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, unitCall{"StartTransientUnit/" + mode, name, props(p)})
	if f.units[name] {
		return "", godbus.NewError("org.freedesktop.systemd1.UnitExists", []any{"Unit " + name + " already exists."})
	}
	f.units[name] = true
	res := f.result
	if res == "" {
		res = "done"
	}
	f.result = ""
	return f.jobDone(name, res), nil
}

func (f *fakeSystemd1) SetUnitProperties(name string, runtime bool, p []wireProp) *godbus.Error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, unitCall{fmt.Sprintf("SetUnitProperties/runtime=%v", runtime), name, props(p)})
	if !f.units[name] {
		return godbus.NewError("org.freedesktop.systemd1.NoSuchUnit", []any{"Unit " + name + " not loaded."})
	}
	return nil
}

func (f *fakeSystemd1) StopUnit(name, mode string) (godbus.ObjectPath, *godbus.Error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, unitCall{"StopUnit/" + mode, name, nil})
	if !f.units[name] {
		return "", godbus.NewError("org.freedesktop.systemd1.NoSuchUnit", []any{"Unit " + name + " not loaded."})
	}
	delete(f.units, name)
	return f.jobDone(name, "done"), nil
}

func (f *fakeSystemd1) ResetFailedUnit(name string) *godbus.Error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resets = append(f.resets, name)
	delete(f.units, name)
	return nil
}

// fakeProperties is the Manager's org.freedesktop.DBus.Properties.
type fakeProperties struct{}

func (fakeProperties) Get(iface, name string) (godbus.Variant, *godbus.Error) {
	if iface == systemd1Iface && name == "Version" {
		return godbus.MakeVariant("252.31-1~deb12u1"), nil
	}
	return godbus.Variant{}, godbus.NewError("org.freedesktop.DBus.Error.UnknownProperty", []any{name})
}

func (f *fakeSystemd1) take() []unitCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func exportSystemd1(t *testing.T, addr string) *fakeSystemd1 {
	t.Helper()
	conn, err := godbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	f := &fakeSystemd1{conn: conn, units: map[string]bool{}}
	if err := conn.Export(f, systemd1Path, systemd1Iface); err != nil {
		t.Fatal(err)
	}
	if err := conn.Export(fakeProperties{}, systemd1Path, "org.freedesktop.DBus.Properties"); err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName("org.freedesktop.systemd1", godbus.NameFlagDoNotQueue)
	if err != nil || reply != godbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("RequestName: %v, %v", reply, err)
	}
	return f
}

// TestSystemdDBusWire: over a private bus named by DBUS_SYSTEM_BUS_ADDRESS,
// SystemdDBus's calls reach a systemd1 Manager with the unit names and
// properties the Manager computes, and waits for their jobs.
func TestSystemdDBusWire(t *testing.T) {
	addr := startBus(t)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", addr)
	f := exportSystemd1(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sd, err := NewSystemdDBus(ctx, WithSystemdJobTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()

	if v, err := sd.Version(ctx); err != nil || v != 252 {
		t.Fatalf("Version = %d, %v", v, err)
	}
	for _, l := range layouts {
		t.Run(l.String(), func(t *testing.T) {
			mfs := NewMemFS(l.v2, twoMi)
			m, err := NewManager(mfs.Tree(), criconfig.Node{CgroupDriver: DriverSystemd, HugePageSizes: []int64{twoMi}},
				WithKill(mfs.Kill), WithNodeAllocatable(testAllocatable()), WithPodPidsLimit(1024), WithSystemd(sd))
			if err != nil {
				t.Fatal(err)
			}
			// The same calls the in-memory systemd records.
			ref, _, fake := newSystemdManager(t, l, criconfig.Node{})
			pod := podWith("b-2", rr(req("100m", "64Mi"), req("1234m", "128Mi")))
			for _, mm := range []*Manager{m, ref} {
				if err := mm.EnsureQoS(ctx); err != nil {
					t.Fatal(err)
				}
				if err := mm.EnsurePod(ctx, pod); err != nil {
					t.Fatal(err)
				}
				if err := mm.RemovePod(ctx, pod); err != nil {
					t.Fatal(err)
				}
			}
			got, want := f.take(), fake.take()
			if len(got) != len(want) {
				t.Fatalf("%d calls on the bus, want %d:\n got %v\nwant %v", len(got), len(want), got, want)
			}
			for i := range want {
				method := map[string]string{"StartTransientUnit": "StartTransientUnit/replace",
					"SetUnitProperties": "SetUnitProperties/runtime=true", "StopUnit": "StopUnit/replace"}[want[i].Method]
				w := want[i]
				w.Method = method
				if w.Props == nil {
					w.Props = []Property{}
				}
				if got[i].Props == nil {
					got[i].Props = []Property{}
				}
				if !reflect.DeepEqual(got[i], w) {
					t.Errorf("call %d:\n got %v\nwant %v", i, got[i], w)
				}
			}
			if len(got) < 8 || !strings.HasPrefix(got[len(got)-1].Method, "StopUnit") || got[len(got)-1].Unit != "kubepods-burstable-podb_2.slice" {
				t.Errorf("calls: %v", got)
			}
			// The tiers stay (started once per bus: on the second layout
			// they exist, UnitExists counts as made).
		})
	}

	// A unit systemd already has: ErrUnitExists.
	if err := sd.StartTransientUnit(ctx, "kubepods.slice", nil); !errors.Is(err, ErrUnitExists) {
		t.Errorf("StartTransientUnit of an existing unit: %v, want ErrUnitExists", err)
	}
	// A failed job: an error, and the unit reset.
	f.mu.Lock()
	f.result = "failed"
	f.mu.Unlock()
	if err := sd.StartTransientUnit(ctx, "x.slice", nil); err == nil || !strings.Contains(err.Error(), "got `failed`") {
		t.Errorf("failed job: %v", err)
	}
	f.mu.Lock()
	resets := f.resets
	f.mu.Unlock()
	if len(resets) == 0 || resets[len(resets)-1] != "x.slice" {
		t.Errorf("resets: %v", resets)
	}
	// Stopping a unit systemd does not have is no error.
	if err := sd.StopUnit(ctx, "gone.slice"); err != nil {
		t.Errorf("StopUnit of no unit: %v", err)
	}
	// Setting properties of no unit is.
	if err := sd.SetUnitProperties(ctx, "gone.slice", []Property{{"CPUWeight", uint64(1)}}); err == nil {
		t.Error("SetUnitProperties of no unit: no error")
	}
}
