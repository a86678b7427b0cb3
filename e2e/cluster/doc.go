// Package cluster holds the cluster-wide tests of svc on the fake hypervisor:
// whole clusters of real peers in one process, driven through the API as
// users and their tools drive it (make unit-cluster). The tests of one
// package's own code live with that package.
package cluster
