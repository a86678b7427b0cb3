package testcluster

import (
	"net"
	"strconv"

	"github.com/svc-project/svc/internal/netgate"
)

// gate refuses traffic to blocked addresses, and to any address off this
// machine's loopback (a test must never reach out, e.g. a fuzzed push to a
// registry named in a body).
type gate struct{ netgate.Blocklist }

func (g *gate) Allowed(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		return false
	}
	return g.Blocklist.Allowed(addr)
}

func (g *gate) set(addrs []string, blocked bool) {
	for _, a := range addrs {
		g.Set(a, blocked)
	}
}

// Partition cuts the given members off from all the others (both ways):
// Raft, gossip and forwarded API traffic.
func (c *Cluster) Partition(cut ...*Member) { c.cut(cut, (*Member).addrs) }

// PartitionRaft cuts only the Raft traffic between the given members and
// all the others (both ways): gossip and the API still pass, so a peer can
// learn who leads but not receive the log.
func (c *Cluster) PartitionRaft(cut ...*Member) {
	c.cut(cut, func(m *Member) []string { return []string{net.JoinHostPort(m.cfg.Bind, strconv.Itoa(m.cfg.RaftPort))} })
}

// cut blocks, between the members in cut and the others, the addresses
// addrs names.
func (c *Cluster) cut(cut []*Member, addrs func(*Member) []string) {
	in := map[*Member]bool{}
	for _, m := range cut {
		in[m] = true
	}
	for _, a := range c.Members {
		for _, b := range c.Members {
			if in[a] != in[b] {
				a.gate.set(addrs(b), true)
			}
		}
	}
}

// Heal removes every cut.
func (c *Cluster) Heal() {
	for _, m := range c.Members {
		m.gate.Clear()
	}
}

func (m *Member) addrs() []string {
	h := m.cfg.Bind
	return []string{
		net.JoinHostPort(h, strconv.Itoa(m.cfg.APIPort)),
		net.JoinHostPort(h, strconv.Itoa(m.cfg.TLSPort)),
		net.JoinHostPort(h, strconv.Itoa(m.cfg.RaftPort)),
		net.JoinHostPort(h, strconv.Itoa(m.cfg.GossipPort)),
	}
}
