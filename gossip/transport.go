package gossip

import (
	"bufio"
	"net"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/svc-project/svc/internal/netgate"
)

// tlsHandshake is the first byte of a TLS connection (a handshake record);
// no memberlist stream starts with it (svc's start with a label header).
const tlsHandshake = 0x16

// peekTimeout bounds the wait for a stream's first byte.
const peekTimeout = 5 * time.Second

// transport wraps memberlist's TCP and UDP transport: it drops traffic to
// and from addresses the Gate refuses (tests), and hands incoming streams
// that open a TLS handshake to Divert (the join service) instead of
// memberlist. It exposes only the plain Transport methods, so memberlist
// cannot reach the inner transport around it.
type transport struct {
	inner   *memberlist.NetTransport
	gate    netgate.Gate
	divert  func(net.Conn)
	packets chan *memberlist.Packet
	streams chan net.Conn
	done    chan struct{}
}

func newTransport(inner *memberlist.NetTransport, gate netgate.Gate, divert func(net.Conn)) *transport {
	t := &transport{inner: inner, gate: gate, divert: divert, packets: make(chan *memberlist.Packet), streams: make(chan net.Conn), done: make(chan struct{})}
	go t.filterPackets()
	go t.sortStreams()
	return t
}

func (t *transport) allowed(addr string) bool { return t.gate == nil || t.gate.Allowed(addr) }

func (t *transport) filterPackets() {
	for {
		select {
		case p := <-t.inner.PacketCh():
			if !t.allowed(p.From.String()) {
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

func (t *transport) sortStreams() {
	for {
		select {
		case c := <-t.inner.StreamCh():
			go t.sort(c)
		case <-t.done:
			return
		}
	}
}

// sort reads a stream's first byte and hands the stream, that byte still
// to be read, to the join service or to memberlist.
func (t *transport) sort(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(peekTimeout))
	br := bufio.NewReaderSize(c, 64)
	first, err := br.Peek(1)
	if err != nil {
		_ = c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	pc := &peekedConn{Conn: c, r: br}
	if first[0] == tlsHandshake {
		if t.divert == nil {
			_ = c.Close()
			return
		}
		t.divert(pc)
		return
	}
	select {
	case t.streams <- pc:
	case <-t.done:
		_ = c.Close()
	}
}

// peekedConn reads what its reader buffered before the rest of the conn.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

func (t *transport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	return t.inner.FinalAdvertiseAddr(ip, port)
}

func (t *transport) WriteTo(b []byte, addr string) (time.Time, error) {
	if !t.allowed(addr) {
		return time.Now(), nil // lost on the wire, as a cut network would
	}
	return t.inner.WriteTo(b, addr)
}

func (t *transport) PacketCh() <-chan *memberlist.Packet { return t.packets }

func (t *transport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	if err := netgate.Check(t.gate, addr); err != nil {
		return nil, err
	}
	return t.inner.DialTimeout(addr, timeout)
}

func (t *transport) StreamCh() <-chan net.Conn { return t.streams }

// Shutdown stops the inner transport first, while the filters still hand
// packets on (memberlist reads them until the transport is down), as
// memberlist itself does; a listener blocked handing over a packet would
// otherwise keep the inner shutdown waiting forever.
func (t *transport) Shutdown() error {
	err := t.inner.Shutdown()
	close(t.done)
	return err
}
