// Package keyedlimit bounds how often each of many clients, told apart by
// a key (an address), may do something: a token bucket per key, with a
// bound on the keys remembered and keys idle for a while forgotten, so
// that a crowd of addresses costs bounded memory.
package keyedlimit
