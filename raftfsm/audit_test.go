package raftfsm

import (
	"strings"
	"testing"
	"time"
)

func TestAudit_append_bound_and_filter(t *testing.T) {
	entry := func(i int, subject, ns string) AuditEntry {
		return AuditEntry{Time: t0.Add(time.Duration(i) * time.Second), Peer: "p1", RemoteAddr: "127.0.0.1", Subject: subject, Namespace: ns, Method: "POST", Path: "/api/v1/x", Code: 200}
	}
	batch := func(from, n int, subject string) []byte {
		es := make([]AuditEntry, n)
		for i := range es {
			es[i] = entry(from+i, subject, "team-a")
		}
		return mustEncode(t, TypeAuditAppend, AuditAppend{Entries: es, Keep: MinAuditKeep})
	}
	for _, tc := range []struct {
		name    string
		setup   [][]byte
		cmd     []byte
		wantErr error
		check   func(*testing.T, *FSM)
	}{
		{name: "kept in order", cmd: batch(0, 3, "alice"), check: func(t *testing.T, f *FSM) {
			got := f.Audit(AuditFilter{})
			if len(got) != 3 || got[0].Seq != 1 || got[2].Seq != 3 {
				t.Fatalf("%+v", got)
			}
		}},
		{name: "the oldest go past the bound", setup: [][]byte{batch(0, 60, "alice")}, cmd: batch(60, 60, "bob"), check: func(t *testing.T, f *FSM) {
			got := f.Audit(AuditFilter{})
			if len(got) != MinAuditKeep || got[0].Seq != 21 || got[len(got)-1].Seq != 120 {
				t.Fatalf("%d entries, %d to %d", len(got), got[0].Seq, got[len(got)-1].Seq)
			}
		}},
		{name: "filters", setup: [][]byte{batch(0, 5, "alice")}, cmd: batch(5, 5, "bob"), check: func(t *testing.T, f *FSM) {
			if got := f.Audit(AuditFilter{Subject: "bob"}); len(got) != 5 {
				t.Fatalf("by subject: %d", len(got))
			}
			if got := f.Audit(AuditFilter{Since: t0.Add(8 * time.Second)}); len(got) != 2 {
				t.Fatalf("since: %d", len(got))
			}
			if got := f.Audit(AuditFilter{Namespace: "other"}); len(got) != 0 {
				t.Fatalf("namespace: %d", len(got))
			}
			if got := f.Audit(AuditFilter{Limit: 3}); len(got) != 3 || got[2].Subject != "bob" {
				t.Fatalf("limit keeps the newest: %+v", got)
			}
		}},
		{name: "long fields cut", cmd: mustEncode(t, TypeAuditAppend, AuditAppend{Entries: []AuditEntry{{Path: strings.Repeat("x", 5000)}}}), check: func(t *testing.T, f *FSM) {
			if got := f.Audit(AuditFilter{}); len(got[0].Path) != maxAuditField {
				t.Fatalf("path of %d bytes", len(got[0].Path))
			}
		}},
		{name: "too large a batch", cmd: batch(0, MaxAuditBatch+1, "alice"), wantErr: ErrInvalid},
		{
			name: "calls without a token never evict users' entries",
			// alice's 10, then 11 batches of anonymous refusals (11,000).
			setup: append([][]byte{batch(0, 10, "alice")}, func() (out [][]byte) {
				for i := range 11 {
					out = append(out, batch(10+i*MaxAuditBatch, MaxAuditBatch, ""))
				}
				return
			}()...),
			cmd: batch(20000, 1, "bob"),
			check: func(t *testing.T, f *FSM) {
				if got := f.Audit(AuditFilter{Subject: "alice"}); len(got) != 10 || got[0].Seq != 1 {
					t.Fatalf("alice's entries: %d", len(got))
				}
				all := f.Audit(AuditFilter{})
				if len(all) != 10+MinAuditKeep+1 || all[len(all)-1].Subject != "bob" {
					t.Fatalf("%d entries", len(all))
				}
				for i := 1; i < len(all); i++ {
					if all[i].Seq <= all[i-1].Seq {
						t.Fatalf("out of order at %d", i)
					}
				}
				if f.AuditAnonymousSeen() != 11*MaxAuditBatch {
					t.Fatalf("anonymous seen %d", f.AuditAnonymousSeen())
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runCommandCase(t, tc.setup, tc.cmd, tc.wantErr, tc.check) })
	}
}
