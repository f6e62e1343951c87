package kubelet

import (
	"context"
	"time"
)

// runtimeFeatures is what the runtime's CRI Status says that changes what
// kubelet does with a pod: user namespaces for its default handler
// (RuntimeHandlerFeatures.user_namespaces; kubelet refuses hostUsers:
// false without) and the Strict supplemental-groups policy
// (RuntimeFeatures.supplemental_groups_policy; kubelet's admission
// rejects the pod without). containerd 1.6 reports neither; containerd 2
// both. podstart is told the same facts (criconfig.Node) as kubelet reads.
type runtimeFeatures struct {
	userNamespaces, supplementalGroupsPolicy bool
}

func (tr *tier) features() runtimeFeatures {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := tr.rt.Status(ctx, false)
	if err != nil {
		tr.t.Fatal(err)
	}
	var f runtimeFeatures
	for _, h := range st.GetRuntimeHandlers() {
		if h.GetName() == "" {
			f.userNamespaces = h.GetFeatures().GetUserNamespaces()
		}
	}
	f.supplementalGroupsPolicy = st.GetFeatures().GetSupplementalGroupsPolicy()
	return f
}

// forRuntime sets the table's outcomes that depend on the runtime's
// features: on a runtime with them, kubelet runs those pods.
func (f runtimeFeatures) forRuntime(cases []podCase) []podCase {
	for i := range cases {
		switch cases[i].name {
		case "proc-unmasked":
			if f.userNamespaces {
				cases[i].kubelet = runs
			}
		case "groups-strict":
			if f.supplementalGroupsPolicy {
				cases[i].kubelet = runs
			}
		}
	}
	return cases
}

// allowances are the differences that only a runtime with the features
// shows, allowed for this run: a hostUsers: false pod's host IDs. Kubelet
// gives a pod a random free slot of 65536 IDs (its allocation bitmap's
// random scan, pkg/kubelet/userns), podstart the lowest free one
// (podsync.UserNamespaces), so the two sides' host IDs of the same pod
// differ by chance; the rest of each mapping (container ID 0, 65536 IDs,
// mode POD) is compared.
func (f runtimeFeatures) allowances() []allowance {
	if !f.userNamespaces {
		return nil
	}
	return []allowance{
		allow(`^proc-unmasked: (RunPodSandbox|CreateContainer c) config\.(linux\.security_context\.namespace_options\.userns_options\.[ug]ids|mounts\[\d+\]\.[ug]idMappings)\[0\]\.host_id$`,
			"user-namespace host IDs: kubelet picks a random free 65536-ID slot, podstart the lowest free one (podsync.UserNamespaces)"),
	}
}
