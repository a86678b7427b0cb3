package qga

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/svc-project/svc/hypervisor"
)

// CallTimeout bounds one command when the caller's context has no
// deadline (an agent that does not answer within it is taken for none).
const CallTimeout = 5 * time.Second

// maxAnswer bounds one answer of the agent (a guest-file-read of at most
// ReadChunk bytes, in base64, fits well).
const maxAnswer = 8 << 20

// ErrNoAnswer is an agent that did not answer: none runs at the other end
// of the port yet (a guest still booting), or it hung. It is a
// hypervisor.ErrNoAgent.
var ErrNoAnswer = fmt.Errorf("the guest agent does not answer: %w", hypervisor.ErrNoAgent)

// Conn is a stream to a guest agent's port. The port is a byte stream with
// no framing the agent does not put there: before its first command, and
// after any that failed, Conn makes the agent drop what it read
// part-way (a 0xFF byte) and asks it to echo a random number after a 0xFF
// of its own (guest-sync-delimited), then reads past anything before that:
// an answer to an earlier command the caller gave up on is never taken
// for the next one's. One command at a time.
type Conn struct {
	mu     sync.Mutex
	c      net.Conn
	r      *bufio.Reader
	synced bool
}

// NewConn wraps a connection to an agent's port.
func NewConn(c net.Conn) *Conn { return &Conn{c: c, r: bufio.NewReaderSize(c, 64<<10)} }

// Close closes the stream.
func (c *Conn) Close() error { return c.c.Close() }

// Call sends one command and decodes the "return" of its answer into out
// (nil: the answer is read and dropped). An agent error is returned with
// its class and description; no answer within ctx's deadline (CallTimeout
// without one) is ErrNoAnswer.
func (c *Conn) Call(ctx context.Context, cmd, out any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	deadline, ok := ctx.Deadline()
	if !ok || time.Until(deadline) > CallTimeout {
		deadline = time.Now().Add(CallTimeout)
	}
	_ = c.c.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = c.c.SetDeadline(time.Now()) })
	defer stop()
	err := c.call(cmd, out, deadline)
	if err != nil {
		c.synced = false
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() || broken(err) {
			return fmt.Errorf("%w: %w", ErrNoAnswer, err)
		}
	}
	return err
}

// SyncWait bounds the wait for the answer to a sync: an agent that runs
// answers it at once, and a port nobody reads (a guest without an agent,
// or not yet up) is known for one soon.
const SyncWait = time.Second

func (c *Conn) call(cmd, out any, deadline time.Time) error {
	if !c.synced {
		if wait := time.Now().Add(SyncWait); wait.Before(deadline) {
			_ = c.c.SetReadDeadline(wait)
		}
		if err := c.sync(); err != nil {
			return err
		}
		_ = c.c.SetReadDeadline(deadline)
		c.synced = true
	}
	req, err := json.Marshal(cmd)
	if err != nil {
		return fmt.Errorf("agent command: %w", err)
	}
	if _, err := c.c.Write(append(req, '\n')); err != nil {
		return err
	}
	return c.answer(out)
}

// sync makes the agent drop a command read part-way and answer from a
// known place (guest-sync-delimited), skipping whatever came before.
func (c *Conn) sync() error {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	id := int64(binary.BigEndian.Uint64(b[:]) >> 12) // within JSON's exact integers
	req, _ := json.Marshal(map[string]any{"execute": "guest-sync-delimited", "arguments": map[string]int64{"id": id}})
	if _, err := c.c.Write(append([]byte{0xFF}, append(req, '\n')...)); err != nil {
		return err
	}
	// Earlier syncs given up on may have left their own answers, each
	// after a 0xFF: read on to this one's.
	skipped := 0
	for range maxStaleSyncs {
		for {
			b, err := c.r.ReadByte()
			if err != nil {
				return err
			}
			if b == 0xFF {
				break
			}
			if skipped++; skipped > maxAnswer {
				return errors.New("the agent's port carries no answer to a sync")
			}
		}
		var got int64
		if err := c.answer(&got); err != nil {
			return fmt.Errorf("sync with the agent: %w", err)
		}
		if got == id {
			return nil
		}
	}
	return fmt.Errorf("sync with the agent: no answer to this sync among %d", maxStaleSyncs)
}

// maxStaleSyncs bounds the answers to earlier syncs a sync reads past.
const maxStaleSyncs = 16

// answer reads one answer and decodes its "return" into out.
func (c *Conn) answer(out any) error {
	var a struct {
		Return json.RawMessage `json:"return"`
		Error  *struct {
			Class string `json:"class"`
			Desc  string `json:"desc"`
		} `json:"error"`
	}
	line, err := c.line()
	if err != nil {
		return err
	}
	if err := json.Unmarshal(line, &a); err != nil {
		return fmt.Errorf("the agent's answer %.200q: %w", line, err)
	}
	if a.Error != nil {
		return &Error{Class: printable(a.Error.Class, 64), Desc: printable(a.Error.Desc, 512)}
	}
	if out == nil || len(a.Return) == 0 {
		return nil
	}
	if err := json.Unmarshal(a.Return, out); err != nil {
		return fmt.Errorf("the agent's answer %.200q: %w", a.Return, err)
	}
	return nil
}

// line reads the next line that is not empty (the agent ends each answer
// with a newline), at most maxAnswer bytes.
func (c *Conn) line() ([]byte, error) {
	var line []byte
	for {
		part, err := c.r.ReadSlice('\n')
		line = append(line, part...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if len(line) > maxAnswer {
				return nil, fmt.Errorf("an answer of the agent over %d bytes", maxAnswer)
			}
			continue
		case err != nil:
			return nil, err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			return line, nil
		}
		line = line[:0]
	}
}

// broken reports whether err is a stream with nobody at its other end.
func broken(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// Error is an error the agent answered.
type Error struct{ Class, Desc string }

func (e *Error) Error() string { return "guest agent: " + e.Class + ": " + e.Desc }

// Redial is a command sender that dials the agent's port for its first
// command and again after any command the stream failed: a stream a
// command failed on is in no known state (a command half written, an
// answer half read), so it is closed rather than used again. An agent's
// own error leaves the stream as it is.
type Redial struct {
	Dial func(ctx context.Context) (net.Conn, error)

	mu   sync.Mutex
	conn *Conn
}

// Call sends one command as Conn.Call does, on a stream of its own when
// the last one failed; a port that cannot be dialled is ErrNoAnswer.
func (r *Redial) Call(ctx context.Context, cmd, out any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn == nil {
		c, err := r.Dial(ctx)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrNoAnswer, err)
		}
		r.conn = NewConn(c)
	}
	err := r.conn.Call(ctx, cmd, out)
	var ae *Error
	if err != nil && !errors.As(err, &ae) {
		_ = r.conn.Close()
		r.conn = nil
	}
	return err
}

// Close closes the stream, if one is open.
func (r *Redial) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn == nil {
		return nil
	}
	err := r.conn.Close()
	r.conn = nil
	return err
}
