// Package pluginmanager is kubelet v1.37.2's plugin manager
// (pkg/kubelet/pluginmanager): it watches the plugin registration
// directory, <root-dir>/plugins_registry (DefaultDir), for the sockets of
// node plugins (CSI drivers, DRA drivers, device plugins through
// node-driver-registrar and kubeletplugin) and registers each with the
// Handler of its type over the pluginregistration.v1 API
// (k8s.io/kubelet/pkg/apis/pluginregistration/v1).
//
// # What it guarantees
//
// The desired state is the set of unix sockets in the directory tree:
//   - Run creates the directory if missing (mode 0750, as kubelet's
//     setupDataDirs), watches it and every subdirectory with fsnotify, and
//     walks it once, so sockets made before Run count.
//   - Only unix sockets count. Names starting with '.' are ignored (files
//     and directories), and so are regular files, FIFOs, devices and
//     symlinks (see the differences). A socket replaced at its path (another
//     inode or modification time) is a new generation: kubelet's new
//     timestamp and UUID.
//   - A removed or renamed socket leaves the desired state; so does every
//     socket beneath a removed or renamed directory.
//
// The actual state is the set of registered plugins (Plugins). Each pass
// of the reconciler (kubelet's order: deregistrations first) compares the
// two, and for each socket runs at most one operation at a time:
//
// Registration, with kubelet's steps and messages: connect (DefaultDialTimeout,
// waiting for the socket to accept), GetInfo (DefaultGetInfoTimeout), find
// the handler of the plugin's type (else NotifyRegistrationStatus(false,
// "RegisterPlugin error -- no handler registered for plugin type: T at
// socket S")), default the endpoint to the socket's path, the handler's
// ValidatePlugin (else NotifyRegistrationStatus(false, "RegisterPlugin error
// -- plugin validation failed with err: E")), the plugin recorded as
// registered, the handler's RegisterPlugin (else the record dropped and
// NotifyRegistrationStatus(false, "RegisterPlugin error -- plugin
// registration failed with err: E")), and last
// NotifyRegistrationStatus(true) (DefaultNotifyTimeout); if that fails the
// handler's DeRegisterPlugin is called and the record dropped.
//
// Deregistration, when a registered plugin's socket is gone or replaced:
// the record is dropped, then the handler's DeRegisterPlugin is called. A
// replaced socket is deregistered, then registered again.
//
// A failed operation is retried with kubelet's back-off per socket path
// (500ms, doubling, at most 2m2s); Sockets reports each socket's last error,
// whose text is kubelet's and which matches ErrDial, ErrGetInfo,
// ErrNoHandler, ErrValidation, ErrRegistration or ErrNotify with errors.Is
// (and the handler's error or the gRPC status beneath). If the directory
// itself is removed, its sockets' removals deregister their plugins, and
// no new socket is seen until a new Manager runs, as kubelet. A plugin whose
// process dies while its socket file stays is not deregistered (kubelet
// does not probe registered plugins); its handler sees its endpoint fail.
//
// The plugin's name and versions are the handler's to judge, as kubelet:
// the manager passes every plugin of a known type to ValidatePlugin, so two
// sockets announcing one name both reach the handler (kubelet's CSI handler
// keeps the newer version, its DRA handler accepts several sockets per
// driver for rolling updates).
//
// # Differences from kubelet
//
//   - Handler: ValidatePlugin and DeRegisterPlugin take no context (kubelet's
//     take one for logging), and RegisterPlugin's timeout is a
//     time.Duration, 0 for the handler's default (kubelet's is a
//     *time.Duration, nil). Handlers' panics are returned as errors of
//     their step (kubelet recovers them for the whole operation, leaving a
//     plugin whose RegisterPlugin panicked recorded as registered).
//   - Symlinks in the directory are ignored, whatever they point at; kubelet
//     follows them (a link to a socket registers the link's path, a link to
//     a directory elsewhere is watched). A registration directory that is
//     itself a symlink is refused (ErrInvalidDir).
//   - Directories whose name starts with '.' are ignored; kubelet descends
//     into those present at start and ignores those created later.
//   - A socket found twice (by the walk of a new directory and by its
//     create event) is registered once; kubelet gives it a new UUID each
//     time and may re-register it.
//   - Renames count as removals (kubelet ignores them, leaving a renamed
//     socket registered); after fsnotify loses events (queue overflow) the
//     tree is walked again and the desired state corrected.
//   - The reconciler runs on every change and when a back-off expires,
//     not on kubelet's one-second tick; the outcomes and their order are
//     the same, registration is just not delayed by up to a second.
//   - While connecting, refused connections are retried from 50ms on, up
//     to 1s apart (gRPC's default starts at 1s): a socket's create event
//     comes between its plugin's bind and listen, so a first refusal is
//     common. The dial timeout is kubelet's.
//   - No metrics (kubelet's plugin_manager_total_plugins): Sockets gives
//     the same facts. No SELinux label on the directory.
//
// Run's context carries the logr logger (logr.FromContextOrDiscard); it
// is passed to RegisterPlugin, and ends every operation when it ends.
package pluginmanager
