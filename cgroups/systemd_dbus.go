package cgroups

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/go-logr/logr"
	godbus "github.com/godbus/dbus/v5"
)

// DefaultSystemdJobTimeout is how long a job of StartTransientUnit or
// StopUnit is waited for, libcontainer's 30 seconds.
const DefaultSystemdJobTimeout = 30 * time.Second

// SystemdDBus is the Systemd of a D-Bus connection to systemd, through
// github.com/coreos/go-systemd/v22/dbus as kubelet's libcontainer manager.
// A connection found closed (systemd or the bus restarted) is dialled
// again and the call retried. It is safe for concurrent use.
type SystemdDBus struct {
	dial    func(context.Context) (*sddbus.Conn, error)
	timeout time.Duration

	mu   sync.Mutex
	conn *sddbus.Conn
}

var _ Systemd = (*SystemdDBus)(nil)

// SystemdOption configures a SystemdDBus.
type SystemdOption func(*SystemdDBus)

// WithSystemdJobTimeout replaces DefaultSystemdJobTimeout.
func WithSystemdJobTimeout(d time.Duration) SystemdOption {
	return func(s *SystemdDBus) { s.timeout = d }
}

// WithSystemdDial replaces how the connection is made (default
// go-systemd's NewWithContext, as libcontainer).
func WithSystemdDial(dial func(context.Context) (*sddbus.Conn, error)) SystemdOption {
	return func(s *SystemdDBus) { s.dial = dial }
}

// NewSystemdDBus connects to systemd as libcontainer does: the system bus
// (DBUS_SYSTEM_BUS_ADDRESS, else /run/dbus/system_bus_socket), and as
// root, when that fails, systemd's private socket /run/systemd/private.
// Close it when done.
func NewSystemdDBus(ctx context.Context, opts ...SystemdOption) (*SystemdDBus, error) {
	s := &SystemdDBus{dial: sddbus.NewWithContext, timeout: DefaultSystemdJobTimeout}
	for _, o := range opts {
		o(s)
	}
	if _, err := s.connection(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Close closes the connection.
func (s *SystemdDBus) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
	return nil
}

func (s *SystemdDBus) connection(ctx context.Context) (*sddbus.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		return s.conn, nil
	}
	c, err := s.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("cgroups: failed to connect to systemd over dbus: %w", err)
	}
	s.conn = c
	return c, nil
}

// call runs op on the connection, dialling again and retrying while the
// connection is found closed (libcontainer's retryOnDisconnect).
func (s *SystemdDBus) call(ctx context.Context, op func(*sddbus.Conn) error) error {
	for {
		c, err := s.connection(ctx)
		if err != nil {
			return err
		}
		err = op(c)
		if !errors.Is(err, godbus.ErrClosed) {
			return err
		}
		s.mu.Lock()
		if s.conn == c {
			c.Close()
			s.conn = nil
		}
		s.mu.Unlock()
		if ctx.Err() != nil {
			return err
		}
	}
}

func toDBus(props []Property) []sddbus.Property {
	out := make([]sddbus.Property, len(props))
	for i, p := range props {
		out[i] = sddbus.Property{Name: p.Name, Value: godbus.MakeVariant(p.Value)}
	}
	return out
}

// dbusError reports whether err is the D-Bus error name.
func dbusError(err error, name string) bool {
	var de godbus.Error
	return errors.As(err, &de) && strings.Contains(de.Name, name)
}

// StartTransientUnit implements Systemd as libcontainer's startUnit: the
// job's result other than "done", or no result within the timeout, is an
// error, after which the failed unit is reset.
func (s *SystemdDBus) StartTransientUnit(ctx context.Context, name string, props []Property) error {
	ch := make(chan string, 1)
	err := s.call(ctx, func(c *sddbus.Conn) error {
		_, err := c.StartTransientUnitContext(ctx, name, "replace", toDBus(props), ch)
		return err
	})
	if dbusError(err, "org.freedesktop.systemd1.UnitExists") {
		return fmt.Errorf("%w: %s: %w", ErrUnitExists, name, err)
	}
	if err != nil {
		return fmt.Errorf("cgroups: start unit %s: %w", name, err)
	}
	res, err := s.wait(ctx, ch)
	if err == nil && res != "done" {
		err = fmt.Errorf("error creating systemd unit `%s`: got `%s`", name, res)
	}
	if err != nil {
		_ = s.resetFailed(context.WithoutCancel(ctx), name)
		return fmt.Errorf("cgroups: %w", err)
	}
	return nil
}

// wait waits for the job's result, up to the timeout or ctx's end.
func (s *SystemdDBus) wait(ctx context.Context, ch <-chan string) (string, error) {
	t := time.NewTimer(s.timeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r, nil
	case <-t.C:
		return "", fmt.Errorf("timeout (%v) waiting for systemd's job", s.timeout)
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for systemd's job: %w", ctx.Err())
	}
}

func (s *SystemdDBus) resetFailed(ctx context.Context, name string) error {
	return s.call(ctx, func(c *sddbus.Conn) error { return c.ResetFailedUnitContext(ctx, name) })
}

// SetUnitProperties implements Systemd (runtime: not persisted).
func (s *SystemdDBus) SetUnitProperties(ctx context.Context, name string, props []Property) error {
	err := s.call(ctx, func(c *sddbus.Conn) error {
		return c.SetUnitPropertiesContext(ctx, name, true, toDBus(props)...)
	})
	if err != nil {
		return fmt.Errorf("cgroups: unable to set unit properties of %s: %w", name, err)
	}
	return nil
}

// StopUnit implements Systemd as libcontainer's stopUnit: a job result
// other than "done" is logged and not an error, a timeout is; the unit is
// then reset in case it failed. Unlike libcontainer, which ignores any
// error of the call, only systemd's NoSuchUnit is no error.
func (s *SystemdDBus) StopUnit(ctx context.Context, name string) error {
	ch := make(chan string, 1)
	err := s.call(ctx, func(c *sddbus.Conn) error {
		_, err := c.StopUnitContext(ctx, name, "replace", ch)
		return err
	})
	switch {
	case dbusError(err, "org.freedesktop.systemd1.NoSuchUnit"):
		return nil
	case err != nil:
		return fmt.Errorf("cgroups: stop unit %s: %w", name, err)
	}
	res, err := s.wait(ctx, ch)
	if err != nil {
		return fmt.Errorf("cgroups: stop unit %s: %w", name, err)
	}
	if res != "done" {
		logr.FromContextOrDiscard(ctx).Info("Error removing systemd unit, continuing", "unit", name, "result", res)
	}
	_ = s.resetFailed(ctx, name)
	return nil
}

// Version implements Systemd: the Manager's Version property.
func (s *SystemdDBus) Version(ctx context.Context) (int, error) {
	var v string
	err := s.call(ctx, func(c *sddbus.Conn) error {
		var err error
		v, err = c.GetManagerProperty("Version")
		return err
	})
	if err != nil {
		return -1, fmt.Errorf("cgroups: systemd version: %w", err)
	}
	return parseSystemdVersion(v)
}

// parseSystemdVersion reads "v245.4-1.fc32", "245", "\"v245-1.fc32\"" as
// 245, as libcontainer.
func parseSystemdVersion(s string) (int, error) {
	if u, err := strconv.Unquote(s); err == nil {
		s = u
	}
	s = strings.TrimLeft(s, `"v`)
	if i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		s = s[:i]
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return -1, fmt.Errorf("cgroups: systemd version %q: %w", s, err)
	}
	return v, nil
}
