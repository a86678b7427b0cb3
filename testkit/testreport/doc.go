// Package testreport reads the event streams of go test -json (test2json)
// and tells how long each test and benchmark took: a test by its pass or
// fail event's Elapsed, a benchmark (which test2json gives no end of its
// own) from its run event to the next event of its package that is not its
// own. make test prints the slowest of its runs with it
// (cmd/svc-testreport), so that the next slow test is seen where it
// appears.
package testreport
