// Package bench holds the benchmarks of whole clusters: writes, reads,
// failover, deploys on real guests, image transfers and the swarm, runner
// pools, watches (make bench; make test runs each once).
package bench
