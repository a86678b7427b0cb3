// Package guest talks to a running guest the way a user would: a command over
// SSH with a password (package rfb speaks to its screen). Tests and benchmarks
// use it to check that VMs really answer.
package guest
