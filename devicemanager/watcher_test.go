package devicemanager

import "github.com/podstart/podstart/pluginmanager"

// WatcherHandler is a pluginmanager.Handler.
var _ pluginmanager.Handler = (*WatcherHandler)(nil)
