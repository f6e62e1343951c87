// Package nodeapi is kubelet v1.37.2's node API (pkg/kubelet/server, port
// 10250) as an http.Handler: what `kubectl logs`, `exec`, `attach`,
// `port-forward` and `top` reach through the API server, with kubelet's
// authentication and authorization.
//
// # Endpoints
//
//   - /containerLogs/{namespace}/{pod}/{container}: a container's log with
//     every option kubelet honours (follow, previous, tailLines or tail,
//     limitBytes, sinceSeconds, sinceTime, timestamps), decoded and checked
//     as kubelet does (LogOptions, ValidateLogOptions: 400 "Unable to decode
//     query.", 422 "Invalid request."); which instance is read follows
//     kubelet's rules and texts ("previous terminated container ... not
//     found", "is waiting to start: ..."); the file is the one the runtime
//     reports, read by Config.Logs (containerlogs.ReadLogs), flushed as it
//     is read.
//   - /exec, /attach ({namespace}/{pod}[/{uid}]/{container}) and
//     /portForward ({namespace}/{pod}[/{uid}]): the session is prepared
//     through CRI (runtime.Streamer) and the client's upgraded connection
//     proxied to the runtime's streaming server, as kubelet does by default
//     (k8s.io/apimachinery's UpgradeAwareHandler); /run is ExecSync.
//   - /stats/summary (Config.Summary; ?only_cpu_and_memory=true) and
//     /metrics/resource (Config.Metrics), what metrics-server and
//     `kubectl top` read.
//   - /metrics, /metrics/probes and /metrics/cadvisor when Config gives
//     their handlers (package nodemetrics), plain handlers serving every
//     method, as kubelet's.
//   - /healthz, /pods (the node's pods with their statuses, a v1
//     PodList) and /runningpods/ (what the runtime runs).
//
// # Who may ask
//
// Every request is authenticated (Authenticators: X509 client
// certificates against the client CA, bearer tokens through TokenReview
// with answers kept 2 minutes) and anonymous ones are refused with 401, as
// kubelet's defaults (anonymous off, webhook on). It is then authorized
// (Reviews: SubjectAccessReview, allowed answers kept 5 minutes, denied
// ones 30 seconds) on the node object with kubelet's attributes
// (RequestAttributes: the verb from the method; nodes/proxy, nodes/log,
// nodes/stats, nodes/metrics, and with KubeletFineGrainedAuthz nodes/pods
// and nodes/healthz before nodes/proxy); 403 names the user, verb and
// subresources. The API clients are one-method interfaces (TokenReviewer,
// SubjectAccessReviewer): client-go fits them in a line, outside this
// package. Tokens are cached by their SHA-256, never written anywhere.
//
// # Differences from kubelet
//
//   - The node does not declare ExtendWebSocketsToKubelet (a NodeDeclaredFeature
//     kubelet v1.37 declares), so the API server translates kubectl's
//     WebSocket sessions to SPDY itself and this server proxies SPDY (and
//     whatever the runtime's streaming server speaks) unchanged; kubelet
//     translates WebSockets with client-go's executor, which a library
//     package here must not import.
//   - Not served (404): /metrics, /metrics/cadvisor and /metrics/probes
//     without their handlers, /configz, /flagz, /statusz, /logs/ (the node's log
//     files), /checkpoint/, /allocatedPods, /debug/pprof.
//   - An unauthenticated server must be asked for (Config.Insecure); kubelet
//     would serve anonymous requests if configured to.
package nodeapi
