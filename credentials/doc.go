// Package credentials answers one question: for an image repository, which
// registry credentials should a pull try, and in which order? It answers as
// kubelet does (pkg/credentialprovider, v1.33–v1.37.2; compared with
// v1.37.2 by the differential tests in test/diff), with no global state,
// and goes further only where asked to.
//
// # Node files
//
// ReadDockerConfigFile(rootDir) searches config.json in rootDir (kubelet's
// --root-dir, DefaultRootDir by default), the working directory,
// $HOME/.docker and /.docker; only if none is usable, .dockercfg in
// rootDir, the working directory, $HOME and /. The first file that parses
// wins, with no merging; a config.json without "auths" still counts and
// ends the search. A file that cannot be read or parsed is skipped; the
// SearchError says which and why. Entries take "username", "password" and
// "email" (keys matched case-insensitively); a non-empty "auth" (base64 of
// "username:password", padded if it ends in "=", unpadded otherwise)
// overrides them. NodeKeyring caches what it read for 5 minutes, as kubelet
// does, on an injectable clock.
//
// # Matching
//
// Keys are normalised (https:// assumed, a leading /v1/ or /v2/ dropped,
// host with port plus path). A key matches an image when the ports are
// equal as strings, the hosts have the same number of labels, each label
// matches as a shell glob, and the key's path is a string prefix of the
// image's. Lookup returns the credentials of every matching key, most
// specific key (reverse byte order) first; only if none matched, and the
// image is a Docker Hub image, the credentials under "index.docker.io".
// Surprises kept for parity, each tested: "localhost/foo" counts as Docker
// Hub; "nginx:latest" (a tag and no slash) matches no key, since the tag
// reads as an invalid port; "?" in a key's host starts a URL query and "["
// makes the host invalid, so those globs never match; an IPv6 host needs a
// port to match.
//
// Lookup takes a repository, not an image reference: Repository turns
// "nginx" into "docker.io/library/nginx" and
// "registry:5000/a/b:tag@sha256:..." into "registry:5000/a/b", as
// kubelet's image manager does before its lookup (ParseImageName is
// kubelet's parsers.ParseImageName; a reference that does not parse is an
// error matching ErrInvalidImageName).
//
// Pull secrets (MakeKeyring) of type kubernetes.io/dockerconfigjson and
// kubernetes.io/dockercfg with their data key become one keyring that
// comes before the node keyring; other secrets are skipped, and a
// malformed one is an error naming the secret. A secret's stringData is
// merged over its data first, as the API server does on write (stringData
// wins), so a secret written as YAML works as it would once stored.
// KeyringFromConfigJSON and KeyringFromDockercfg build the same keyring
// from a secret's (or any config file's) bytes and a Source label.
//
// # Differences from kubelet
//
// BasicKeyring builds an index when credentials are added: a lookup costs
// about the same at 16 or 1,024 keys (kubelet parses every key on every
// lookup). Its results equal kubelet's algorithm, kept in the tests as an
// oracle and compared on random and fuzzed inputs. Entries of one config
// under one key are added in sorted key order, where kubelet's order is
// random. Error texts never quote a config's content (encoding/json's
// syntax errors can quote a password's character); every AuthConfig knows
// its Source and prints without secrets. The node keyring notices an
// edited, replaced, added or removed config file within a second (kubelet
// waits out its 5 minute cache). Plugin config directories take any
// non-directory file (kubelet's rule; a ConfigMap volume holds symlinks).
// Fields kubelet does not read (identitytoken, registrytoken, credsStore,
// credHelpers) never fail a secret or config, whatever their type.
//
// Opt-in, beyond kubelet: WithTokens carries identitytoken and
// registrytoken; WithHelpers asks docker credential helpers (credHelpers,
// credsStore), speaking their protocol through docker-credential-helpers'
// client with a timeout, since docker/cli's native store cannot stop a hung
// helper; PluginKeyring runs exec credential provider plugins (KEP-2133)
// with cache key types, cache durations, coalesced concurrent runs and a
// timeout.
//
// # Service-account token mode (KEP-4412)
//
// A plugin provider with tokenAttributes (kubelet's
// KubeletServiceAccountTokenForCredentialProviders, beta and on by default
// since v1.34; credentialprovider.kubelet.k8s.io/v1 only) is given, with
// each request, a token of the pod's service account for the configured
// audience, bound to the pod, and the service account's annotations that
// requiredServiceAccountAnnotationKeys and
// optionalServiceAccountAnnotationKeys name. This package has no API
// client: WithServiceAccounts supplies the service account
// (ServiceAccountFunc; kubelet reads the ServiceAccount object) and the
// token (ServiceAccountTokenFunc; kubelet's TokenRequest, which
// ServiceAccountTokenRequest.TokenRequest builds). A lookup for a pod
// names it with a PodRef: PluginKeyring.LookupForPod, or ForPod for a
// Keyring to pass where a node keyring goes; Lookup is a lookup for a pod
// without a service account. As in kubelet v1.37.2:
//
//   - no service account: the plugin runs without a token if
//     requireServiceAccount is false, and not at all (no error) if true;
//   - a required annotation missing: the plugin does not run; the error
//     (ErrRequiredAnnotation) reaches WithErrorHandler, where kubelet logs
//     it at verbosity 5, since a required annotation is how workloads opt
//     in;
//   - the service account or token cannot be had: no credentials, an
//     ErrServiceAccount error wrapping the caller's;
//   - answers are cached under the image, registry or global key plus the
//     service account's namespace, name, UID and the annotations sent, and
//     with cacheType Token also the token's SHA-256, so that every new
//     token (each pod, each refresh) runs the plugin again, while
//     cacheType ServiceAccount shares the answer among the pods of one
//     service account;
//   - a token is requested on every lookup, cached or not, so the token
//     function should reuse a fresh token as kubelet's token manager does;
//   - a plugin that returns the token as a password is refused unless
//     cacheType is Token.
//
// Credentials from a token-mode plugin name the service account in their
// Source. The token goes only to the plugin's stdin: it is never in an
// error (a plugin's stderr has it replaced before being summarised), nor
// in what any type of this package prints, and cache keys hold its hash.
//
// # Hashes kubelet records
//
// AuthConfig.Hash is kubelet's AuthConfigHash, the credentialHash of a
// pull secret in kubelet's image pull records (KEP-2535; package
// images/pullrecords writes them), and LoadPluginConfigWithHash (or
// PluginConfigHash) gives the hash label of kubelet's
// kubelet_credential_provider_config_info metric. Both equal kubelet
// v1.37.2's on the same input (test/diff compares them on random input).
//
// # Logs
//
// This package writes no logs: what went wrong is in the returned errors,
// which never quote a secret. The packages that log (images, podsync) use
// the logr.Logger in the context (logr.FromContextOrDiscard), discarded by
// default, and never log credentials.
package credentials
