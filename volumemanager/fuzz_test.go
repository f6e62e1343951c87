package volumemanager

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReconstruct: whatever a pod's vol_data.json and a staging
// vol_data.json say, reconstruction never panics and every path it takes
// back stays beneath the root's pods and plugins directories.
func FuzzReconstruct(f *testing.F) {
	f.Add("pv-1", `{"specVolID":"pv-1","volumeHandle":"h","driverName":"csi.example.com","volumeLifecycleMode":"Persistent"}`, "csi.example.com", `{"volumeHandle":"h","driverName":"csi.example.com"}`)
	f.Add("..", `{"specVolID":"..","volumeHandle":"../../h","driverName":"a"}`, "a", `{"volumeHandle":"","driverName":"a"}`)
	f.Add("x", `{"specVolID":"x","volumeHandle":"csi-1","driverName":"d","volumeLifecycleMode":"Ephemeral"}`, "d", `[]`)
	f.Fuzz(func(t *testing.T, volName, podData, driverDir, stagedData string) {
		if volName == "" || volName == "." || volName == ".." || strings.ContainsAny(volName, "/\x00") ||
			driverDir == "" || driverDir == "." || driverDir == ".." || strings.ContainsAny(driverDir, "/\x00") {
			return // not a directory name
		}
		e := newEnv(t)
		podDir := filepath.Join(e.root, "pods", "uid-1", "volumes", podPluginDir, volName)
		stagedDir := filepath.Join(e.root, "plugins", PluginName, driverDir, "0123")
		for dir, data := range map[string]string{podDir: podData, stagedDir: stagedData} {
			if err := os.MkdirAll(dir, 0o750); err != nil {
				t.Skip(err)
			}
			if err := os.WriteFile(filepath.Join(dir, volDataFileName), []byte(data), 0o640); err != nil {
				t.Skip(err)
			}
		}
		_ = e.m.reconstruct(context.Background())
		pods, plugins := filepath.Join(e.root, "pods")+"/", filepath.Join(e.root, "plugins", PluginName)+"/"
		for name, av := range e.m.actual {
			if av.stagingPath != "" && (!strings.HasPrefix(av.stagingPath, plugins) || filepath.Clean(av.stagingPath) != av.stagingPath) {
				t.Errorf("%s: staging path %q outside %s", name, av.stagingPath, plugins)
			}
			for _, ap := range av.pods {
				if !strings.HasPrefix(ap.targetPath, pods) || filepath.Clean(ap.targetPath) != ap.targetPath {
					t.Errorf("%s: target %q outside %s", name, ap.targetPath, pods)
				}
			}
		}
	})
}
