package raftfsm

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
)

const (
	tokID   = "0123456789abcdef"
	tokHash = "1111111111111111111111111111111111111111111111111111111111111111"
)

func tokenCmd(t testing.TB, uses int, expires time.Time) []byte {
	return mustEncode(t, TypeJoinTokenCreate, JoinTokenCreate{ID: tokID, SecretHash: tokHash, ExpiresAt: expires, Uses: uses, CreatedBy: "admin", Time: t0})
}

func admitCmd(t testing.TB, name, keyID string, at time.Time) []byte {
	return mustEncode(t, TypePeerAdmit, PeerAdmit{Name: name, KeyID: keyID, Addr: "10.0.0.2", RaftAddr: "10.0.0.2:7000", TokenID: tokID, SecretHash: tokHash, Time: at})
}

func keyOf(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

func TestFabric_commands(t *testing.T) {
	day := t0.Add(24 * time.Hour)
	withToken := [][]byte{initCmd(t), tokenCmd(t, 2, day)}
	admitted := append(withToken[:len(withToken):len(withToken)], admitCmd(t, "n1", keyOf('a'), t0.Add(time.Minute)))
	peer := func(t *testing.T, f *FSM, name string) PeerIdentity {
		t.Helper()
		p, ok := f.PeerIdentity(name)
		if !ok {
			t.Fatalf("%s is not admitted", name)
		}
		return p
	}
	cases := []struct {
		name    string
		setup   [][]byte
		cmd     []byte
		wantErr error
		check   func(t *testing.T, f *FSM)
	}{
		{
			name: "init admits the peer that formed the cluster",
			cmd:  initCmd(t),
			check: func(t *testing.T, f *FSM) {
				if p := peer(t, f, "first"); p.AdmittedAt != t0 || p.Token != "" {
					t.Fatalf("first = %+v", p)
				}
				if f.TrustIndex() != 1 || string(f.WrappedSigningKey()) != "wrapped signing key" {
					t.Fatalf("trust index %d", f.TrustIndex())
				}
			},
		},
		{
			name: "token create keeps only the hash", setup: [][]byte{initCmd(t)}, cmd: tokenCmd(t, 2, day),
			check: func(t *testing.T, f *FSM) {
				toks := f.JoinTokens()
				if len(toks) != 1 || toks[0].SecretHash != tokHash || toks[0].Uses != 2 || toks[0].CreatedBy != "admin" {
					t.Fatalf("tokens %+v", toks)
				}
			},
		},
		{name: "token before init", cmd: tokenCmd(t, 1, day), wantErr: ErrConflict},
		{name: "token with a bad id", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeJoinTokenCreate, JoinTokenCreate{ID: "XYZ", SecretHash: tokHash, ExpiresAt: day, Uses: 1, Time: t0}), wantErr: ErrInvalid},
		{name: "token with no use", setup: [][]byte{initCmd(t)}, cmd: tokenCmd(t, 0, day), wantErr: ErrInvalid},
		{name: "token expired when made", setup: [][]byte{initCmd(t)}, cmd: tokenCmd(t, 1, t0), wantErr: ErrInvalid},
		{name: "token id twice", setup: withToken, cmd: tokenCmd(t, 1, day), wantErr: ErrAlreadyExists},
		{
			name: "admit", setup: withToken, cmd: admitCmd(t, "n1", keyOf('a'), t0.Add(time.Minute)),
			check: func(t *testing.T, f *FSM) {
				if p := peer(t, f, "n1"); p.KeyID != keyOf('a') || p.RaftAddr != "10.0.0.2:7000" || p.Token != tokID || !p.Pending {
					t.Fatalf("n1 = %+v", p)
				}
				if f.TrustIndex() != 3 {
					t.Fatalf("trust index %d", f.TrustIndex())
				}
				if tk := f.JoinTokens()[0]; tk.Used != 1 || tk.UsedBy[0] != "n1" {
					t.Fatalf("token %+v", tk)
				}
			},
		},
		{
			name: "a token that does not approve admits pending; an admin approves", setup: admitted,
			cmd: mustEncode(t, TypePeerApprove, PeerApprove{Name: "n1", By: "admin", Time: t0.Add(time.Hour)}),
			check: func(t *testing.T, f *FSM) {
				if p := peer(t, f, "n1"); p.Pending || p.ApprovedBy != "admin" || p.ApprovedAt == nil || !p.ApprovedAt.Equal(t0.Add(time.Hour)) {
					t.Fatalf("n1 = %+v", p)
				}
			},
		},
		{name: "approve an unknown peer", setup: admitted, cmd: mustEncode(t, TypePeerApprove, PeerApprove{Name: "n9"}), wantErr: ErrNotFound},
		{
			name:  "a token that approves admits approved",
			setup: [][]byte{initCmd(t), mustEncode(t, TypeJoinTokenCreate, JoinTokenCreate{ID: tokID, SecretHash: tokHash, ExpiresAt: day, Uses: 1, Time: t0, AutoApprove: true})},
			cmd:   admitCmd(t, "n1", keyOf('a'), t0),
			check: func(t *testing.T, f *FSM) {
				if p := peer(t, f, "n1"); p.Pending {
					t.Fatalf("n1 = %+v", p)
				}
			},
		},
		{name: "admit with a wrong secret", setup: withToken, cmd: mustEncode(t, TypePeerAdmit, PeerAdmit{Name: "n1", KeyID: keyOf('a'), Addr: "a", RaftAddr: "a:1", TokenID: tokID, SecretHash: strings.Repeat("2", 64), Time: t0}), wantErr: ErrInvalid},
		{name: "admit with an unknown token", setup: [][]byte{initCmd(t)}, cmd: admitCmd(t, "n1", keyOf('a'), t0), wantErr: ErrInvalid},
		{name: "admit after expiry", setup: withToken, cmd: admitCmd(t, "n1", keyOf('a'), day), wantErr: ErrInvalid},
		{name: "admit with a revoked token", setup: append(withToken[:2:2], mustEncode(t, TypeJoinTokenRevoke, JoinTokenRevoke{ID: tokID})), cmd: admitCmd(t, "n1", keyOf('a'), t0), wantErr: ErrInvalid},
		{name: "admit with a used-up token", setup: append(admitted[:3:3], admitCmd(t, "n2", keyOf('b'), t0)), cmd: admitCmd(t, "n3", keyOf('c'), t0), wantErr: ErrInvalid},
		{
			name: "the same admission again (its answer lost) uses the token once", setup: append(withToken[:2:2], mustEncode(t, TypeJoinTokenCreate, JoinTokenCreate{ID: "0123456789abcdef", SecretHash: tokHash, ExpiresAt: day, Uses: 1, Time: t0}), mustEncode(t, TypePeerAdmit, PeerAdmit{Name: "n1", KeyID: keyOf('a'), Addr: "10.0.0.2", RaftAddr: "10.0.0.2:7000", TokenID: "0123456789abcdef", SecretHash: tokHash, Time: t0})),
			cmd: mustEncode(t, TypePeerAdmit, PeerAdmit{Name: "n1", KeyID: keyOf('a'), Addr: "10.0.0.2", RaftAddr: "10.0.0.2:7000", TokenID: "0123456789abcdef", SecretHash: tokHash, Time: t0.Add(time.Second)}),
			check: func(t *testing.T, f *FSM) {
				if p := peer(t, f, "n1"); p.AdmittedAt != t0 {
					t.Fatalf("n1 = %+v", p)
				}
				for _, tk := range f.JoinTokens() {
					if tk.ID == "0123456789abcdef" && (tk.Used != 1 || len(tk.UsedBy) != 1) {
						t.Fatalf("token %+v", tk)
					}
				}
			},
		},
		{name: "the same admission with a wrong secret", setup: admitted, cmd: mustEncode(t, TypePeerAdmit, PeerAdmit{Name: "n1", KeyID: keyOf('a'), Addr: "10.0.0.2", RaftAddr: "10.0.0.2:7000", TokenID: tokID, SecretHash: strings.Repeat("2", 64), Time: t0}), wantErr: ErrInvalid},
		{name: "admit under a member's name", setup: admitted, cmd: admitCmd(t, "n1", keyOf('b'), t0), wantErr: ErrAlreadyExists},
		{name: "admit under the first peer's name", setup: withToken, cmd: admitCmd(t, "first", keyOf('b'), t0), wantErr: ErrAlreadyExists},
		{name: "admit a member's key", setup: admitted, cmd: admitCmd(t, "n2", keyOf('a'), t0), wantErr: ErrAlreadyExists},
		{name: "admit a bad name", setup: withToken, cmd: admitCmd(t, "N/1", keyOf('a'), t0), wantErr: ErrInvalid},
		{name: "revoke unknown", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeJoinTokenRevoke, JoinTokenRevoke{ID: tokID}), wantErr: ErrNotFound},
		{
			name: "remove", setup: append(admitted[:3:3], upsertCmd(t, "n1"), imageCmd(t, "mini", "n1")),
			cmd: mustEncode(t, TypeNodeRemove, NodeRemove{Name: "n1", By: "admin", Time: t0.Add(time.Hour)}),
			check: func(t *testing.T, f *FSM) {
				if _, ok := f.PeerIdentity("n1"); ok {
					t.Fatal("n1 still admitted")
				}
				if _, ok := f.Node("n1"); ok {
					t.Fatal("n1's node record stayed")
				}
				if b, _ := f.Blob("sha256:aa"); len(b.Holders) != 0 {
					t.Fatalf("holders %v", b.Holders)
				}
				fb, _ := f.Fabric()
				if r := fb.Removed[keyOf('a')]; r == nil || r.Name != "n1" || r.By != "admin" {
					t.Fatalf("removed %+v", fb.Removed)
				}
				if f.TrustIndex() != 6 {
					t.Fatalf("trust index %d", f.TrustIndex())
				}
			},
		},
		{
			name: "remove refused while VMs run there", setup: append(admitted[:3:3], upsertCmd(t, "n1"), imageCmd(t, "mini", "n1"), vmCreateCmd(t, "a", "n1", 1, 1<<30, 20000)),
			cmd: mustEncode(t, TypeNodeRemove, NodeRemove{Name: "n1"}), wantErr: ErrConflict,
		},
		{name: "remove unknown", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeNodeRemove, NodeRemove{Name: "n9"}), wantErr: ErrNotFound},
		{
			name: "a removed key is not admitted again", setup: append(admitted[:3:3], mustEncode(t, TypeNodeRemove, NodeRemove{Name: "n1"})),
			cmd: admitCmd(t, "n1", keyOf('a'), t0), wantErr: ErrInvalid,
		},
		{
			name: "the name of a removed peer is free with a new key", setup: append(admitted[:3:3], mustEncode(t, TypeNodeRemove, NodeRemove{Name: "n1"})),
			cmd: admitCmd(t, "n1", keyOf('b'), t0),
		},
		{
			name: "peer addr", setup: admitted, cmd: mustEncode(t, TypePeerAddr, PeerAddr{Name: "n1", Addr: "10.0.0.9", RaftAddr: "10.0.0.9:7000"}),
			check: func(t *testing.T, f *FSM) {
				if p := peer(t, f, "n1"); p.RaftAddr != "10.0.0.9:7000" {
					t.Fatalf("n1 = %+v", p)
				}
			},
		},
		{name: "peer addr of a stranger", setup: admitted, cmd: mustEncode(t, TypePeerAddr, PeerAddr{Name: "n9", Addr: "a", RaftAddr: "a:1"}), wantErr: ErrNotFound},
		{
			name: "gossip keys", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeGossipKeysSet, GossipKeysSet{Keys: []byte("new")}),
			check: func(t *testing.T, f *FSM) {
				if fb, _ := f.Fabric(); string(fb.GossipKeys) != "new" || fb.GossipEpoch != 2 {
					t.Fatalf("fabric %+v", fb)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runCommandCase(t, c.setup, c.cmd, c.wantErr, c.check) })
	}
}

func TestFSM_CheckProposer(t *testing.T) {
	f := NewFSM(nil)
	applyAll(t, f, initCmd(t), upsertCmd(t, "n1"), upsertCmd(t, "n2"), imageCmd(t, "mini", "n1"), vmCreateCmd(t, "a", "n1", 1, 1<<30, 20000))
	now := time.Now()
	enc := func(body any) []byte {
		b, err := Encode(TypeInit, body)
		if err != nil {
			t.Fatal(err)
		}
		return b[1:]
	}
	entry := func(peer string, at time.Time) AuditAppend {
		return AuditAppend{Entries: []AuditEntry{{Peer: peer, Time: at}}}
	}
	cases := []struct {
		name string
		t    Type
		body any
		ok   bool
	}{
		{"own vm status", TypeVMStatus, VMStatus{Namespace: api.DefaultNamespace, Name: "a", Node: "n1"}, true},
		{"another node's vm status", TypeVMStatus, VMStatus{Namespace: api.DefaultNamespace, Name: "a", Node: "n2"}, false},
		{"own blob", TypeBlobAddHolder, BlobAddHolder{Digest: "sha256:aa", Node: "n1"}, true},
		{"another's blob", TypeBlobDropHolder, BlobDropHolder{Digest: "sha256:aa", Node: "n2"}, false},
		{"image held elsewhere", TypeImageCreate, ImageCreate{Holder: "n2", Proof: ProofReceived}, false},
		{"own image without a proof", TypeImageCreate, ImageCreate{Holder: "n1"}, false},
		{"own image received", TypeImageCreate, ImageCreate{Holder: "n1", Proof: ProofReceived}, true},
		{"own image of content its namespace has", TypeImageCreate, ImageCreate{Holder: "n1", Proof: ProofNamespace}, true},
		{"action on own vm", TypeVMAction, VMAction{Namespace: api.DefaultNamespace, Name: "a", Action: "stop"}, true},
		{"own addresses", TypePeerAddr, PeerAddr{Name: "n1"}, true},
		{"another's addresses", TypePeerAddr, PeerAddr{Name: "n2"}, false},
		{"own audit entry", TypeAuditAppend, entry("n1", now), true},
		{"another peer's audit entry", TypeAuditAppend, entry("n2", now), false},
		{"backdated audit entry", TypeAuditAppend, entry("n1", now.Add(-time.Hour)), false},
		{"an admission", TypePeerAdmit, PeerAdmit{Name: "n3"}, true},
		{"a user", TypeUserUpsert, UserUpsert{Name: "mallory", Admin: true}, false},
		{"a removal", TypeNodeRemove, NodeRemove{Name: "n2"}, false},
		{"a deploy's vm that has not run", TypeVMDelete, VMDelete{Namespace: api.DefaultNamespace, Name: "a", UID: 1, Unrun: true}, true},
		{"a vm delete", TypeVMDelete, VMDelete{Namespace: api.DefaultNamespace, Name: "a", UID: 1}, false},
		{"an unrun delete without the vm's uid", TypeVMDelete, VMDelete{Namespace: api.DefaultNamespace, Name: "a", Unrun: true}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := f.CheckProposer("n1", c.t, enc(c.body), now)
			if c.ok != (err == nil) {
				t.Fatalf("CheckProposer = %v, want ok %v", err, c.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("error kind: %v", err)
			}
		})
	}
}
