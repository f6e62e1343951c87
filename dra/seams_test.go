package dra_test

import (
	"github.com/podstart/podstart/dra"
	"github.com/podstart/podstart/pluginmanager"
	"github.com/podstart/podstart/podresources"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
)

// The seams a node agent wires a Manager into.
var (
	_ pluginmanager.Handler                 = (*dra.Manager)(nil)
	_ podsync.ResourcePreparer              = (*dra.Manager)(nil)
	_ podsync.Devices                       = (*dra.Manager)(nil)
	_ podworker.ResourceUnpreparer          = (*dra.Manager)(nil)
	_ podresources.DynamicResourcesProvider = (*dra.Manager)(nil)
)
