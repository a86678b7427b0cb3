package raftfsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/hashicorp/raft"
)

// TestFSM_halts_on_an_entry_it_cannot_apply: an entry this svc cannot apply
// (a newer svc's command, or a corrupt log) stops the replica where it is:
// nothing after it is applied, no snapshot claims the entries after it, and
// the replica says where and why.
func TestFSM_halts_on_an_entry_it_cannot_apply(t *testing.T) {
	cases := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"unknown type", []byte{0x7e, '{', '}'}},
		{"not json", []byte{byte(TypeNodeTag), 'x'}},
		{"wrong field type", []byte(string(rune(TypeNodeTag)) + `{"tag":5}`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := NewFSM(nil)
			applyAll(t, f, initCmd(t), upsertCmd(t, "n1"))
			before, _ := f.Dump()
			r := f.Apply(&raft.Log{Index: 3, Type: raft.LogCommand, Data: c.data}).(Result)
			if !errors.Is(r.Err, ErrHalted) {
				t.Fatalf("apply: %v, want ErrHalted", r.Err)
			}
			h, ok := f.Halted()
			if !ok || h.Index != 3 || h.Reason == "" {
				t.Fatalf("halted %v %+v", ok, h)
			}
			// A good entry after it is not applied.
			r = f.Apply(&raft.Log{Index: 4, Type: raft.LogCommand, Data: mustEncode(t, TypeNodeTag, NodeTag{Name: "n1", Tag: "x"})}).(Result)
			if !errors.Is(r.Err, ErrHalted) {
				t.Fatalf("the entry after: %v, want ErrHalted", r.Err)
			}
			after, _ := f.Dump()
			if !bytes.Equal(before, after) || f.Index() != 2 {
				t.Fatalf("the state moved on (index %d)", f.Index())
			}
			if _, err := f.Snapshot(); !errors.Is(err, ErrHalted) {
				t.Fatalf("snapshot while halted: %v", err)
			}
		})
	}
}

func TestFSM_ignorable_unknown_entry_is_skipped(t *testing.T) {
	f := NewFSM(nil)
	applyAll(t, f, initCmd(t))
	if r := f.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: []byte{0x7e | byte(FlagIgnorable), '{', '}'}}); r != nil {
		t.Fatalf("apply: %v", r)
	}
	if _, halted := f.Halted(); halted || f.Index() != 2 {
		t.Fatalf("halted %v index %d", halted, f.Index())
	}
}

// TestFSM_restore_of_a_newer_level_halts: a snapshot of a higher command
// level may hold state this svc would drop: it is not restored.
func TestFSM_restore_of_a_newer_level_halts(t *testing.T) {
	f := NewFSM(nil)
	applyAll(t, f, initCmd(t))
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	var sf map[string]json.RawMessage
	if err := json.Unmarshal(sink.Bytes(), &sf); err != nil {
		t.Fatal(err)
	}
	sf["level"] = json.RawMessage(`99`)
	b, _ := json.Marshal(sf)
	g := NewFSM(nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(b))); !errors.Is(err, ErrHalted) {
		t.Fatalf("restore: %v, want ErrHalted", err)
	}
	if _, halted := g.Halted(); !halted {
		t.Fatal("not halted")
	}
	// Of this level, it restores.
	h := NewFSM(nil)
	if err := h.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
}

func TestFSM_write_level(t *testing.T) {
	f := NewFSM(nil)
	up := func(name string, level int) []byte {
		return mustEncode(t, TypeNodeUpsert, NodeUpsert{Name: name, Phase: "READY", Time: t0,
			NodeFacts: NodeFacts{Addr: "10.0.0.1", Arch: "amd64", Version: "v", Level: level, Capacity: Capacity{CPU: 1}}})
	}
	applyAll(t, f, initCmd(t), up("new-1", 2), up("new-2", 2), up("old", 0))
	cases := []struct {
		name   string
		need   int
		voters []string
		ok     bool
	}{
		{"level 1 needs nothing", 1, []string{"old"}, true},
		{"every voter knows it", 2, []string{"new-1", "new-2"}, true},
		{"an old voter", 2, []string{"new-1", "old"}, false},
		{"a voter not reported yet counts as level 1", 2, []string{"new-1", "unknown"}, false},
		{"higher than any", 3, []string{"new-1"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := f.writeLevel(c.need, TypeNodeTag, c.voters)
			if (err == nil) != c.ok {
				t.Fatalf("err %v, want ok %v", err, c.ok)
			}
			if err != nil && (!errors.Is(err, ErrLevel) || !errors.Is(err, ErrConflict)) {
				t.Fatalf("err %v does not wrap ErrLevel and ErrConflict", err)
			}
		})
	}
	// Every type svc knows today is of level 1 or of this svc's level.
	for ty := Type(1); ty.Known(); ty++ {
		if l := LevelOf(ty); l < 1 || l > Level {
			t.Errorf("%s: level %d", ty, l)
		}
	}
}
