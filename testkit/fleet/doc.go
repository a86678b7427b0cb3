// Package fleet measures svc as a fleet grows: a cluster of real peers
// (the svc binary, the fake hypervisor) in network namespaces on this one
// machine (scripts/local-cluster.sh, through testkit/chaos's Cluster), at
// several sizes. At each it measures the writes a second the leader
// acknowledges from 16 clients, the leader's CPU at idle, the peers'
// memory at idle, deploy to Running, a new host to READY, a killed host
// to NOT READY and a killed leader to the first accepted write; then a
// model fitted to the points extrapolates to fleets this machine cannot
// hold, printed apart from what was measured (cmd/svc-fleet, make fleet).
package fleet
