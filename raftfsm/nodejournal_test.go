package raftfsm

import (
	"fmt"
	"slices"
	"testing"
)

func TestNodeJournal_since(t *testing.T) {
	var j nodeJournal
	j.note("a") // mark 1
	j.note("b") // 2
	j.noteAll() // 3
	j.note("c") // 4
	j.note("d") // 5
	for _, c := range []struct {
		mark    uint64
		want    []string
		wantAll bool
	}{
		{mark: 0, wantAll: true},
		{mark: 2, wantAll: true}, // a change of every node came after it
		{mark: 3, want: []string{"c", "d"}},
		{mark: 4, want: []string{"d"}},
		{mark: 5, want: []string{}},
		{mark: 6, wantAll: true}, // from another FSM's journal
	} {
		t.Run(fmt.Sprint(c.mark), func(t *testing.T) {
			got, all := j.since(c.mark)
			if all != c.wantAll || !c.wantAll && !slices.Equal(got, c.want) {
				t.Fatalf("since(%d) = %v, %v; want %v, %v", c.mark, got, all, c.want, c.wantAll)
			}
		})
	}
}

// The journal keeps its newest entries: a reader further behind than it
// reaches reads every node.
func TestNodeJournal_bounded(t *testing.T) {
	var j nodeJournal
	for i := range 3 * journalMax {
		j.note(fmt.Sprint(i))
	}
	if len(j.names) > journalMax {
		t.Fatalf("%d entries kept, at most %d", len(j.names), journalMax)
	}
	if _, all := j.since(journalMax); !all {
		t.Fatal("a mark the journal no longer reaches did not read every node")
	}
	got, all := j.since(j.seq - 2)
	if all || !slices.Equal(got, []string{fmt.Sprint(3*journalMax - 2), fmt.Sprint(3*journalMax - 1)}) {
		t.Fatalf("the newest two: %v, %v", got, all)
	}
}
