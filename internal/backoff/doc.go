// Package backoff keeps, for each of many keys (a hot pool's shape, a
// template's shape, a runner pool), how long work that failed waits before
// it is tried again: each failure in a row doubles the wait, from a first
// wait to a most, with jitter where many peers or pools would otherwise try
// again in step; a success forgets the key.
package backoff
