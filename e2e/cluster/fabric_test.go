package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/gossip"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/fake"
	"github.com/svc-project/svc/node/fabric"
	"github.com/svc-project/svc/peer"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/testcluster"
)

// identityOf reads member m's identity from its data dir, as an attacker
// with a copy of that data dir (or root on that host) would.
func identityOf(t *testing.T, m *testcluster.Member) *fabric.Identity {
	t.Helper()
	id, err := fabric.LoadIdentity(filepath.Join(m.DataDir, "fabric"))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// tlsStream is a raft.StreamLayer that dials with a TLS configuration of
// the attacker's choosing (and listens nowhere that matters).
type tlsStream struct {
	net.Listener
	cfg *tls.Config
}

func (s tlsStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(addr), s.cfg)
}

// attackerTransport is hashicorp/raft's own transport, dialling in the
// clear (cfg nil) or with TLS.
func attackerTransport(t *testing.T, cfg *tls.Config) raft.Transport {
	t.Helper()
	if cfg == nil {
		tr, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 5*time.Second, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tr.Close() })
		return tr
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := raft.NewNetworkTransport(tlsStream{Listener: l, cfg: cfg}, 1, 5*time.Second, io.Discard)
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// TestFabric_raw_raft_rpcs_change_nothing sends AppendEntries (an admin
// user of the attacker's) and InstallSnapshot (a state of the attacker's)
// straight to every peer's Raft port at a higher term: in the clear, with
// another cluster's certificate, and with a certificate made with this
// cluster's own CA key (what a removed peer's data dir yields) for a peer
// the cluster never admitted. Every call fails and nothing changes.
func TestFabric_raw_raft_rpcs_change_nothing(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	leader := c.WaitLeader()
	fb, _ := leader.Peer.FSM().Fabric()
	id := identityOf(t, leader)
	caKeyDER, err := fabric.Unwrap(id.Secret(), fabric.PurposeCAKey, fb.CAKey, []byte(id.ClusterID))
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := fabric.ParseKeyDER(caKeyDER)
	if err != nil {
		t.Fatal(err)
	}
	ghostKey, _ := fabric.NewKey()
	ghostDER, err := fabric.Issue(id.CA, caKey, "ghost", []net.IP{net.IPv4(127, 0, 0, 1)}, ghostKey.Public(), time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ghost, err := fabric.NewIdentity(t.TempDir(), id.ClusterID, "ghost", id.CA.Raw, ghostKey, ghostDER, id.Secret())
	if err != nil {
		t.Fatal(err)
	}
	foreignCA, foreignKey, _ := fabric.NewCA("other", time.Now())
	fca, _ := x509.ParseCertificate(foreignCA)
	fKey, _ := fabric.NewKey()
	fDER, _ := fabric.Issue(fca, foreignKey, leader.Name, []net.IP{net.IPv4(127, 0, 0, 1)}, fKey.Public(), time.Now(), time.Hour)
	foreign, err := fabric.NewIdentity(t.TempDir(), "other", leader.Name, foreignCA, fKey, fDER, id.Secret())
	if err != nil {
		t.Fatal(err)
	}
	everyone, _ := fabric.OpenTrust(filepath.Join(t.TempDir(), "t.json"))
	if _, err := everyone.Update(fabric.TrustSet{Index: 1, Members: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	clientOf := func(who *fabric.Identity) *tls.Config {
		cfg := who.PeerClientConfig(everyone)
		cfg.VerifyConnection = nil // the attacker trusts any server
		return cfg
	}
	mallory, err := raftfsm.Encode(raftfsm.TypeUserUpsert, raftfsm.UserUpsert{Name: "mallory", Admin: true, Time: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	forged := raftfsm.NewFSM(nil)
	forged.ApplyCommand(1, raftfsm.Command{Type: raftfsm.TypeUserUpsert, Body: mallory[1:]})
	snap, _ := forged.Dump()
	before := leader.Peer.FSM().Index()
	for _, attacker := range []struct {
		name string
		cfg  *tls.Config
	}{
		{"in the clear", nil},
		{"another cluster's certificate", clientOf(foreign)},
		{"the cluster's CA, a peer never admitted", clientOf(ghost)},
	} {
		t.Run(attacker.name, func(t *testing.T) {
			tr := attackerTransport(t, attacker.cfg)
			for _, m := range c.Members {
				target := raft.ServerAddress(m.Peer.RaftAddr())
				var ae raft.AppendEntriesResponse
				err := tr.AppendEntries(raft.ServerID(m.Name), target, &raft.AppendEntriesRequest{
					RPCHeader: raft.RPCHeader{ID: []byte("ghost"), Addr: []byte("127.0.0.1:1")}, Term: 1 << 20, PrevLogEntry: 0, PrevLogTerm: 0,
					Entries: []*raft.Log{{Index: before + 1, Term: 1 << 20, Type: raft.LogCommand, Data: mallory}}, LeaderCommitIndex: before + 1,
				}, &ae)
				if err == nil {
					t.Fatalf("%s took AppendEntries: %+v", m.Name, ae)
				}
				var is raft.InstallSnapshotResponse
				err = tr.InstallSnapshot(raft.ServerID(m.Name), target, &raft.InstallSnapshotRequest{
					RPCHeader: raft.RPCHeader{ID: []byte("ghost"), Addr: []byte("127.0.0.1:1")}, SnapshotVersion: raft.SnapshotVersionMax,
					Term: 1 << 20, LastLogIndex: 1 << 20, LastLogTerm: 1 << 20, Size: int64(len(snap)),
				}, &is, strings.NewReader(string(snap)))
				if err == nil && is.Success {
					t.Fatalf("%s took InstallSnapshot", m.Name)
				}
			}
		})
	}
	if _, err := c.Client(leader).TagNode(context.Background(), api.DefaultNamespace, leader.Name, "after"); err != nil {
		t.Fatal(err)
	}
	after := c.Leader()
	if after == nil || after.Name != leader.Name {
		t.Fatalf("leadership moved: %v", after)
	}
	for _, m := range c.Members {
		c.WaitFor(m.Name+" has the real write", 10*time.Second, func() error {
			if n, _ := m.Peer.FSM().Node(leader.Name); !n.HasTag("after") {
				return errors.New("not yet")
			}
			return nil
		})
		if _, ok := m.Peer.FSM().User("mallory"); ok {
			t.Fatalf("%s knows mallory", m.Name)
		}
	}
}

// TestFabric_gossip_without_the_key_is_dropped: a memberlist that does not
// hold the cluster's key never enters the pool, nor does one with the key
// under another cluster's label.
func TestFabric_gossip_without_the_key_is_dropped(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{})
	m := c.Members[0]
	fb, _ := m.Peer.FSM().Fabric()
	_ = fb
	for _, tc := range []struct {
		name  string
		label string
	}{{"no key, the cluster's label", "svc/" + identityOf(t, m).ClusterID}, {"no key, no label", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			mc := memberlist.DefaultLocalConfig()
			mc.Name, mc.BindAddr, mc.BindPort, mc.Label = "intruder", "127.0.0.1", 0, tc.label
			mc.LogOutput = io.Discard
			ml, err := memberlist.Create(mc)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = ml.Shutdown() }()
			if n, err := ml.Join([]string{m.Peer.GossipAddr()}); err == nil || n > 0 {
				t.Fatalf("joined %d peers", n)
			}
			if _, ok := m.Peer.Gossip().Member("intruder"); ok {
				t.Fatal("the pool lists the intruder")
			}
		})
	}
}

// TestFabric_a_dead_peers_name_is_not_taken: a host that takes the name
// of a crashed peer gets no seat and no VM: without a token it does not
// start; with a token it is refused the name.
func TestFabric_a_dead_peers_name_is_not_taken(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	dead := c.Members[2]
	deadRaft := dead.Peer.RaftAddr()
	c.Crash(dead)
	leader := c.WaitLeader()
	for _, tc := range []struct {
		name, token, want string
	}{
		{"no token", "", "not a peer of any cluster"},
		{"a valid token", c.JoinToken(), `a peer named "` + dead.Name + `" is a member`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := peer.Start(peer.Config{
				Name: dead.Name, DataDir: t.TempDir(), Bind: "127.0.0.1", Join: []string{leader.Peer.GossipAddr()}, JoinToken: tc.token,
				Capacity: raftfsm.Capacity{CPU: 4, MemoryBytes: 8 << 30}, Local: true, RaftTiming: testcluster.Timing(), JoinTimeout: 5 * time.Second,
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start = %v, want %q", err, tc.want)
			}
		})
	}
	servers, err := leader.Peer.Store().Servers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		if s.ID == dead.Name && s.Address != deadRaft {
			t.Fatalf("%s's seat moved to %s", dead.Name, s.Address)
		}
	}
	_, err = c.Client(leader).DeployVM(context.Background(), api.DefaultNamespace, api.DeployRequest{Image: "none", Node: dead.Name})
	if err == nil {
		t.Fatal("a deploy pinned to the dead peer was placed")
	}
}

// TestFabric_remove_a_peer: a removed peer loses its seat, its node, its
// blob holdings and the gossip key; restarted with its old data dir it is
// refused and says why; its name is free for a new host with a token.
func TestFabric_remove_a_peer(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	leader := c.WaitLeader()
	gone := c.Followers()[0]
	_, epochBefore, _ := leader.Peer.FSM().FabricVersion()
	c.Crash(gone)
	cl := c.Client(leader)
	if err := cl.RemoveNode(context.Background(), api.DefaultNamespace, gone.Name); err != nil {
		t.Fatal(err)
	}
	if err := cl.RemoveNode(context.Background(), api.DefaultNamespace, gone.Name); api.CodeOf(err) != http.StatusNotFound {
		t.Fatalf("removed twice: %v", err)
	}
	c.WaitFor("the removed peer's seat and node gone, the gossip key rotated", 30*time.Second, func() error {
		servers, err := leader.Peer.Store().Servers(context.Background())
		if err != nil {
			return err
		}
		for _, s := range servers {
			if s.ID == gone.Name {
				return fmt.Errorf("%s still has a seat", gone.Name)
			}
		}
		if _, ok := leader.Peer.FSM().Node(gone.Name); ok {
			return errors.New("node record stays")
		}
		if _, epoch, _ := leader.Peer.FSM().FabricVersion(); epoch < epochBefore+3 {
			return fmt.Errorf("gossip keyring epoch %d", epoch)
		}
		return nil
	})
	_, err := peer.Start(gone.Config())
	if err == nil || !strings.Contains(err.Error(), "was removed from the cluster") {
		t.Fatalf("the removed peer restarted: %v", err)
	}
	// A new host may take the name, with a token (gossip knows the old
	// one dead: its address is taken back after memberlist's reclaim time).
	c.WaitFor("gossip to see the old "+gone.Name+" dead", 30*time.Second, func() error {
		if m, ok := leader.Peer.Gossip().Member(gone.Name); ok && m.State != gossip.StateDead {
			return fmt.Errorf("%s is %s", gone.Name, m.State)
		}
		return nil
	})
	p, err := peer.Start(peer.Config{
		Name: gone.Name, DataDir: t.TempDir(), Bind: "127.0.0.1", Join: []string{leader.Peer.GossipAddr()}, JoinToken: c.JoinToken(),
		Capacity: raftfsm.Capacity{CPU: 4, MemoryBytes: 8 << 30}, Local: true, RaftTiming: testcluster.Timing(), JoinTimeout: 10 * time.Second,
		Driver: fake.New(hypervisor.DomainPrefix(gone.Name + "-new")),
	})
	if err != nil {
		t.Fatalf("a new host under the freed name: %v", err)
	}
	defer p.Close()
	c.WaitFor("the new "+gone.Name+" READY", 30*time.Second, func() error {
		n, ok := leader.Peer.FSM().Node(gone.Name)
		if !ok || n.Phase != api.PhaseReady || n.RaftAddr != p.RaftAddr() {
			return fmt.Errorf("node %+v", n)
		}
		return nil
	})
}

// TestFabric_gossip_key_rotation_loses_nothing rotates the gossip key while
// clients write through every peer: every acknowledged write is on every
// replica, every node stays READY, and a pool member with the old key
// cannot join.
func TestFabric_gossip_key_rotation_loses_nothing(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	leader := c.WaitLeader()
	oldKeys := leader.Peer.Gossip().Keys()
	var acked sync.Map
	var n atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, m := range c.Members {
		wg.Go(func() {
			cl := c.Client(m)
			for ctx.Err() == nil {
				tag := fmt.Sprintf("w%d", n.Add(1))
				wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
				if _, err := cl.TagNode(wctx, api.DefaultNamespace, m.Name, tag); err == nil {
					acked.Store(tag, m.Name)
				}
				wcancel()
			}
		})
	}
	// The rotation goes as a client following API.md sends it (sendWrite):
	// a rotation answered 503 is run again whole.
	var msg api.Message
	if err := sendWrite(t, c, 0, func() error {
		var err error
		msg, err = c.Client(leader).RotateGossipKey(context.Background())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(500*time.Millisecond, cancel) // writes go on after the rotation too
	wg.Wait()
	t.Logf("%s; %d writes acknowledged", msg.Message, func() (k int) { acked.Range(func(any, any) bool { k++; return true }); return }())
	for _, m := range c.Members {
		c.WaitFor(m.Name+" has every acknowledged write", 15*time.Second, func() error {
			var missing error
			acked.Range(func(k, v any) bool {
				if nd, _ := m.Peer.FSM().Node(v.(string)); !nd.HasTag(k.(string)) {
					missing = fmt.Errorf("%s lacks %s", m.Name, k)
					return false
				}
				return true
			})
			return missing
		})
		keys := m.Peer.Gossip().Keys()
		if len(keys.Keys) != 1 || string(keys.Keys[0]) == string(oldKeys.Keys[oldKeys.Primary]) {
			t.Fatalf("%s's keyring after the rotation: %d keys", m.Name, len(keys.Keys))
		}
	}
	c.WaitFor("every node READY", 10*time.Second, func() error {
		for _, nd := range leader.Peer.FSM().Nodes() {
			if nd.Phase != api.PhaseReady {
				return fmt.Errorf("%s %s", nd.Name, nd.Phase)
			}
		}
		return nil
	})
	mc := memberlist.DefaultLocalConfig()
	mc.Name, mc.BindAddr, mc.BindPort, mc.LogOutput = "stale", "127.0.0.1", 0, io.Discard
	mc.Label = "svc/" + identityOf(t, leader).ClusterID
	kr, _ := memberlist.NewKeyring(oldKeys.Keys, oldKeys.Keys[oldKeys.Primary])
	mc.Keyring = kr
	ml, err := memberlist.Create(mc)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ml.Shutdown() }()
	if n, err := ml.Join([]string{leader.Peer.GossipAddr()}); err == nil || n > 0 {
		t.Fatal("a member with the old key joined")
	}
}

// TestFabric_secrets_stay_out_of_the_state: the state every peer holds
// (and snapshots, and backups of raft.db) keeps the signing key, the CA's
// key and the gossip key only wrapped, the cluster secret not at all, and
// join tokens only as hashes; the API never answers a token's secret but
// at its creation.
func TestFabric_secrets_stay_out_of_the_state(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{})
	leader := c.WaitLeader()
	id := identityOf(t, leader)
	fb, _ := leader.Peer.FSM().Fabric()
	aad := []byte(id.ClusterID)
	seed, err := fabric.Unwrap(id.Secret(), fabric.PurposeSigningKey, fb.SigningKey, aad)
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := fabric.Unwrap(id.Secret(), fabric.PurposeCAKey, fb.CAKey, aad)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := c.Client(leader).CreateJoinToken(context.Background(), api.JoinTokenRequest{})
	if err != nil || tok.Token == "" {
		t.Fatalf("create: %+v %v", tok, err)
	}
	jt, _ := fabric.ParseJoinToken(tok.Token)
	secrets := map[string][]byte{"signing key": seed, "CA key": caKey, "cluster secret": id.Secret(), "join token secret": []byte(jt.Secret)}
	for _, k := range leader.Peer.Gossip().Keys().Keys {
		secrets["gossip key"] = k
	}
	for _, m := range c.Members {
		dump, err := m.Peer.FSM().Dump()
		if err != nil {
			t.Fatal(err)
		}
		for what, s := range secrets {
			if strings.Contains(string(dump), base64.StdEncoding.EncodeToString(s)) || strings.Contains(string(dump), string(s)) {
				t.Fatalf("%s's state holds the %s", m.Name, what)
			}
		}
	}
	list, err := c.Client(leader).ListJoinTokens(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range list {
		found = found || l.ID == jt.ID
		if l.Token != "" {
			t.Fatalf("the list shows a token: %+v", l)
		}
	}
	if !found {
		t.Fatalf("token %s not listed: %+v", jt.ID, list)
	}
}

// TestFabric_a_peer_back_learns_who_joined_meanwhile: a peer that was down
// while another joined, and comes back when the newcomer leads, learns of
// it from the peers it knows (its replica cannot tell it: it refuses the
// newcomer's connections until then) and catches up.
func TestFabric_a_peer_back_learns_who_joined_meanwhile(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	away := c.Members[2]
	c.Crash(away)
	newcomer := c.Add()
	ctx := context.Background()
	c.WaitFor("the newcomer a voter, and leading", 30*time.Second, func() error {
		l := c.Leader()
		if l == nil {
			return errors.New("no leader")
		}
		if l == newcomer {
			return nil
		}
		if err := l.Peer.Store().AddVoter(ctx, newcomer.Name, newcomer.Peer.RaftAddr()); err != nil {
			return err
		}
		hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		return errors.Join(errors.New("not yet"), l.Peer.Store().HandOverTo(hctx, newcomer.Name, newcomer.Peer.RaftAddr()))
	})
	c.Restart(away)
	c.WaitCaughtUp(away)
	if err := away.Peer.Membership().Trust().Check(newcomer.Name, identityOf(t, newcomer).KeyID()); err != nil {
		t.Fatalf("the peer that was away does not know the newcomer: %v", err)
	}
	if _, err := c.Client(away).TagNode(ctx, api.DefaultNamespace, away.Name, "back"); err != nil {
		t.Fatalf("a write through the peer that was away: %v", err)
	}
}
