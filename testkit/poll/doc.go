// Package poll is the tests' one way to wait for a condition another
// goroutine (a peer, a VM, a browser) makes true: ask again every few
// milliseconds until it holds or a deadline passes, and say what was last
// seen. A test never sleeps a fixed time instead.
package poll
