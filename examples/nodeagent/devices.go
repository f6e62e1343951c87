package main

import (
	"context"
	"log"
	"path/filepath"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/devicemanager"
	"github.com/podstart/podstart/nodestatus"
	"github.com/podstart/podstart/pluginmanager"
	"github.com/podstart/podstart/podresources"
)

// Device plugins, as kubelet's device manager: plugins register on
// <root-dir>/device-plugins/kubelet.sock (kubelet's fixed
// /var/lib/kubelet/device-plugins when -root-dir is kubelet's
// /var/lib/kubelet; the agent's follows its root dir so two agents on one
// host never clean each other's sockets), or through the plugin watcher;
// admission allocates their devices, containers get them through
// podsync.WithDevices, the Node reports their capacity, and the
// pod-resources API (<root-dir>/pod-resources/kubelet.sock) tells
// monitoring agents which pod holds which device.

// devicePluginDir is where the agent's device manager listens.
func devicePluginDir(rootDir string) string { return filepath.Join(rootDir, "device-plugins") }

// newDeviceManager makes the device manager; startDevices starts it once
// the workers exist (its active pods are theirs).
func (a *agent) newDeviceManager(logger logr.Logger) (*devicemanager.Manager, error) {
	a.devicesChanged = make(chan struct{}, 1)
	return devicemanager.New(devicemanager.WithDir(devicePluginDir(a.RootDir)), devicemanager.WithLogger(logger),
		devicemanager.WithSourcesReady(func() bool { return a.sourcesReady.Load() }),
		devicemanager.WithActivePods(func() []*corev1.Pod { return evictions{a}.ActivePods() }),
		devicemanager.WithOnChange(func(string) {
			select {
			case a.devicesChanged <- struct{}{}:
			default: // a status update is already due
			}
		}))
}

// reportDevices updates the Node's status when a plugin's devices change,
// rather than at the next 10 s update as kubelet does, so the scheduler
// sees a new resource (or a lost one) at once. Runs until ctx ends.
func (a *agent) reportDevices(ctx context.Context, heartbeat *nodestatus.Heartbeat) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.devicesChanged:
			if err := heartbeat.SyncStatus(ctx); err != nil && ctx.Err() == nil {
				log.Println("nodeagent: node status after a device change:", err)
			}
		}
	}
}

// startDevices starts the device manager's registration server, hands
// the plugin watcher its DevicePlugin handler, and serves the
// pod-resources API until ctx ends.
func (a *agent) startDevices(ctx context.Context, dm *devicemanager.Manager, plugins *pluginmanager.Manager, dra podresources.DynamicResourcesProvider, goFn func(func())) error {
	if err := dm.Start(ctx); err != nil {
		return err
	}
	plugins.AddHandler("DevicePlugin", dm.WatcherHandler())
	opts := []podresources.Option{podresources.WithDevices(dm)}
	if dra != nil {
		opts = append(opts, podresources.WithDynamicResources(dra))
	}
	srv, err := podresources.New(activePods{a}, opts...)
	if err != nil {
		dm.Stop()
		return err
	}
	goFn(func() {
		if err := podresources.Serve(ctx, srv, filepath.Join(a.RootDir, "pod-resources", "kubelet.sock")); err != nil && ctx.Err() == nil {
			log.Println("nodeagent: pod-resources API:", err)
		}
	})
	return nil
}

// activePods is podresources.PodsProvider over the workers.
type activePods struct{ a *agent }

func (p activePods) ActivePods() []*corev1.Pod { return evictions(p).ActivePods() }

func (p activePods) PodByName(namespace, name string) (*corev1.Pod, bool) {
	for _, pod := range p.ActivePods() {
		if pod.Namespace == namespace && pod.Name == name {
			return pod, true
		}
	}
	return nil, false
}
