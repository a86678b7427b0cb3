package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/backup"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/peer"
	"github.com/svc-project/svc/raftstore"
	"github.com/svc-project/svc/testkit/testcluster"
)

// saveSnapshot takes a snapshot through m's API and checks it is whole.
func saveSnapshot(t *testing.T, cl *api.Client) ([]byte, backup.Header) {
	t.Helper()
	var buf bytes.Buffer
	if _, err := cl.SaveSnapshot(kit.Ctx(t), &buf); err != nil {
		t.Fatalf("save: %v", err)
	}
	rd, err := backup.NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("the saved snapshot: %v", err)
	}
	counts, err := backup.Counts(rd.Body())
	if err != nil {
		t.Fatal(err)
	}
	if err := rd.Verify(); err != nil {
		t.Fatalf("the saved snapshot: %v", err)
	}
	t.Logf("snapshot of %s at index %d: %d bytes, %v", rd.Header.ClusterID, rd.Header.Index, buf.Len(), counts)
	return buf.Bytes(), rd.Header
}

// vmDomain says whether m's hypervisor runs the VM ns/name.
func vmDomain(m *testcluster.Member, ns, name string) bool {
	doms, _ := m.Fake.List(context.Background())
	for _, d := range doms {
		if d.Name == hypervisor.DomainName(m.Name, ns, name) {
			return true
		}
	}
	return false
}

func TestSnapshot_restore_into_the_running_cluster(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{Prefix: "snap"})
	c.WaitLeader()
	follower := c.Followers()[0]
	cl := c.Client(follower)
	const team = "team-a"
	if _, err := cl.CreateNamespace(kit.Ctx(t), team); err != nil {
		t.Fatal(err)
	}
	hostName := c.Members[2].Name
	if _, err := cl.SetNodeNamespace(kit.Ctx(t), kit.NS, hostName, team); err != nil {
		t.Fatal(err)
	}
	img := kit.TinyImage(t)
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	if _, err := cl.UploadImage(kit.Ctx(t), team, "tiny", f, st.Size()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	vm, err := cl.DeployVM(kit.Ctx(t), team, api.DeployRequest{Image: "tiny", Name: "w1", CPU: kit.Intp(1)})
	if err != nil {
		t.Fatal(err)
	}
	var host *testcluster.Member
	for _, m := range c.Members {
		if m.Name == vm.Node {
			host = m
		}
	}
	// Writes go on while the snapshot is taken.
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; !stop.Load() && i < 200; i++ {
			_, _ = cl.TagNode(context.Background(), kit.NS, follower.Name, fmt.Sprintf("t%d", i%5))
		}
	})
	file, hdr := saveSnapshot(t, cl)
	stop.Store(true)
	wg.Wait()

	// After the snapshot: the team's VM and namespace go, another comes.
	if err := cl.DeleteVM(kit.Ctx(t), team, "w1"); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("w1's domain gone", 20*time.Second, func() error {
		if vmDomain(host, team, "w1") {
			return errors.New("still there")
		}
		return nil
	})
	if err := cl.DeleteImage(kit.Ctx(t), team, "tiny"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.SetNodeNamespace(kit.Ctx(t), team, hostName, kit.NS); err != nil {
		t.Fatal(err)
	}
	if err := cl.DeleteNamespace(kit.Ctx(t), team); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateNamespace(kit.Ctx(t), "later"); err != nil {
		t.Fatal(err)
	}

	// A file cut short, or altered, restores nothing.
	for name, bad := range map[string][]byte{
		"cut":     file[:len(file)-100],
		"altered": append(append(bytes.Clone(file[:len(file)/2]), file[len(file)/2]^1), file[len(file)/2+1:]...),
	} {
		_, err := cl.RestoreSnapshot(kit.Ctx(t), bytes.NewReader(bad))
		if se := statusErr(err); se == nil || se.Status.Code != http.StatusBadRequest {
			t.Fatalf("%s file: %v, want 400", name, err)
		}
	}
	if _, err := cl.GetNamespace(kit.Ctx(t), "later"); err != nil {
		t.Fatalf("a refused restore changed the state: %v", err)
	}
	// A snapshot of another cluster is refused (its keys are another's).
	rd, _ := backup.NewReader(bytes.NewReader(file))
	other := rd.Header
	other.ClusterID = "0000000000000000"
	var otherFile bytes.Buffer
	if err := backup.Write(&otherFile, other, rd.Body()); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.RestoreSnapshot(kit.Ctx(t), &otherFile); statusErr(err) == nil || statusErr(err).Status.Code != http.StatusConflict {
		t.Fatalf("another cluster's snapshot: %v, want 409", err)
	}

	got, err := cl.RestoreSnapshot(kit.Ctx(t), bytes.NewReader(file))
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if got.Index != hdr.Index || got.ClusterID != hdr.ClusterID {
		t.Fatalf("restored %+v, snapshot %+v", got, hdr)
	}
	for _, m := range c.Running() {
		c.WaitFor(m.Name+" holds the snapshot's state", 20*time.Second, func() error {
			if _, ok := m.Peer.FSM().Namespace(team); !ok {
				return fmt.Errorf("no namespace %s", team)
			}
			if _, ok := m.Peer.FSM().Namespace("later"); ok {
				return errors.New("namespace later, made after the snapshot, is still there")
			}
			if _, ok := m.Peer.FSM().VM(team, "w1"); !ok {
				return errors.New("no VM w1")
			}
			return nil
		})
	}
	c.WaitFor("w1 running again on "+host.Name, 30*time.Second, func() error {
		if !vmDomain(host, team, "w1") {
			return errors.New("no domain")
		}
		v, err := cl.GetVM(kit.Ctx(t), team, "w1")
		if err != nil {
			return err
		}
		if v.Status != api.StatusRunning {
			return fmt.Errorf("w1 is %s", v.Status)
		}
		return nil
	})
	// Every peer's state is one: the same records, and writes go on.
	if _, err := cl.TagNode(kit.Ctx(t), kit.NS, follower.Name, "after-restore"); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("one state on every peer", 20*time.Second, func() error {
		var first []byte
		for _, m := range c.Running() {
			b, err := m.Peer.FSM().Dump()
			if err != nil {
				return err
			}
			if first != nil && !bytes.Equal(stripVolatile(b), stripVolatile(first)) {
				return fmt.Errorf("%s differs", m.Name)
			}
			first = b
		}
		return nil
	})
	// The save was audited.
	// The audit log is the cluster's record of what was done, restores
	// too: it keeps the save and the restore.
	c.WaitFor("the save and the restore audited", 20*time.Second, func() error {
		entries, err := cl.ListAudit(kit.Ctx(t), api.AuditFilter{})
		if err != nil {
			return err
		}
		saw := map[string]bool{}
		for _, e := range entries {
			if e.Path == api.SnapshotPath && e.Code == http.StatusOK {
				saw[e.Method] = true
			}
		}
		if !saw[http.MethodGet] || !saw[http.MethodPost] {
			return fmt.Errorf("audited: %v", saw)
		}
		return nil
	})
}

// stripVolatile drops what peers report apart (the audit log's tail is
// the same, node reports may be a beat apart).
func stripVolatile(b []byte) []byte {
	if i := bytes.Index(b, []byte(`"nodes":`)); i >= 0 {
		if j := bytes.Index(b[i:], []byte(`"vms":`)); j >= 0 {
			return append(bytes.Clone(b[:i]), b[i+j:]...)
		}
	}
	return b
}

func TestSnapshot_new_cluster_after_every_host_was_lost(t *testing.T) {
	old := testcluster.New(t, 3, testcluster.Options{Prefix: "lost"})
	old.WaitLeader()
	cl := old.Client(old.Followers()[0])
	oldToken := cl.Token
	if _, err := cl.CreateNamespace(kit.Ctx(t), "team-b"); err != nil {
		t.Fatal(err)
	}
	// An image whose blobs only the lost hosts hold.
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	file, hdr := saveSnapshot(t, cl)
	path := filepath.Join(t.TempDir(), "cluster.snap")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	old.Close()
	for _, m := range old.Members {
		if err := os.RemoveAll(m.DataDir); err != nil {
			t.Fatal(err)
		}
	}

	fresh := testcluster.New(t, 1, testcluster.Options{Prefix: "phoenix", Configure: func(i int, cfg *peer.Config) {
		cfg.Restore = path
	}, ForeignNodes: true})
	first := fresh.Members[0]
	restored := api.NewClient("http://"+first.Peer.APIAddr(), oldToken)
	if _, err := restored.GetNamespace(kit.Ctx(t), "team-b"); err != nil {
		t.Fatalf("the old admin token on the restored cluster: %v", err)
	}
	info, err := restored.ClusterInfo(kit.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if info.ClusterID != hdr.ClusterID {
		t.Fatalf("cluster %s, snapshot of %s", info.ClusterID, hdr.ClusterID)
	}
	// The old peers are removed: their keys are refused.
	fb, _ := first.Peer.FSM().Fabric()
	if len(fb.Peers) != 1 || fb.Peers[first.Name] == nil || len(fb.Removed) < 3 {
		t.Fatalf("peers %v, removed %d", fb.Peers, len(fb.Removed))
	}
	// New hosts join with join tokens.
	fresh.Add()
	fresh.Add()
	for _, m := range fresh.Running() {
		fresh.WaitFor(m.Name+" has team-b", 20*time.Second, func() error {
			if _, ok := m.Peer.FSM().Namespace("team-b"); !ok {
				return errors.New("not yet")
			}
			return nil
		})
	}
	servers, err := first.Peer.Store().Servers(kit.Ctx(t))
	if err != nil || len(servers) != 3 {
		t.Fatalf("raft servers %v %v", servers, err)
	}
	// The image's record is there; its blobs are not: a deploy of it is
	// refused saying so (409), never a 5xx or a VM left waiting.
	if _, err := restored.GetImage(kit.Ctx(t), kit.NS, "tiny"); err != nil {
		t.Fatalf("the image's record: %v", err)
	}
	_, err = restored.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: "orphan", CPU: kit.Intp(1)})
	if se := statusErr(err); se == nil || se.Status.Code != http.StatusConflict || !strings.Contains(se.Status.Message, "no running peer holds its disk") {
		t.Fatalf("a deploy of an image no running host holds: %v", err)
	}
}

func TestRecover_after_the_majority_is_lost(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{Prefix: "rec"})
	c.WaitLeader()
	survivor := c.Followers()[0]
	cl := c.Client(survivor)

	// A peer of a cluster with a leader may not recover.
	c.Stop(survivor)
	err := c.RestartWith(survivor, func(cfg *peer.Config) { cfg.Recover, cfg.RecoverProbe = true, 3*time.Second })
	if !errors.Is(err, raftstore.ErrLeaderAnswers) {
		t.Fatalf("recover beside a leader: %v, want ErrLeaderAnswers", err)
	}
	c.Restart(survivor)
	c.WaitCaughtUp(survivor)

	// Acknowledged writes, then two peers lost for good.
	var acked []string
	for i := range 20 {
		name := fmt.Sprintf("ns-%d", i)
		if _, err := cl.CreateNamespace(kit.Ctx(t), name); err == nil {
			acked = append(acked, name)
		}
	}
	if len(acked) == 0 {
		t.Fatal("no write acknowledged")
	}
	c.WaitFor(survivor.Name+" applied every acknowledged write", 10*time.Second, func() error {
		for _, n := range acked {
			if _, ok := survivor.Peer.FSM().Namespace(n); !ok {
				return fmt.Errorf("no %s", n)
			}
		}
		return nil
	})
	for _, m := range c.Members {
		if m != survivor {
			c.Crash(m)
		}
	}
	c.Stop(survivor)
	if err := c.RestartWith(survivor, func(cfg *peer.Config) { cfg.Recover, cfg.RecoverProbe = true, 2*time.Second }); err != nil {
		t.Fatalf("recover: %v", err)
	}
	rec := survivor.Peer.Store().Recovered
	if rec == nil || rec.LastIndex == 0 || len(rec.Dropped) != 2 {
		t.Fatalf("recovery report %+v", rec)
	}
	c.WaitFor(survivor.Name+" leads alone", 20*time.Second, func() error {
		if !survivor.Peer.IsLeader() {
			return errors.New("not leader")
		}
		return nil
	})
	cl = c.Client(survivor)
	for _, n := range acked {
		if _, err := cl.GetNamespace(kit.Ctx(t), n); err != nil {
			t.Fatalf("acknowledged write %s lost: %v", n, err)
		}
	}
	if _, err := cl.CreateNamespace(kit.Ctx(t), "after-recovery"); err != nil {
		t.Fatal(err)
	}
	// The cluster grows back to three with join tokens.
	c.Add()
	c.Add()
	servers, err := survivor.Peer.Store().Servers(kit.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var voters []string
	for _, s := range servers {
		if s.Voter {
			voters = append(voters, s.ID)
		}
	}
	if len(voters) != 3 {
		t.Fatalf("voters %s", strings.Join(voters, ","))
	}
}
