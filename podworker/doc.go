// Package podworker drives pods through their life on one node: kubelet's
// pod workers and generic PLEG as a library, on top of podsync.
//
// Workers holds one loop per pod, a goroutine while the pod has work or a
// retry or resync armed: a steady pod's loop ends and its next wake-up
// starts it again, so an idle node holds no stack per pod. Upsert gives
// it the pod's newest spec, Delete (or a spec with a DeletionTimestamp)
// ends it. A pod's syncs
// never overlap, so two updates of one pod cannot both create a sandbox or
// run an init container twice; different pods sync in parallel.
//
// A pod is synced again exactly when something may have changed:
//
//   - its spec was upserted;
//   - its own sync did work: it goes on, with the status of a relist
//     asked for at once and begun after that sync ended, until a sync has
//     nothing left to do. Kubelet's pod worker likewise waits until its
//     PLEG cache is newer than its last sync; here the relist is asked for
//     rather than waited for (up to a second), begins no sooner than the
//     relist gap (100 ms, WithRelistGap) after the last relist ended, and
//     one relist (two list calls) serves every pod that synced meanwhile,
//     where each pod reading its own status (podsync's Status) cost two
//     list calls. A
//     new pod the last relist did not see starts from that (nothing), as
//     kubelet's first sync starts from its cache. A runtime's event about
//     a pod that is syncing, or about a change a relist has already seen
//     (podsync.StatusCache.Reflects), asks for no relist of its own;
//   - a back-off ends: a result's earliest back-off expiry
//     (podsync.Result.NextSync) arms a timer, so a crash-looping container
//     or an image in back-off is retried without polling, on kubelet
//     v1.37.2's schedule: its pod workers requeue a failed sync for the
//     time left of the back-off (at most the resync period), plus a random
//     0 to 50% more (Jitter, workerBackOffPeriodJitterFactor), so a
//     container is restarted up to half its back-off after the back-off
//     ends, and restart counts keep kubelet's pace (PodState.NextSync says
//     when; WithJitter changes the spread);
//   - the runtime changed it: one node-wide relist per period (kubelet's
//     generic PLEG, 1 s by default: one ListPodSandbox and one
//     ListContainers for all pods, a status call only for instances that
//     changed) wakes only the pods whose instances changed, and hands them
//     the fresh status. A runtime that streams container events
//     (runtime.ContainerEventStreamer: runtime.Client over CRI
//     GetContainerEvents, containerd 1.7 and later; runtime/fake) triggers
//     a relist at once (within the relist gap), so a container's exit is
//     seen in milliseconds
//     rather than at the next period (WithContainerEvents turns it off);
//     while the stream is open and the node has not changed for
//     QuietAfter (10 s), the relist period is 1 min
//     (WithEventedRelistPeriod; see below); a runtime without events
//     (containerd 1.6 answers Unimplemented) is relisted every period;
//   - a sync failed for another reason: it is retried after a delay
//     (10 s, kubelet's workerBackOffPeriod, spread the same way);
//   - kubelet's periodic resync (1 min) syncs, with the status of the
//     latest relist, every pod whose last sync left something a resync
//     could still do: it failed, did work, is being killed, has an active
//     deadline, has an in-place resize that could not be done, has a
//     volume that could not be set up again (podsync.Result.RemountError),
//     or, with a volume manager (WithVolumeManager), has a volume through
//     a claim: the resync hands it to the volume manager again, as
//     kubelet's ReprocessPod, which finds a claim's new size (an online
//     expansion).
//     A pod whose last sync succeeded with nothing to do is not resynced
//     (see below);
//   - its volumes' content changes: a running pod's Secret, ConfigMap,
//     downward API and projected volumes are set up again at each of its
//     syncs (podsync.VolumeRemounter, apiobjects.Volumes), as kubelet's
//     volume manager remounts them. An upserted spec with new labels or
//     annotations syncs it, so its downward API files follow; a caller
//     that watches Secrets and ConfigMaps wakes the pods that refer to a
//     changed, created or deleted one (ResyncReferencing, References; or
//     ResyncMatching, Resync); and a pod whose volumes change with time
//     alone is synced when they do (podsync.Result.RefreshAt: its service
//     account token is due for renewal, at 80% of its lifetime or after 24
//     hours);
//   - a pod with an active deadline is synced when it passes (kubelet
//     checks every second): kubelet's active deadline handler then fails
//     it (apistatus: Failed, DeadlineExceeded) and it is killed with its
//     grace period and removed, its final status kept, as an evicted
//     pod; a deadline set or lowered on a running pod counts from its
//     start time. Kubelet's Normal DeadlineExceeded event is not emitted
//     (podworker has no event recorder; the status says it).
//
// Deleting a pod kills it with kubelet's effective grace period
// (podsync.EffectiveGracePeriod), then removes its containers, sandboxes,
// pod directory and log directory (podsync.Syncer.RemovePod), and forgets
// it. Garbage collection (podsync.Syncer.GarbageCollect, kubelet's default
// policy) runs once per minute; once the caller says all its pods are
// known (SourcesReady), it also removes pods on the node that the
// Workers do not hold: orphans of an earlier agent process.
//
// With WithAdmission, a pod new to the node is admitted (kubelet's
// HandlePodAdditions; admission.Admitter) before its first sync, one
// admission at a time, against the pods admitted before it that are still
// active. A rejected pod never reaches the runtime: the listeners hear it
// once, removed, with kubelet's rejectPod status (RejectedStatus: Failed,
// the handler's reason, "Pod was rejected: " and its message), and its
// later upserts are ignored.
//
// Close stops every goroutine and waits for them; a sync in flight is
// cancelled through its context. Nothing is killed by Close: a restarted
// agent finds its pods running (podsync.ListPods) and upserts them again.
// WaitIdle waits until nothing is left to do or due: a test on a fake
// clock steps it and waits, with no sleeps (BenchmarkSteadyState runs a
// node's simulated minutes so).
//
// # Differences from kubelet
//
// Kubelet admits every pod again when it restarts (HandlePodAdditions
// with the pods of the API server). Workers admit only the pods the
// runtime does not have: a pod an earlier agent process admitted and
// started is taken as admitted, so a restarted agent never rejects a pod
// it runs; such a pod counts for the admission of new pods even before
// its own first sync (the runtime is listed once while such pods wait).
// Kubelet admits a batch of new pods in order of creation; Workers admit
// new pods in the order their loops reach their first sync (an agent's
// informer hands pods over one at a time).
//
// Kubelet keeps a terminated pod's containers until garbage collection and
// its directories until the API server deletes the pod; a Workers removes
// them as soon as the kill succeeds, since it has no API server to wait
// for (a caller that must keep them uses podsync directly). Kubelet waits
// for the next relist after every sync; a pod here re-reads its own status
// after a sync that did work, so a pod with init containers starts one
// relist period faster per init container. Kubelet's requeued pods are
// picked up by its sync loop's 1 s tick; a retry here fires at its time,
// on average half a second sooner. A sync that succeeds but leaves work
// is repeated one resync period after it, without kubelet's jitter. A
// sync that failed both on a back-off and for another reason is retried
// here after the error retry if that is sooner; kubelet waits for the
// back-off (up to the resync period) even then, which would leave, say, a
// missing secret unnoticed for a minute behind a crash-looping sibling.
//
// Kubelet resyncs every pod every minute. A pod here whose last sync
// succeeded with nothing to start, kill or update (and no retry, kill,
// active deadline or pending resize) is not resynced: everything that
// could give it work wakes it already (a new spec, a runtime change seen
// by a relist or an event, a probe result, a back-off's end), so
// kubelet's resync of it computes no action and the same status, and its
// cost would grow with the number of pods while nothing changes (issue
// 27). What such a resync reads that is not the pod's own state is not
// read again: pull secrets (needed only to pull, that is, to start
// something) and the pod's cgroup, which is not re-applied every minute
// (kubelet's EnsureExists would recreate one removed behind its back).
// PodState.Synced and the listeners (WithOnSync) therefore hear a steady
// pod only when it changes; a caller that wants a pod synced again
// upserts it or calls Resync.
//
// Kubelet's resync also sets a steady pod's Secret, ConfigMap, downward
// API and projected volumes up again every minute, so that they follow
// their objects (read through its watching caches), the pod's labels and
// annotations, and its token renewals. Here a steady pod's volumes are
// set up again when something that could change them wakes it: a new
// spec (labels, annotations, resources), the caller's ResyncReferencing
// or ResyncMatching for a changed object (examples/nodeagent watches the
// Secrets and ConfigMaps its pods refer to, and ClusterTrustBundles), a
// token renewal's time (RefreshAt), a pod certificate's issue or renewal
// (the caller's Resync, from apiobjects.WithPodCertificateNotify). A
// change is then seen at once rather than at the next resync (up to 1.5
// min with kubelet's jitter); a change the caller does not report (a
// caller that does not watch the objects) is not seen until something
// else syncs the pod, where kubelet would see it within a minute; such a
// caller asks for kubelet's periodic rewrite with WithPeriodicRemount,
// which resyncs every pod with such a volume each resync period. A
// remount that failed is retried at the pod's resync (1 min) or at the
// next change of its objects; kubelet's reconciler retries it after 0.5 s
// doubling to about 2 min. The renewal times of all pods share one timer
// and one goroutine, so a steady pod waiting for its renewal holds none
// of its own. A renewal is due just after kubelet's time without its
// jitter (which only brings kubelet's renewal up to 10 s earlier); one
// that fails while the old token is still valid is tried again after the
// resync period.
//
// Kubelet's generic PLEG relists every second, whatever the runtime
// streams (its evented PLEG, off by default, relists every 5 min). Each
// relist lists every sandbox and container of the node, so its cost grows
// with the number of pods while nothing changes. Here, while the
// runtime's event stream is open and nothing changed for QuietAfter, the
// node is relisted once a minute (WithEventedRelistPeriod): every change
// of a container comes with an event, which relists at once, and after
// any change, event, or opening or end of the stream the node is relisted
// every second again for QuietAfter, the time podsync's StatusCache keeps
// asking about a failed container for a reason its runtime records late
// (OOMKilled, which comes with no event). A change that comes with no
// event, and not within QuietAfter of another change, is seen at the
// next relist, up to a minute later where kubelet sees it within a
// second: a sandbox that stops alone on a runtime that sends no event for
// sandboxes (runtime/fake; containerd sends them), or a burst of events
// the runtime dropped whole because the stream fell behind.
// WithEventedRelistPeriod(0) relists every second, as kubelet.
package podworker
