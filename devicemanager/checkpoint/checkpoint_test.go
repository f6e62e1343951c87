package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func sample() Checkpoint {
	return Checkpoint{
		Entries: []PodDevicesEntry{{
			PodUID: "uid-1", ContainerName: "c", ResourceName: "example.com/dongle",
			DeviceIDs: DevicesPerNUMA{-1: {"d0"}, 1: {"d1", "d2"}}, AllocResp: []byte{0x0a, 0x01, 0x41},
		}},
		RegisteredDevices: map[string][]string{"example.com/dongle": {"d0", "d1", "d2"}},
	}
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []Checkpoint{sample(), {}} {
		if err := Write(dir, c); err != nil {
			t.Fatal(err)
		}
		got, err := Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		want := c
		if want.RegisteredDevices == nil {
			want.RegisteredDevices = map[string][]string{}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("read %+v, wrote %+v", got, want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files left: %v", entries)
	}
}

// The bytes kubelet v1.37.2 writes for sample() (test/diff compares with
// kubelet's package on random inputs).
func TestKubeletBytes(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "kubelet_sample.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("Marshal\n%s\nkubelet\n%s", got, want)
	}
	empty, _ := Marshal(Checkpoint{})
	if string(empty) != `{"Data":{"PodDeviceEntries":null,"RegisteredDevices":{}},"Checksum":3467439661}` {
		t.Errorf("empty: %s", empty)
	}
}

func TestReadRefuses(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(dir); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
	b, _ := Marshal(sample())
	b[len(b)-2] ^= 1 // checksum digit
	if err := os.WriteFile(filepath.Join(dir, FileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad checksum: %v", err)
	}
	os.Remove(filepath.Join(dir, FileName))
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, FileName)); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); !errors.Is(err, ErrCorrupt) {
		t.Errorf("symlink: %v", err)
	}
}

func FuzzUnmarshal(f *testing.F) {
	b, _ := Marshal(sample())
	f.Add(b)
	e, _ := Marshal(Checkpoint{})
	f.Add(e)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Unmarshal(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not match ErrCorrupt", err)
			}
			return
		}
		// What verifies must survive a round trip with the same checksum.
		out, err := Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Unmarshal(out); err != nil {
			t.Fatalf("re-read: %v", err)
		}
	})
}
