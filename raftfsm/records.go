package raftfsm

import (
	"slices"
	"strings"
)

func key(ns, name string) string { return ns + "/" + name }

// record is a kind of record the state holds in a map: the views return
// copies of records, sorted by their keys, so that readers never share
// memory with the state.
type record[T any] interface {
	*T
	clone() *T
	sortKey() string
}

// list returns copies of the records of one map of the state that keep
// accepts (all when keep is nil), sorted by key, under the read lock.
func list[T any, P record[T]](f *FSM, records func(*State) map[string]*T, keep func(P) bool) []T {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []T
	for _, r := range records(f.state) {
		if keep == nil || keep(r) {
			out = append(out, *P(r).clone())
		}
	}
	slices.SortFunc(out, func(a, b T) int { return strings.Compare(P(&a).sortKey(), P(&b).sortKey()) })
	return out
}

// get returns a copy of one record.
func get[T any, P record[T]](f *FSM, records func(*State) map[string]*T, k string) (T, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, ok := records(f.state)[k]
	if !ok {
		var zero T
		return zero, false
	}
	return *P(r).clone(), true
}
