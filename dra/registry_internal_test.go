package dra

import (
	"errors"
	"testing"

	"github.com/go-logr/logr"
)

// Kubelet's choice among a driver's sockets: the newest connected one,
// else the newest.
func TestRegistryPrefersNewestConnected(t *testing.T) {
	r := &registry{log: logr.Discard()}
	a, b := &plugin{driver: "d", endpoint: "a"}, &plugin{driver: "d", endpoint: "b"}
	r.store = map[string][]*plugin{"d": {a, b}}
	for _, tc := range []struct {
		aUp, bUp bool
		want     *plugin
	}{{false, false, b}, {true, false, a}, {false, true, b}, {true, true, b}} {
		a.connected, b.connected = tc.aUp, tc.bUp
		got, err := r.get("d")
		if err != nil || got != tc.want {
			t.Errorf("a up %v, b up %v: got %v, want %s", tc.aUp, tc.bUp, got.endpoint, tc.want.endpoint)
		}
	}
	if _, err := r.get(""); !errors.Is(err, ErrDriverNotRegistered) || err.Error() != "DRA driver name is empty" {
		t.Errorf("empty name: %v", err)
	}
}
