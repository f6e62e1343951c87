package main

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	fakeauthenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1/fake"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	fakeauthorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1/fake"
	certificatesv1 "k8s.io/client-go/kubernetes/typed/certificates/v1"
	fakecertificatesv1 "k8s.io/client-go/kubernetes/typed/certificates/v1/fake"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	fakecoordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1/fake"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	fakecorev1 "k8s.io/client-go/kubernetes/typed/core/v1/fake"
	resourcev1 "k8s.io/client-go/kubernetes/typed/resource/v1"
	fakeresourcev1 "k8s.io/client-go/kubernetes/typed/resource/v1/fake"
	storagev1 "k8s.io/client-go/kubernetes/typed/storage/v1"
	fakestoragev1 "k8s.io/client-go/kubernetes/typed/storage/v1/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeClientset is client-go's kubernetes/fake Clientset (NewClientset:
// the same field-managed object tracker over the same scheme, reactors and
// fake discovery) for the API groups the agent calls. kubernetes/fake
// imports the fake clients of all ~55 group versions: ~30 s of CPU to
// compile under -race (issue 27), for the seven used here. Any other group
// is the nil embedded Interface: a call to it panics, naming the method.
type fakeClientset struct {
	kubernetes.Interface // nil: the groups below only
	k8stesting.Fake
	discovery *fakediscovery.FakeDiscovery
	tracker   k8stesting.ObjectTracker
}

// newFakeClientset is kubernetes/fake's NewClientset with no objects.
// scheme.Scheme holds what kubernetes/fake's own scheme holds: every
// group's types and meta/v1's unversioned ones.
func newFakeClientset() *fakeClientset {
	o := k8stesting.NewFieldManagedObjectTracker(scheme.Scheme, scheme.Codecs.UniversalDecoder(),
		applyconfigurations.NewTypeConverter(scheme.Scheme))
	cs := &fakeClientset{tracker: o}
	cs.discovery = &fakediscovery.FakeDiscovery{Fake: &cs.Fake}
	cs.AddReactor("*", "*", k8stesting.ObjectReaction(o))
	cs.AddWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if watchAction, ok := action.(k8stesting.WatchActionImpl); ok {
			opts = watchAction.ListOptions
		}
		w, err := o.Watch(action.GetResource(), action.GetNamespace(), opts)
		if err != nil {
			return false, nil, err
		}
		return true, w, nil
	})
	return cs
}

var (
	_ kubernetes.Interface  = (*fakeClientset)(nil)
	_ k8stesting.FakeClient = (*fakeClientset)(nil)
)

func (c *fakeClientset) Discovery() discovery.DiscoveryInterfaces { return c.discovery }
func (c *fakeClientset) Tracker() k8stesting.ObjectTracker        { return c.tracker }

// IsWatchListSemanticsUnSupported: as kubernetes/fake's, the reflector
// lists then watches (the tracker has no WatchList).
func (c *fakeClientset) IsWatchListSemanticsUnSupported() bool { return true }

func (c *fakeClientset) CoreV1() corev1.CoreV1Interface {
	return &fakecorev1.FakeCoreV1{Fake: &c.Fake}
}

func (c *fakeClientset) ResourceV1() resourcev1.ResourceV1Interface {
	return &fakeresourcev1.FakeResourceV1{Fake: &c.Fake}
}

func (c *fakeClientset) CoordinationV1() coordinationv1.CoordinationV1Interface {
	return &fakecoordinationv1.FakeCoordinationV1{Fake: &c.Fake}
}

func (c *fakeClientset) CertificatesV1() certificatesv1.CertificatesV1Interface {
	return &fakecertificatesv1.FakeCertificatesV1{Fake: &c.Fake}
}

func (c *fakeClientset) AuthenticationV1() authenticationv1.AuthenticationV1Interface {
	return &fakeauthenticationv1.FakeAuthenticationV1{Fake: &c.Fake}
}

func (c *fakeClientset) StorageV1() storagev1.StorageV1Interface {
	return &fakestoragev1.FakeStorageV1{Fake: &c.Fake}
}

func (c *fakeClientset) AuthorizationV1() authorizationv1.AuthorizationV1Interface {
	return &fakeauthorizationv1.FakeAuthorizationV1{Fake: &c.Fake}
}
