package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/backup"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/raftstore"
	"github.com/svc-project/svc/testkit/testcluster"
)

// snapshotState reads a snapshot file's state: each kind of record by its
// JSON name (the file checked whole first).
func snapshotState(t *testing.T, file []byte) (backup.Header, map[string]json.RawMessage, map[string]json.RawMessage) {
	t.Helper()
	rd, err := backup.NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	if _, err := body.ReadFrom(rd.Body()); err != nil {
		t.Fatal(err)
	}
	if err := rd.Verify(); err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body.Bytes(), &top); err != nil {
		t.Fatal(err)
	}
	var state map[string]json.RawMessage
	if err := json.Unmarshal(top["state"], &state); err != nil {
		t.Fatal(err)
	}
	return rd.Header, top, state
}

// TestSnapshot_save_through_a_follower_holds_every_acknowledged_write: a
// namespace made through the leader, then at once a save asked of a
// follower (what svc cluster snapshot save does through any peer). Before,
// the follower saved the state it had applied, which most times lacked the
// namespace, and restoring such a file deletes what it lacks. Now every
// save holds it; with ?stale=true a peer saves what it applied (a cluster
// with no leader).
func TestSnapshot_save_through_a_follower_holds_every_acknowledged_write(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{Prefix: "ackd"})
	leader := c.WaitLeader()
	lcl := c.Client(leader)
	followers := c.Followers()
	const rounds = 30
	for i := range rounds {
		name := fmt.Sprintf("ack-%d", i)
		if _, err := lcl.CreateNamespace(kit.Ctx(t), name); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := c.Client(followers[i%len(followers)]).SaveSnapshot(kit.Ctx(t), &buf); err != nil {
			t.Fatalf("round %d: save: %v", i, err)
		}
		_, _, state := snapshotState(t, buf.Bytes())
		var nss map[string]json.RawMessage
		if err := json.Unmarshal(state["namespaces"], &nss); err != nil {
			t.Fatal(err)
		}
		if _, ok := nss[name]; !ok {
			t.Fatalf("round %d: the snapshot saved through %s lacks namespace %s, made (201) before the save was asked", i, followers[i%len(followers)].Name, name)
		}
	}
	// A stale save is this peer's own, even with no leader to ask.
	var buf bytes.Buffer
	if _, err := c.Client(followers[0]).SaveSnapshotWith(kit.Ctx(t), &buf, api.SnapshotSaveOptions{Stale: true}); err != nil {
		t.Fatal(err)
	}
	if h, _, _ := snapshotState(t, buf.Bytes()); h.Peer != followers[0].Name {
		t.Fatalf("a stale save through %s was taken by %s", followers[0].Name, h.Peer)
	}
}

// TestSnapshot_large_restore_through_a_follower: a snapshot of 4 MB,
// restored through a follower. Before, the follower buffered the body to
// forward it and refused any over 1 MiB (413). Now the body streams to the
// leader, which installs it, and the call answers once every peer has the
// state. With Raft's production timeouts, as users run it. Whether the
// leader keeps its term is logged, not asserted: with a 200 ms lease, three
// peers sharing one process's two cores and collector with the rest of the
// suite (TCG guests among it) miss a lease's heartbeats as each decodes the
// state. At 13 MB, under a make test beside a loop of -race tests, each of
// three tries lost the leadership mid-restore (all three peers install the
// state at once, under -race); 4 MB is still four times what the old
// buffer refused, and a third of that CPU.

func TestSnapshot_large_restore_through_a_follower(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{Prefix: "bigsnap", ProductionTiming: true})
	leader := c.WaitLeader()
	follower := c.Followers()[0]
	cl := c.Client(follower)
	file, _ := saveSnapshot(t, cl)
	h, top, state := snapshotState(t, file)
	big, last := withBulkNamespaces(t, h, top, state, 4<<20)
	term := leader.Peer.Store().Stats()["term"]
	start := time.Now()
	// A leadership that moves while the state installs is answered 503
	// with Retry-After, as every write in flight then is, and the caller
	// sends it again (a restore installs the same state twice alike). How
	// often the leadership moves is the machine's: with a 200 ms lease,
	// three peers in one -race process on two cores busy with the rest of
	// the suite lost it on each of three tries (load average 21). So the
	// test sends it again for as long as the peer's own bound on a restore
	// allows twice over (raftstore.RestoreTimeout), each
	// try with that bound and the upload's time.
	var (
		got   api.SnapshotRestored
		err   error
		tries int
	)
	for deadline := time.Now().Add(2 * raftstore.RestoreTimeout); ; {
		tries++
		rctx, cancel := context.WithTimeout(context.Background(), raftstore.RestoreTimeout+time.Minute)
		got, err = cl.RestoreSnapshot(rctx, bytes.NewReader(big))
		cancel()
		if api.CodeOf(err) != http.StatusServiceUnavailable || time.Now().After(deadline) {
			break
		}
		t.Logf("try %d: %v", tries, err)
		c.WaitLeader()
	}
	if err != nil {
		t.Fatalf("a restore of %d MB through follower %s, %d tries: %v", len(big)>>20, follower.Name, tries, err)
	}
	t.Logf("restored %d MB through %s in %s: %s", len(big)>>20, follower.Name, time.Since(start).Round(time.Millisecond), got.Message)
	if now := c.WaitLeader(); now != leader || leader.Peer.Store().Stats()["term"] != term {
		t.Logf("the leadership moved from %s (term %s) to %s", leader.Name, term, now.Name)
	} else {
		t.Logf("%s kept its leadership (term %s)", leader.Name, term)
	}
	// (Each peer's replica, not a list of 200,000 namespaces a poll.)
	c.WaitFor("every peer holds the restored namespaces", time.Minute, func() error {
		for _, m := range c.Running() {
			if _, ok := m.Peer.FSM().Namespace(last); !ok {
				return fmt.Errorf("%s lacks namespace %s", m.Name, last)
			}
		}
		return nil
	})
	if _, err := cl.CreateNamespace(kit.Ctx(t), "after-restore"); err != nil {
		t.Fatalf("a write after the restore: %v", err)
	}
}

// TestSnapshot_restore_of_a_crafted_state: a file whose checksum is right
// (anyone can compute one) but whose state is crafted. Before, a state
// nested past the decoder's depth answered 500, and a state whose maps or
// records were null was installed as it was (a nil map the next write to
// it would trip on). Now the first is a 400 that restores nothing, and
// null maps and records are restored empty and left out: the cluster takes
// writes to them after.
func TestSnapshot_restore_of_a_crafted_state(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{Prefix: "crafted"})
	cl := c.Client(c.Followers()[0])
	file, _ := saveSnapshot(t, cl)
	h, top, state := snapshotState(t, file)
	writeRaw := func(body []byte) []byte {
		t.Helper()
		h.Size = int64(len(body))
		var out bytes.Buffer
		if err := backup.Write(&out, h, bytes.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	write := func(top map[string]json.RawMessage) []byte {
		t.Helper()
		body, err := json.Marshal(top)
		if err != nil {
			t.Fatal(err)
		}
		return writeRaw(body)
	}
	deep := `{"version":1,"state":{"initialized":true,"namespaces":` + strings.Repeat(`{"a":`, 20000) + `1` + strings.Repeat(`}`, 20000) + `}}`
	if _, err := cl.RestoreSnapshot(kit.Ctx(t), bytes.NewReader(writeRaw([]byte(deep)))); api.CodeOf(err) != http.StatusBadRequest {
		t.Fatalf("a state nested 20,000 deep: %v, want 400", err)
	}
	state["namespaces"] = json.RawMessage(`{"lost":null}`)
	state["vmConfigs"] = json.RawMessage(`null`)
	state["isos"] = json.RawMessage(`null`)
	nulls := map[string]json.RawMessage{}
	for k, v := range top {
		nulls[k] = v
	}
	var err error
	if nulls["state"], err = json.Marshal(state); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.RestoreSnapshot(kit.Ctx(t), bytes.NewReader(write(nulls))); err != nil {
		t.Fatalf("a state of null maps and records: %v", err)
	}
	for _, name := range []string{"lost", "after"} {
		if _, err := cl.CreateNamespace(kit.Ctx(t), name); err != nil {
			t.Fatalf("namespace %s after the restore: %v", name, err)
		}
	}
	if _, err := cl.CreateVMConfig(kit.Ctx(t), "after", api.VMConfig{Name: "c", Image: "none", CPU: 1}); api.CodeOf(err) >= 500 {
		t.Fatalf("a VM config after the restore: %v", err)
	}
	for _, m := range c.Running() {
		if h, halted := m.Peer.FSM().Halted(); halted {
			t.Fatalf("%s halted: %+v", m.Name, h)
		}
	}
}

// withBulkNamespaces returns a snapshot file of state with namespaces added
// until it holds size bytes (each a record as the cluster writes it), and
// the last one's name. The file is written as bytes, not marshalled: with
// -race, marshalling megabytes in the peers' process starved them of CPU for
// longer than a leader's lease.
func withBulkNamespaces(t *testing.T, h backup.Header, top, state map[string]json.RawMessage, size int) ([]byte, string) {
	t.Helper()
	var body bytes.Buffer
	body.Grow(size + 64<<10)
	body.WriteByte('{')
	for k, v := range top {
		if k != "state" {
			fmt.Fprintf(&body, "%q:%s,", k, v)
		}
	}
	body.WriteString(`"state":{`)
	for k, v := range state {
		if k != "namespaces" {
			fmt.Fprintf(&body, "%q:%s,", k, v)
		}
	}
	nss := bytes.TrimSpace(state["namespaces"])
	body.WriteString(`"namespaces":`)
	body.Write(nss[:len(nss)-1]) // the namespaces there are, open
	sep := ","
	if len(bytes.TrimSpace(nss[1:len(nss)-1])) == 0 {
		sep = ""
	}
	x := strings.Repeat("x", 40)
	var last string
	for i := 0; body.Len() < size; i++ {
		last = fmt.Sprintf("bulk-%06d-%s", i, x)
		fmt.Fprintf(&body, `%s%q:{"name":%q,"createdAt":"2026-12-01T00:00:00Z"}`, sep, last, last)
		sep = ","
	}
	body.WriteString("}}}")
	h.Size = int64(body.Len())
	var file bytes.Buffer
	if err := backup.Write(&file, h, bytes.NewReader(body.Bytes())); err != nil {
		t.Fatal(err)
	}
	return file.Bytes(), last
}

// TestSnapshot_restore_through_a_follower_while_the_leadership_moves: a
// restore sent through a follower while the leader hands over, round after
// round, is answered 200 or 503 with one Status, never anything else.
// Before, the old leader refused the forwarded upload before reading it,
// net/http closed the connection under the follower still sending, the
// follower lost the relayed 503 mid-way and wrote a 500 after it: two
// Statuses in one answer (CI: "answer is not a Status").
func TestSnapshot_restore_through_a_follower_while_the_leadership_moves(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{Prefix: "handover"})
	cl := c.Client(c.Followers()[0])
	file, _ := saveSnapshot(t, cl)
	h, top, state := snapshotState(t, file)
	big, _ := withBulkNamespaces(t, h, top, state, 2<<20)
	answers := map[int]int{}
	for round := range 12 {
		leader := c.WaitLeader()
		follower := c.Followers()[round%2]
		moved := make(chan error, 1)
		go func() { moved <- leader.Peer.Store().HandOver(context.Background()) }()
		rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := c.Client(follower).RestoreSnapshot(rctx, bytes.NewReader(big))
		cancel()
		<-moved
		code := http.StatusOK
		if err != nil {
			if code = api.CodeOf(err); code != http.StatusServiceUnavailable {
				t.Fatalf("round %d, through %s as %s hands over: %v", round, follower.Name, leader.Name, err)
			}
		}
		answers[code]++
	}
	t.Logf("answers: %v", answers)
}
