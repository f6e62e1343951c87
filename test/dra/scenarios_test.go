package dratier

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// scenarioReport is what one node did for one pod, masked so that two
// nodes' reports compare: UIDs, the generated claim's suffix, times,
// container IDs and pod IPs are replaced by placeholders.
type scenarioReport struct {
	Prepare                []string // NodePrepareResources requests about the claim
	PrepareResponses       []string
	Unprepare              []string // NodeUnprepareResources requests about the claim
	UnprepareResponses     []string
	UnpreparedBeforeDelete bool     // the unprepare call came before the pod left the API
	CDIDevices             []string // the container's ContainerConfig.CDIDevices, through CRI
	RuntimeEnv             []string // the CDI env in the container's OCI spec
	ContainerEnv           []string // what the container printed
	Status                 any      // the pod's status once Ready
	Methods                []string // every method the driver served, in first-call order
}

// TestTemplateClaim: a pod with a ResourceClaimTemplate is scheduled to
// the node, its generated claim is allocated and reserved for it, named in
// status.resourceClaimStatuses, prepared by the driver, and the container
// runs with the CDI device's env; after delete the claim is unprepared,
// its CDI spec removed, and the generated claim deleted.
func TestTemplateClaim(t *testing.T) {
	tr := setup(t)
	ctx := context.Background()
	rct := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "tmpl", Namespace: tr.ns},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: claimSpec(tr.driver)}}
	if _, err := tr.cs.ResourceV1().ResourceClaimTemplates(tr.ns).Create(ctx, rct, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tmpl := "tmpl"
	r, claim := tr.run(t, tr.newPod("template-pod", corev1.PodResourceClaim{ResourceClaimTemplateName: &tmpl}), true)
	tr.poll(t, time.Minute, "the generated claim deleted", func() (bool, error) {
		_, err := tr.cs.ResourceV1().ResourceClaims(tr.ns).Get(ctx, claim.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	tr.writeReport(t, "template", r)
}

// TestDirectClaim: the same with a ResourceClaim the pod names; after
// delete the claim stays, deallocated and reserved for nobody.
func TestDirectClaim(t *testing.T) {
	tr := setup(t)
	ctx := context.Background()
	rc := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "direct", Namespace: tr.ns}, Spec: claimSpec(tr.driver)}
	if _, err := tr.cs.ResourceV1().ResourceClaims(tr.ns).Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	name := "direct"
	r, _ := tr.run(t, tr.newPod("direct-pod", corev1.PodResourceClaim{ResourceClaimName: &name}), false)
	tr.poll(t, time.Minute, "the claim deallocated", func() (bool, error) {
		c, err := tr.cs.ResourceV1().ResourceClaims(tr.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return c.Status.Allocation == nil && len(c.Status.ReservedFor) == 0, nil
	})
	tr.writeReport(t, "direct", r)
}

var notAlnum = regexp.MustCompile(`[^a-zA-Z0-9]`)

// run creates the pod, checks it through its life and returns the report
// and its claim as it was while the pod ran.
func (tr *tier) run(t *testing.T, pod *corev1.Pod, fromTemplate bool) (*scenarioReport, *resourcev1.ResourceClaim) {
	t.Helper()
	ctx := context.Background()
	created, err := tr.cs.CoreV1().Pods(tr.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := tr.waitReady(t, created.Name)

	// The claim: the generated one is named in resourceClaimStatuses (by
	// the resource claim controller); a direct one is not listed.
	var claimName string
	if fromTemplate {
		if len(p.Status.ResourceClaimStatuses) != 1 || p.Status.ResourceClaimStatuses[0].Name != podClaim ||
			p.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
			t.Fatalf("status.resourceClaimStatuses %+v", p.Status.ResourceClaimStatuses)
		}
		claimName = *p.Status.ResourceClaimStatuses[0].ResourceClaimName
	} else {
		if len(p.Status.ResourceClaimStatuses) != 0 {
			t.Fatalf("status.resourceClaimStatuses %+v for a pod without templates", p.Status.ResourceClaimStatuses)
		}
		claimName = *pod.Spec.ResourceClaims[0].ResourceClaimName
	}
	claim, err := tr.cs.ResourceV1().ResourceClaims(tr.ns).Get(ctx, claimName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := claim.Status.Allocation; a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Driver != tr.driver ||
		a.Devices.Results[0].Pool != tr.node {
		t.Fatalf("claim's allocation %+v", claim.Status.Allocation)
	}
	if !slices.ContainsFunc(claim.Status.ReservedFor, func(r resourcev1.ResourceClaimConsumerReference) bool { return r.UID == p.UID }) {
		t.Fatalf("claim reserved for %+v, not the pod %s", claim.Status.ReservedFor, p.UID)
	}
	uid := string(claim.UID)

	// The driver's CDI spec, the device in the container's config, the
	// env in its OCI spec and in the running container.
	cdiFile := filepath.Join(tr.cdiDir, tr.driver+"-"+uid+"-"+requestName+".json")
	if _, err := os.Stat(cdiFile); err != nil {
		t.Fatalf("the driver's CDI spec: %v", err)
	}
	wantDevice := tr.driver + "/test=claim-" + uid + "-" + requestName
	wantEnv := []string{"claim_" + notAlnum.ReplaceAllString(claimName+"_"+requestName, "_") + "=true", "user_a=b"}
	cdi, env := tr.criContainer(t, p)
	if !slices.Equal(cdi, []string{wantDevice}) {
		t.Errorf("CDI devices in the container's config: %q, want %q", cdi, wantDevice)
	}
	if !slices.Equal(env, wantEnv) {
		t.Errorf("CDI env in the OCI spec: %q, want %q", env, wantEnv)
	}
	printed := tr.logs(t, p)
	if !slices.Equal(printed, wantEnv) {
		t.Errorf("the container printed %q, want %q", printed, wantEnv)
	}
	// Device health (ResourceHealthStatus, on in v1.37): the test driver
	// reports no device, so its device reads Unknown, under the
	// device's CDI ID.
	wantHealth := []corev1.ResourceStatus{{Name: "claim:" + podClaim,
		Resources: []corev1.ResourceHealth{{ResourceID: corev1.ResourceID(wantDevice), Health: corev1.ResourceHealthStatusUnknown}}}}
	if cs := p.Status.ContainerStatuses; len(cs) != 1 || !equality.Semantic.DeepEqual(cs[0].AllocatedResourcesStatus, wantHealth) {
		t.Errorf("allocatedResourcesStatus %+v, want %+v", cs, wantHealth)
	}
	calls, err := parseCalls(tr.driverLog)
	if err != nil {
		t.Fatal(err)
	}
	prep := about(calls, "NodePrepareResources", uid)
	if len(prep) == 0 || prep[0].Failed {
		t.Fatalf("NodePrepareResources for the claim: %+v", prep)
	}
	masked := maskClaimName(claimName, fromTemplate)
	mask := strings.NewReplacer(uid, "<claim-uid>", string(p.UID), "<pod-uid>", claimName, masked,
		notAlnum.ReplaceAllString(claimName, "_"), notAlnum.ReplaceAllString(strings.TrimSuffix(masked, "<suffix>"), "_")+"<suffix>")
	r := &scenarioReport{CDIDevices: maskAll(mask, cdi), RuntimeEnv: maskAll(mask, env), ContainerEnv: maskAll(mask, printed)}
	for _, c := range prep {
		r.Prepare, r.PrepareResponses = append(r.Prepare, mask.Replace(c.Request)), append(r.PrepareResponses, mask.Replace(c.Response))
	}
	if r.Status, err = maskStatus(p.Status, mask); err != nil {
		t.Fatal(err)
	}

	// Delete: the pod leaves the API; the claim is unprepared (kubelet
	// does it before the pod's object goes: its resources must be
	// reclaimed first), the CDI spec removed.
	if err := tr.cs.CoreV1().Pods(tr.ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tr.poll(t, 2*time.Minute, "pod "+p.Name+" gone", func() (bool, error) {
		_, err := tr.cs.CoreV1().Pods(tr.ns).Get(ctx, p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	calls, err = parseCalls(tr.driverLog)
	if err != nil {
		t.Fatal(err)
	}
	r.UnpreparedBeforeDelete = len(about(calls, "NodeUnprepareResources", uid)) > 0
	var unprep []call
	tr.poll(t, 2*time.Minute, "NodeUnprepareResources for the claim", func() (bool, error) {
		calls, err = parseCalls(tr.driverLog)
		unprep = about(calls, "NodeUnprepareResources", uid)
		return len(unprep) > 0 && !unprep[len(unprep)-1].Failed, err
	})
	for _, c := range unprep {
		r.Unprepare, r.UnprepareResponses = append(r.Unprepare, mask.Replace(c.Request)), append(r.UnprepareResponses, mask.Replace(c.Response))
	}
	tr.poll(t, time.Minute, "the CDI spec removed", func() (bool, error) {
		_, err := os.Stat(cdiFile)
		return os.IsNotExist(err), nil
	})
	r.Methods = methods(calls)
	t.Logf("%s node: prepare %q; unprepare %q (before the pod left the API: %v); CDI %q; env %q", tr.kind, r.Prepare, r.Unprepare,
		r.UnpreparedBeforeDelete, r.CDIDevices, r.ContainerEnv)
	return r, claim
}

// maskClaimName keeps a generated claim's <pod>-<claim>- prefix and masks
// its random suffix.
func maskClaimName(name string, generated bool) string {
	if i := strings.LastIndexByte(name, '-'); generated && i > 0 {
		return name[:i+1] + "<suffix>"
	}
	return name
}

func maskAll(m *strings.Replacer, in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = m.Replace(s)
	}
	return out
}

// maskStatus is the pod status as JSON with the strings masked and times,
// container IDs and pod IPs replaced by placeholders.
func maskStatus(st corev1.PodStatus, m *strings.Replacer) (any, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal([]byte(m.Replace(string(b))), &v); err != nil {
		return nil, err
	}
	return maskValue("", v), nil
}

var volatile = map[string]bool{"lastProbeTime": true, "lastTransitionTime": true, "startedAt": true, "finishedAt": true,
	"startTime": true, "containerID": true, "podIP": true, "ip": true}

func maskValue(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = maskValue(k, e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = maskValue(key, e)
		}
		return x
	case string:
		if volatile[key] && x != "" {
			return "<" + key + ">"
		}
		// The service account token volume's name has a random suffix.
		if key == "name" && strings.HasPrefix(x, "kube-api-access-") {
			return "kube-api-access-<suffix>"
		}
	}
	return v
}
