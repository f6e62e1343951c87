package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/podstart/podstart/apiobjects"
)

// trustBundles is the API client as an apiobjects.ClusterTrustBundleSource,
// as kubelet's LazyInformerManager reads ClusterTrustBundles: on first
// use it asks discovery whether the API server serves
// certificates.k8s.io/v1 clustertrustbundles; if it does, it starts an
// informer over them (waiting up to 10 s for its first list) and answers
// from its lister; if not, every projection fails with
// apiobjects.ErrNoClusterTrustBundles, kubelet's NoopManager message. A
// discovery error is returned and discovery asked again next time.
// Kubelet falls back to v1beta1 and v1alpha1; the agent, written for a
// v1.37 API server, reads v1 only.
type trustBundles struct {
	client kubernetes.Interface
	stop   chan struct{}
	// changed, if set, is called when a bundle is added, changed or
	// removed after the informer's first list.
	changed func()

	mu      sync.Mutex
	decided bool           // discovery answered
	running sync.WaitGroup // the informer, once started
	lister  certlisters.ClusterTrustBundleLister
	synced  cache.InformerSynced
}

func newTrustBundles(client kubernetes.Interface) *trustBundles {
	return &trustBundles{client: client, stop: make(chan struct{})}
}

// errNotSynced is kubelet's message for a read before the informer's
// first list.
var errNotSynced = errors.New("ClusterTrustBundle informer has not yet synced")

func (t *trustBundles) source(ctx context.Context) (certlisters.ClusterTrustBundleLister, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.decided {
		select {
		case <-t.stop:
			return nil, errors.New("the agent is stopping")
		default:
		}
		served, err := t.served(ctx)
		if err != nil {
			return nil, fmt.Errorf("failed to ensure informer manager for ClusterTrustBundles: failed to determine which informer manager to choose: %w", err)
		}
		t.decided = true
		if served {
			// A factory's informer for them, made without the factory
			// (which imports every API group's informers and listers).
			inf := certinformers.NewClusterTrustBundleInformer(t.client, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			t.lister, t.synced = certlisters.NewClusterTrustBundleLister(inf.GetIndexer()), inf.HasSynced
			if t.changed != nil {
				changed := t.changed
				_, _ = inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
					// The first list is what the pod being synced reads.
					AddFunc: func(_ any, initial bool) {
						if !initial {
							changed()
						}
					},
					UpdateFunc: func(_, _ any) { changed() },
					DeleteFunc: func(any) { changed() },
				})
			}
			t.running.Go(func() { inf.Run(t.stop) })
			wait, cancel := context.WithTimeout(ctx, 10*time.Second)
			cache.WaitForCacheSync(wait.Done(), t.synced) // else the next read may find it synced
			cancel()
		}
	}
	if t.lister == nil {
		return nil, apiobjects.ErrNoClusterTrustBundles
	}
	if !t.synced() {
		return nil, errNotSynced
	}
	return t.lister, nil
}

// served is kubelet's clusterTrustBundlesAvailable for v1.
func (t *trustBundles) served(ctx context.Context) (bool, error) {
	list, err := t.client.Discovery().ServerResourcesForGroupVersion(certificatesv1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if list != nil {
		for _, r := range list.APIResources {
			if r.Name == "clustertrustbundles" {
				return true, nil
			}
		}
	}
	return false, err
}

// GetClusterTrustBundle reads the informer's cache; a missing bundle is
// the lister's NotFound (`clustertrustbundle.certificates.k8s.io "x" not
// found`), as kubelet reports it.
func (t *trustBundles) GetClusterTrustBundle(ctx context.Context, name string) (*certificatesv1.ClusterTrustBundle, error) {
	l, err := t.source(ctx)
	if err != nil {
		return nil, err
	}
	return l.Get(name)
}

// ListClusterTrustBundles lists the cache by labels; apiobjects keeps
// the signer's bundles.
func (t *trustBundles) ListClusterTrustBundles(ctx context.Context, _ string, selector labels.Selector) ([]*certificatesv1.ClusterTrustBundle, error) {
	l, err := t.source(ctx)
	if err != nil {
		return nil, err
	}
	return l.List(selector)
}

// shutdown stops the informer, if one was started, and waits for it.
func (t *trustBundles) shutdown() {
	close(t.stop)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.running.Wait()
}

var _ apiobjects.ClusterTrustBundleSource = (*trustBundles)(nil)
