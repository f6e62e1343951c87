package diff

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	kubeletserver "k8s.io/kubernetes/pkg/kubelet/server"

	"github.com/podstart/podstart/nodeapi"
)

// nodeapi.RequestAttributes with kubelet's
// NewNodeAuthorizerAttributesGetter on random request paths and methods:
// the same verbs, subresources in the same order, node name and path.
func TestNodeAPIRequestAttributes(t *testing.T) {
	r := newRand(t)
	getter := kubeletserver.NewNodeAuthorizerAttributesGetter(types.NodeName("node-1"))
	segments := []string{"pods", "podsx", "runningpods", "allocatedPods", "healthz", "configz", "flagz", "statusz", "stats",
		"summary", "metrics", "resource", "cadvisor", "probes", "logs", "checkpoint", "containerLogs", "exec", "attach",
		"portForward", "run", "ns", "web", "app", "", ".."}
	methods := []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}
	d := differences{t: t}
	n := cases(20000)
	for i := 0; i < n; i++ {
		var b strings.Builder
		for j := 0; j < 1+r.IntN(4); j++ {
			b.WriteString("/" + segments[r.IntN(len(segments))])
		}
		if r.IntN(4) == 0 {
			b.WriteString("/")
		}
		path, method := b.String(), methods[r.IntN(len(methods))]
		req := httptest.NewRequest(method, "http://node"+path, nil)
		want := getter.GetRequestAttributes(context.Background(), &user.DefaultInfo{Name: "u"}, req)
		got := nodeapi.RequestAttributes("node-1", nodeapi.User{Name: "u"}, req)
		same := len(want) == len(got)
		for k := 0; same && k < len(got); k++ {
			w := want[k]
			same = w.GetVerb() == got[k].Verb && w.GetSubresource() == got[k].Subresource && w.GetName() == got[k].Name &&
				w.GetPath() == got[k].Path && w.GetResource() == "nodes" && w.GetAPIVersion() == "v1" && w.IsResourceRequest()
		}
		if !same {
			var ks []string
			for _, w := range want {
				ks = append(ks, w.GetVerb()+" "+w.GetSubresource())
			}
			d.add("%s %s: kubelet %v, podstart %+v", method, path, ks, got)
		}
	}
	d.report(n, "request paths")
}
