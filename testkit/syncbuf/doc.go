// Package syncbuf is a bytes buffer that goroutines under test write (a
// logger, a command's output) while the test reads it.
package syncbuf
