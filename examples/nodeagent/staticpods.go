package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/staticpods"
)

// StaticPods configures kubelet's static pod sources.
type StaticPods struct {
	// ManifestPath is kubelet's --pod-manifest-path (staticPodPath): a
	// directory of pod manifests, or one manifest file ("": none).
	ManifestPath string
	// ManifestURL is kubelet's --manifest-url (staticPodURL) and
	// ManifestURLHeader its --manifest-url-header.
	ManifestURL       string
	ManifestURLHeader http.Header
	// CheckFrequency is both sources' re-read period (kubelet's
	// fileCheckFrequency and httpCheckFrequency, 20 s; zero: that).
	CheckFrequency time.Duration
}

// headerFlag is kubelet's --manifest-url-header: "a:hello,b:again",
// repeatable; a name given twice keeps both values in order.
type headerFlag struct{ h http.Header }

func (f *headerFlag) String() string {
	if f == nil || f.h == nil {
		return ""
	}
	var parts []string
	for k, vs := range f.h {
		for _, v := range vs {
			parts = append(parts, k+":"+v)
		}
	}
	return strings.Join(parts, ",")
}

func (f *headerFlag) Set(s string) error {
	if f.h == nil {
		f.h = http.Header{}
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, ":")
		if !ok {
			return fmt.Errorf("malformed header %q: want key:value", kv)
		}
		f.h.Add(k, v)
	}
	return nil
}

type staticPodFlags struct {
	path, url *string
	header    headerFlag
}

// staticFlags are kubelet's flags of the static pod sources.
var staticFlags = func() *staticPodFlags {
	f := &staticPodFlags{
		path: flag.String("pod-manifest-path", "", "kubelet's --pod-manifest-path: a directory of static pod manifests (or one file), watched"),
		url:  flag.String("manifest-url", "", "kubelet's --manifest-url: a URL serving a static pod or a PodList, polled every 20 s"),
	}
	flag.Var(&f.header, "manifest-url-header", "kubelet's --manifest-url-header: HTTP headers for -manifest-url, 'a:hello,b:again' (repeatable)")
	return f
}()

func (f *staticPodFlags) config() *StaticPods {
	if *f.path == "" && *f.url == "" {
		return nil
	}
	return &StaticPods{ManifestPath: *f.path, ManifestURL: *f.url, ManifestURLHeader: f.header.h}
}

// staticAgent runs the static pod sources into the workers and keeps their
// mirror pods, as kubelet's file and HTTP sources, its pod manager's
// mirror pods and tryReconcileMirrorPods do. It exists whether or not a
// source is configured: mirror pods bound to the node are never run as
// pods, and orphaned ones are deleted (kubelet's housekeeping).
type staticAgent struct {
	workers *podworker.Workers
	mirrors *staticpods.Mirrors
	wake    chan struct{}

	mu sync.Mutex
	// removed: static pods removed from their source, by full name, whose
	// mirror waits for their kill to end.
	removed map[string]types.UID
}

// mirrorClient is staticpods.MirrorClient over client-go.
type mirrorClient struct{ c kubernetes.Interface }

func (m mirrorClient) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	return m.c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

func (m mirrorClient) CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return m.c.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
}

func (m mirrorClient) DeletePod(ctx context.Context, ns, name string, uid types.UID) error {
	opts := metav1.DeleteOptions{GracePeriodSeconds: new(int64)}
	if uid != "" {
		opts.Preconditions = metav1.NewUIDPreconditions(string(uid))
	}
	return m.c.CoreV1().Pods(ns).Delete(ctx, name, opts)
}

func newStaticAgent(client kubernetes.Interface, nodeName string) *staticAgent {
	s := &staticAgent{wake: make(chan struct{}, 1), removed: map[string]types.UID{}}
	s.mirrors = staticpods.NewMirrors(mirrorClient{client}, nodeName, staticpods.WithTerminating(s.terminating))
	return s
}

// terminating: a removed static pod whose kill has not ended.
func (s *staticAgent) terminating(fullName string) bool {
	s.mu.Lock()
	uid, ok := s.removed[fullName]
	s.mu.Unlock()
	if !ok || s.workers == nil {
		return false
	}
	st, known := s.workers.Status(uid)
	if !known || st.Removed {
		s.mu.Lock()
		delete(s.removed, fullName)
		s.mu.Unlock()
		return false
	}
	return true
}

func (s *staticAgent) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// apiPod takes the API source's mirror pods (true: the caller must not run
// it): kubelet's pod manager keeps them apart from the pods it runs.
func (s *staticAgent) apiPod(pod *corev1.Pod, gone bool) bool {
	if !staticpods.IsMirrorPod(pod) {
		return false
	}
	if gone {
		s.mirrors.RemoveMirror(pod)
	} else {
		s.mirrors.SetMirror(pod)
	}
	s.poke()
	return true
}

// run runs the configured sources and the mirror pods' reconcile until
// ctx ends; seen is closed once every source sent its first snapshot
// (kubelet's sources ready).
func (s *staticAgent) run(ctx context.Context, cfg *StaticPods, nodeName string, seen chan<- struct{}) {
	var wg sync.WaitGroup
	defer wg.Wait()
	updates := make(chan staticpods.Update)
	refused := staticpods.WithOnRefused(func(r staticpods.Refusal) { log.Printf("static pods: %v", r) })
	sources := 0
	if cfg != nil {
		period := staticpods.WithPeriod(cfg.CheckFrequency)
		if cfg.ManifestPath != "" {
			if src, err := staticpods.NewFileSource(cfg.ManifestPath, nodeName, refused, period); err != nil {
				log.Printf("static pods: %v", err)
			} else {
				sources++
				wg.Go(func() { _ = src.Run(ctx, updates) })
			}
		}
		if cfg.ManifestURL != "" {
			if src, err := staticpods.NewURLSource(cfg.ManifestURL, cfg.ManifestURLHeader, nodeName, refused, period); err != nil {
				log.Printf("static pods: %v", err)
			} else {
				sources++
				wg.Go(func() { _ = src.Run(ctx, updates) })
			}
		}
	}
	seenBy := map[string]bool{}
	if sources == 0 {
		close(seen)
	}
	// Housekeeping: kubelet reconciles mirror pods at every sync of a
	// static pod and deletes orphans every 2 s.
	ticker := time.NewTicker(2 * time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-updates:
			s.apply(u)
			if !seenBy[u.Source] {
				seenBy[u.Source] = true
				if len(seenBy) == sources {
					close(seen)
				}
			}
		case <-s.wake:
		case <-ticker.C:
		}
		if err := s.mirrors.Sync(ctx); err != nil && ctx.Err() == nil {
			log.Printf("static pods: mirror pods: %v", err)
		}
	}
}

// apply hands a source's update to the workers (kubelet's
// HandlePodAdditions, HandlePodUpdates, HandlePodRemoves).
func (s *staticAgent) apply(u staticpods.Update) {
	if u.Op == staticpods.OpAdd {
		staticpods.SortForAdmission(u.Pods)
	}
	for _, pod := range u.Pods {
		var err error
		switch u.Op {
		case staticpods.OpAdd, staticpods.OpUpdate:
			s.mirrors.SetStatic(pod)
			err = s.workers.Upsert(pod)
		case staticpods.OpRemove:
			s.mu.Lock()
			s.removed[staticpods.FullName(pod)] = pod.UID
			s.mu.Unlock()
			s.mirrors.RemoveStatic(pod)
			err = s.workers.Delete(pod, nil)
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			log.Printf("static pod %s/%s: %v", pod.Namespace, pod.Name, err)
		}
	}
}
