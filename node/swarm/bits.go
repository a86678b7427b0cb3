package swarm

import "math/bits"

// Bits is a set of chunk numbers, as a bitmap (chunk i is bit i%8 of byte
// i/8): what a peer tells the tracker it has.
type Bits []byte

// NewBits is an empty set for n chunks.
func NewBits(n int) Bits { return make(Bits, (n+7)/8) }

// Has reports whether i is in the set (false out of range).
func (b Bits) Has(i int) bool { return i >= 0 && i/8 < len(b) && b[i/8]&(1<<(i%8)) != 0 }

// Set adds i.
func (b Bits) Set(i int) { b[i/8] |= 1 << (i % 8) }

// Count is the number of chunks in the set.
func (b Bits) Count() int {
	n := 0
	for _, x := range b {
		n += bits.OnesCount8(x)
	}
	return n
}
