package devicemanager

import (
	"context"
	"fmt"
	"path/filepath"
	"time"
)

// WatcherHandler is kubelet's device manager's handler for the plugin
// watcher (pluginregistration.v1, type "DevicePlugin"): a deprecated way
// for a device plugin to register through <root-dir>/plugins_registry
// instead of kubelet.sock. It implements pluginmanager.Handler; register
// it with pluginmanager for registerapi.DevicePlugin.
type WatcherHandler struct{ m *Manager }

// WatcherHandler returns the Manager's plugin watcher handler.
func (m *Manager) WatcherHandler() *WatcherHandler { return &WatcherHandler{m: m} }

// ValidatePlugin is kubelet's: a supported version and an extended
// resource name.
func (h *WatcherHandler) ValidatePlugin(pluginName, endpoint string, versions []string) error {
	ok := false
	for _, v := range versions {
		ok = ok || versionSupported(v)
	}
	if !ok {
		return regError(fmt.Sprintf("manager version, %s, is not among plugin supported versions %v", "v1beta1", versions))
	}
	if !IsExtendedResourceName(pluginName) {
		return regError(fmt.Sprintf("invalid name of device plugin socket: %s", fmt.Sprintf("the ResourceName %q is invalid", pluginName)))
	}
	if !filepath.IsAbs(endpoint) {
		return regError(fmt.Sprintf("endpoint %q is not an absolute path", endpoint))
	}
	return nil
}

// RegisterPlugin connects to the plugin at endpoint as a Register call
// would.
func (h *WatcherHandler) RegisterPlugin(ctx context.Context, pluginName, endpoint string, _ []string, _ time.Duration) error {
	return h.m.connect(ctx, pluginName, filepath.Clean(endpoint))
}

// DeRegisterPlugin disconnects the plugin at endpoint.
func (h *WatcherHandler) DeRegisterPlugin(pluginName, endpoint string) {
	h.m.mu.Lock()
	e := h.m.store[pluginName][filepath.Clean(endpoint)]
	h.m.mu.Unlock()
	if e != nil {
		h.m.disconnect(e)
	}
}
