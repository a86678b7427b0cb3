package gossip

import (
	"net"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/svc-project/svc/internal/netgate"
)

// gatedTransport wraps a memberlist transport and drops traffic to and from
// addresses the Gate refuses. It deliberately exposes only the plain
// Transport methods, so memberlist cannot reach the inner transport around it.
type gatedTransport struct {
	inner   *memberlist.NetTransport
	gate    netgate.Gate
	packets chan *memberlist.Packet
	done    chan struct{}
}

func newGatedTransport(inner *memberlist.NetTransport, gate netgate.Gate) *gatedTransport {
	t := &gatedTransport{inner: inner, gate: gate, packets: make(chan *memberlist.Packet), done: make(chan struct{})}
	go t.filter()
	return t
}

func (t *gatedTransport) filter() {
	for {
		select {
		case p := <-t.inner.PacketCh():
			if !t.gate.Allowed(p.From.String()) {
				continue
			}
			select {
			case t.packets <- p:
			case <-t.done:
				return
			}
		case <-t.done:
			return
		}
	}
}

func (t *gatedTransport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	return t.inner.FinalAdvertiseAddr(ip, port)
}

func (t *gatedTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	if !t.gate.Allowed(addr) {
		return time.Now(), nil // lost on the wire, as a cut network would
	}
	return t.inner.WriteTo(b, addr)
}

func (t *gatedTransport) PacketCh() <-chan *memberlist.Packet { return t.packets }

func (t *gatedTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	if err := netgate.Check(t.gate, addr); err != nil {
		return nil, err
	}
	return t.inner.DialTimeout(addr, timeout)
}

func (t *gatedTransport) StreamCh() <-chan net.Conn { return t.inner.StreamCh() }

// Shutdown stops the inner transport first, while the filter still hands
// packets on (memberlist reads them until the transport is down), as
// memberlist itself does; a listener blocked handing over a packet would
// otherwise keep the inner shutdown waiting forever.
func (t *gatedTransport) Shutdown() error {
	err := t.inner.Shutdown()
	close(t.done)
	return err
}
