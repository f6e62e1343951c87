package dra_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/podstart/podstart/dra"
)

var resourceOne = resource.MustParse("1")

type deviceAnswer struct {
	requests []string
	cdi      string
}

// answerDevices answers NodePrepareResources with the given devices per
// claim UID.
func answerDevices(m map[string][]deviceAnswer) func(context.Context, *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
	return func(_ context.Context, req *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
		resp := &drapb.NodePrepareResourcesResponse{Claims: map[string]*drapb.NodePrepareResourceResponse{}}
		for _, c := range req.Claims {
			r := &drapb.NodePrepareResourceResponse{}
			for i, a := range m[c.Uid] {
				r.Devices = append(r.Devices, &drapb.Device{RequestNames: a.requests, PoolName: "pool", DeviceName: c.Name + "-" + string(rune('0'+i)), CdiDeviceIds: []string{a.cdi}})
			}
			resp.Claims[c.Uid] = r
		}
		return resp, nil
	}
}

func readClaims(t *testing.T, e *env) []dra.ClaimInfo {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.root, dra.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	c, err := dra.DecodeCheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type podT = corev1.Pod

func errorsIs(err, target error) bool { return errors.Is(err, target) }
