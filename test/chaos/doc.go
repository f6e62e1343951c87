// Package chaos is podstart's chaos tier: a real agent process
// (examples/nodeagent) on containerd against a real kube-apiserver, driven
// through pod churn while faults are injected at points a printed seed
// chooses, then checked for convergence, leftovers and restarts that
// should not have happened. Its test is the whole package; see README.md.
package chaos
