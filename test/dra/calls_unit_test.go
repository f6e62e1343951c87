package dratier

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The driver's log lines, as the v1.37.2 test driver wrote them at -v=6
// in a tier run (cut to what parseCalls reads).
const driverLog = `I1202 10:38:12.310831   17579 nonblockinggrpcserver.go:150] "handling request" logger="registrar" requestID=1 method="/pluginregistration.Registration/GetInfo" request=""
I1202 10:38:12.320519   17579 nonblockinggrpcserver.go:177] "handling stream" logger="dra" requestID=3 method="/v1.DRAResourceHealth/NodeWatchResources"
I1202 10:38:12.323365   17579 kubeletplugin.go:670] "Test driver sending health update" logger="dra" requestID=3 method="/v1.DRAResourceHealth/NodeWatchResources" report={"Devices":[]}
I1202 10:38:18.833923   17579 nonblockinggrpcserver.go:150] "handling request" logger="dra" requestID=4 method="/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources" request="claims:{namespace:\"ns\"  uid:\"8ce7\"  name:\"template-pod-res-hzvp7\"}"
I1202 10:38:18.862510   17579 nonblockinggrpcserver.go:161] "handling request succeeded" logger="dra" requestID=4 method="/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources" response="claims:{key:\"8ce7\"  value:{devices:{cdi_device_ids:\"test-driver.cdi.k8s.io/test=claim-8ce7-dev\"}}}"
E1202 10:38:30.000000   17579 nonblockinggrpcserver.go:159] "handling request failed" err="boom" logger="dra" requestID=5 method="/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources"
I1202 10:38:29.000000   17579 nonblockinggrpcserver.go:150] "handling request" logger="dra" requestID=6 method="/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources" request="claims:{uid:\"8ce7\"}"
E1202 10:38:30.000000   17579 nonblockinggrpcserver.go:159] "handling request failed" err="boom" logger="dra" requestID=6 method="/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources"
`

func TestParseCalls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "driver.log")
	if err := os.WriteFile(path, []byte(driverLog), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := parseCalls(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []call{
		{ID: "1", Method: "GetInfo"},
		{ID: "3", Method: "NodeWatchResources"},
		{ID: "4", Method: "NodePrepareResources", Request: `claims:{namespace:"ns"  uid:"8ce7"  name:"template-pod-res-hzvp7"}`,
			Response: `claims:{key:"8ce7"  value:{devices:{cdi_device_ids:"test-driver.cdi.k8s.io/test=claim-8ce7-dev"}}}`},
		{ID: "6", Method: "NodeUnprepareResources", Request: `claims:{uid:"8ce7"}`, Failed: true},
	}
	if !cmp.Equal(got, want) {
		t.Fatal(cmp.Diff(want, got))
	}
	if p := about(got, "NodePrepareResources", "8ce7"); len(p) != 1 || p[0].ID != "4" {
		t.Errorf("about: %+v", p)
	}
	if m := methods(got); !cmp.Equal(m, []string{"GetInfo", "NodeWatchResources", "NodePrepareResources", "NodeUnprepareResources"}) {
		t.Errorf("methods %q", m)
	}
}
