package main

import (
	"context"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/podstart/podstart/apiobjects"
	"github.com/podstart/podstart/podworker"
)

// objectWatches watches the Secrets and ConfigMaps the node's pods refer
// to (podworker.References), as kubelet's watch-based secret and
// configmap managers do: one watch per object, by a field selector on its
// name (what the node authorizer lets a node watch), started when a pod
// refers to it and stopped when no pod does. When one changes, is created
// or is deleted, the pods that refer to it are synced again
// (podworker.Workers.ResyncReferencing), so that their volumes follow it.
// It is the agent's apiobjects.Source: an object is read from its watch's
// cache once the watch has listed, else with a GET (a pod's first sync
// may come before its watches' first lists), as kubelet's managers read
// theirs.
type objectWatches struct {
	api     apiObjects
	changed func(podworker.ObjectRef)

	mu      sync.Mutex
	stopped bool
	pods    map[types.UID][]podworker.ObjectRef
	watches map[podworker.ObjectRef]*objectWatch
	running sync.WaitGroup
}

type objectWatch struct {
	refs   int
	store  cache.Store
	synced func() bool
	cancel context.CancelFunc
}

func newObjectWatches(api apiObjects, changed func(podworker.ObjectRef)) *objectWatches {
	return &objectWatches{api: api, changed: changed, pods: map[types.UID][]podworker.ObjectRef{}, watches: map[podworker.ObjectRef]*objectWatch{}}
}

// setPod watches what the pod refers to now, and stops watching what it
// no longer refers to.
func (o *objectWatches) setPod(pod *corev1.Pod) {
	refs := podworker.References(pod)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped {
		return
	}
	old := o.pods[pod.UID]
	for _, r := range refs {
		if !slices.Contains(old, r) {
			o.acquireLocked(r)
		}
	}
	for _, r := range old {
		if !slices.Contains(refs, r) {
			o.releaseLocked(r)
		}
	}
	o.pods[pod.UID] = refs
}

// forgetPod stops the watches only the pod needed.
func (o *objectWatches) forgetPod(uid types.UID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.pods[uid] {
		o.releaseLocked(r)
	}
	delete(o.pods, uid)
}

func (o *objectWatches) acquireLocked(ref podworker.ObjectRef) {
	if w := o.watches[ref]; w != nil {
		w.refs++
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	notify := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if m, err := metaOf(obj); err == nil {
			// The object's own name: a client that ignores the field
			// selector (client-go's fake) sends its namespace's others.
			o.changed(podworker.ObjectRef{Kind: ref.Kind, Namespace: m.GetNamespace(), Name: m.GetName()})
		}
	}
	store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: o.listWatch(ref),
		ObjectType:    objectType(ref.Kind),
		Handler: cache.ResourceEventHandlerFuncs{
			// Every event, those of the first list too: an object made
			// between a pod's sync and its watch's list is seen only so.
			AddFunc: notify,
			UpdateFunc: func(old, obj any) {
				// A relist's unchanged object is no change.
				if mo, err := metaOf(old); err == nil {
					if mn, err := metaOf(obj); err == nil && mn.GetResourceVersion() != "" && mo.GetResourceVersion() == mn.GetResourceVersion() {
						return
					}
				}
				notify(obj)
			},
			DeleteFunc: notify,
		},
	})
	o.watches[ref] = &objectWatch{refs: 1, store: store, synced: ctrl.HasSynced, cancel: cancel}
	o.running.Go(func() { ctrl.RunWithContext(ctx) })
}

func (o *objectWatches) releaseLocked(ref podworker.ObjectRef) {
	w := o.watches[ref]
	if w == nil {
		return
	}
	if w.refs--; w.refs == 0 {
		w.cancel()
		delete(o.watches, ref)
	}
}

// shutdown stops every watch and waits for them.
func (o *objectWatches) shutdown() {
	o.mu.Lock()
	o.stopped = true
	for ref, w := range o.watches {
		w.cancel()
		delete(o.watches, ref)
	}
	o.mu.Unlock()
	o.running.Wait()
}

// listWatch lists and watches the one object, as the client's generated
// informers do (ToListWatcherWithWatchListSemantics: a client without
// streaming lists, such as client-go's fake, is listed then watched).
func (o *objectWatches) listWatch(ref podworker.ObjectRef) cache.ListerWatcher {
	return cache.ToListWatcherWithWatchListSemantics(o.listWatchOf(ref), o.api.client)
}

func (o *objectWatches) listWatchOf(ref podworker.ObjectRef) *cache.ListWatch {
	byName := func(opts *metav1.ListOptions) {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", ref.Name).String()
	}
	core := o.api.client.CoreV1()
	if ref.Kind == podworker.KindSecret {
		return &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				byName(&opts)
				return core.Secrets(ref.Namespace).List(ctx, opts)
			},
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				byName(&opts)
				return core.Secrets(ref.Namespace).Watch(ctx, opts)
			},
		}
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			byName(&opts)
			return core.ConfigMaps(ref.Namespace).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			byName(&opts)
			return core.ConfigMaps(ref.Namespace).Watch(ctx, opts)
		},
	}
}

func objectType(kind string) runtime.Object {
	if kind == podworker.KindSecret {
		return &corev1.Secret{}
	}
	return &corev1.ConfigMap{}
}

func metaOf(obj any) (metav1.Object, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil, apierrors.NewBadRequest("not an API object")
	}
	return o, nil
}

// cached is the object from its watch's cache: found reports whether the
// watch exists and has listed (else the caller GETs it); a nil object
// then means it does not exist.
func (o *objectWatches) cached(ref podworker.ObjectRef) (obj any, found bool) {
	o.mu.Lock()
	w := o.watches[ref]
	o.mu.Unlock()
	if w == nil || !w.synced() {
		return nil, false
	}
	obj, exists, err := w.store.GetByKey(ref.Namespace + "/" + ref.Name)
	if err != nil || !exists {
		return nil, err == nil
	}
	return obj, true
}

// GetSecret reads the Secret from its watch, or from the API server.
func (o *objectWatches) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	obj, found := o.cached(podworker.ObjectRef{Kind: podworker.KindSecret, Namespace: namespace, Name: name})
	if !found {
		return o.api.GetSecret(ctx, namespace, name)
	}
	if s, ok := obj.(*corev1.Secret); ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secret"), name)
}

// GetConfigMap reads the ConfigMap from its watch, or from the API
// server.
func (o *objectWatches) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	obj, found := o.cached(podworker.ObjectRef{Kind: podworker.KindConfigMap, Namespace: namespace, Name: name})
	if !found {
		return o.api.GetConfigMap(ctx, namespace, name)
	}
	if c, ok := obj.(*corev1.ConfigMap); ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("configmap"), name)
}

var _ apiobjects.Source = (*objectWatches)(nil)
