package dra_test

import (
	"reflect"
	"testing"

	"github.com/podstart/podstart/dra"
)

// kubelet's checkpoint test data (pkg/kubelet/cm/dra/state): one claim,
// one device, as kubelet v1.37.2 writes it.
const kubeletOneClaim = `{"Data":"{\"kind\":\"DRACheckpoint\",\"apiVersion\":\"checkpoint.dra.kubelet.k8s.io/v1\",\"ClaimInfoStateList\":[{\"ClaimUID\":\"067798be-454e-4be4-9047-1aa06aea63f7\",\"ClaimName\":\"example\",\"Namespace\":\"default\",\"PodUIDs\":{\"139cdb46-f989-4f17-9561-ca10cfb509a6\":{}},\"DriverState\":{\"test-driver.cdi.k8s.io\":{\"Devices\":[{\"PoolName\":\"worker-1\",\"DeviceName\":\"dev-1\",\"ShareID\":null,\"RequestNames\":[\"test request\"],\"CDIDeviceIDs\":[\"example.com/example=cdi-example\"]}]}}}]}","Checksum":2570581864}`

func TestCheckpointKubeletBytes(t *testing.T) {
	claims, err := dra.DecodeCheckpoint([]byte(kubeletOneClaim))
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 1 || claims[0].ClaimName != "example" || !claims[0].PodUIDs.Has("139cdb46-f989-4f17-9561-ca10cfb509a6") ||
		claims[0].DriverState["test-driver.cdi.k8s.io"].Devices[0].CDIDeviceIDs[0] != "example.com/example=cdi-example" {
		t.Fatalf("decoded %+v", claims)
	}
	b, err := dra.EncodeCheckpoint(claims)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != kubeletOneClaim {
		t.Errorf("encoded\n%s\nwant\n%s", b, kubeletOneClaim)
	}
}

// FuzzDecodeCheckpoint: whatever the file holds, decoding does not panic,
// and what it accepts encodes to bytes that decode to the same claims.
func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add([]byte(kubeletOneClaim))
	f.Fuzz(func(t *testing.T, b []byte) {
		claims, err := dra.DecodeCheckpoint(b)
		if err != nil {
			return
		}
		out, err := dra.EncodeCheckpoint(claims)
		if err != nil {
			t.Fatalf("encode what was decoded: %v", err)
		}
		again, err := dra.DecodeCheckpoint(out)
		if err != nil {
			t.Fatalf("decode what was encoded: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(normalize(claims), normalize(again)) {
			t.Fatalf("round trip changed the claims:\n%+v\n%+v", claims, again)
		}
	})
}

// normalize makes empty and nil slices and maps alike, as JSON does not
// keep the difference for every field.
func normalize(cs []dra.ClaimInfo) []dra.ClaimInfo {
	if len(cs) == 0 {
		return nil
	}
	for i := range cs {
		for name, ds := range cs[i].DriverState {
			if len(ds.SkipNodeOperations) == 0 {
				ds.SkipNodeOperations = nil
			}
			cs[i].DriverState[name] = ds
		}
	}
	return cs
}
