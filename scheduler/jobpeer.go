package scheduler

// JobPeer chooses the peer that carries out a registry job (a pull, or a
// push of an image's blob): prefer when it may, else the first of
// candidates that may, in the order given; ok is false when none may. A
// peer may when ready says it is READY. Jobs take no VM capacity, so
// nothing else is weighed.
func JobPeer(prefer string, candidates []string, ready func(name string) bool) (peer string, ok bool) {
	if prefer != "" && ready(prefer) {
		return prefer, true
	}
	for _, c := range candidates {
		if ready(c) {
			return c, true
		}
	}
	return "", false
}
