package staticpods

import (
	"encoding/hex"
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/dump"

	"github.com/podstart/podstart/staticpods/internal/core"
)

// Hash is the UID kubelet v1.37.2 gives a static pod whose manifest sets
// none (applyDefaults in pkg/kubelet/config/common.go), and so its
// config.hash: the hex FNV-128a of a go-spew dump (k8s.io/utils/dump's
// ForHash, which kubelet's hash.DeepHashObject prints) of the pod converted
// to kubelet's internal core.Pod, followed by "host:<node>" and
// "file:<path>" for a file, or "url:<url>" for the HTTP source.
//
// pod must be as DecodePod holds it before its own defaults: decoded from
// the manifest and given the API server's defaults, name, namespace and
// tolerations still the manifest's. Its TypeMeta is ignored (kubelet's
// internal pod has none). The dump includes each resource.Quantity's
// internal state, which depends on how the manifest spelled it ("1" and
// "1000m" are equal quantities but different UIDs, in kubelet as here);
// DecodePod leaves quantities as kubelet's decoder does.
func Hash(pod *corev1.Pod, o Origin) (types.UID, error) {
	internal, err := core.FromV1(pod)
	if err != nil {
		return "", invalid(ErrInvalidManifest, "hash pod: %v", err)
	}
	h := fnv.New128a()
	fmt.Fprintf(h, "%v", dump.ForHash(internal))
	if o.isFile() {
		fmt.Fprintf(h, "host:%s", o.NodeName)
		fmt.Fprintf(h, "file:%s", o.Location)
	} else {
		fmt.Fprintf(h, "url:%s", o.Location)
	}
	return types.UID(hex.EncodeToString(h.Sum(nil))), nil
}
