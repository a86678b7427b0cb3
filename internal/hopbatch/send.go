package hopbatch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Sender sends requests to other peers, batched per address.
type Sender struct {
	// Transport carries the batches.
	Transport http.RoundTripper
	// URL is where the batch endpoint of the peer at addr is.
	URL func(addr string) string
	// Limits bound each batch.
	Limits Limits
	// MaxInFlight is how many batches to one address may be unanswered
	// at once before new requests wait to go in the next.
	MaxInFlight int
	// Hold bounds how long a batch counts as unanswered: after it, a batch
	// that still waits for a slow answer frees its place for the next
	// (0: until every answer came).
	Hold time.Duration
	// Sent, when set, hears how many requests each batch carries.
	Sent func(n int)

	mu     sync.Mutex
	queues map[string]*queue
}

type queue struct {
	waiting  []*item
	inFlight int
}

type item struct {
	ctx  context.Context
	wire []byte
	done chan result // buffered: the batch never blocks on a caller gone
}

type result struct {
	resp *http.Response
	err  error
}

// ErrNoAnswer is wrapped when a batch failed before the request's answer
// came: the request may or may not have run.
var ErrNoAnswer = errors.New("no answer from the peer")

// Do sends req (its body whole in memory, as GetBody gives it) to the peer
// at addr in the next batch there, and returns its answer, whose body is
// read already. ctx ending stops the wait (the request may still run).
func (s *Sender) Do(ctx context.Context, addr string, req *http.Request) (*http.Response, error) {
	var buf bytes.Buffer
	out := req.Clone(ctx)
	out.Header.Del("Expect")
	if _, ok := out.Header["User-Agent"]; !ok {
		out.Header.Set("User-Agent", "") // no default one added
	}
	if err := out.Write(&buf); err != nil {
		return nil, fmt.Errorf("encode the request for a batch: %w", err)
	}
	it := &item{ctx: ctx, wire: buf.Bytes(), done: make(chan result, 1)}
	s.enqueue(addr, it)
	select {
	case r := <-it.done:
		return r.resp, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Waiting returns how many requests wait for a batch to go in (their
// callers still waiting too).
func (s *Sender) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, q := range s.queues {
		for _, it := range q.waiting {
			if it.ctx.Err() == nil {
				n++
			}
		}
	}
	return n
}

func (s *Sender) enqueue(addr string, it *item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queues == nil {
		s.queues = map[string]*queue{}
	}
	q := s.queues[addr]
	if q == nil {
		q = &queue{}
		s.queues[addr] = q
	}
	q.waiting = append(q.waiting, it)
	s.startLocked(addr, q)
}

// startLocked sends what waits for addr as long as a slot is free; a
// request whose caller has stopped waiting is not sent.
func (s *Sender) startLocked(addr string, q *queue) {
	q.waiting = slices.DeleteFunc(q.waiting, func(it *item) bool { return it.ctx.Err() != nil })
	for len(q.waiting) > 0 && q.inFlight < max(1, s.MaxInFlight) {
		n, size := 0, int64(0)
		for n < len(q.waiting) && n < s.Limits.MaxItems && (n == 0 || size+int64(len(q.waiting[n].wire)) <= s.Limits.maxBatchBytes()) {
			size += int64(len(q.waiting[n].wire))
			n++
		}
		batch := append([]*item(nil), q.waiting[:n]...)
		q.waiting = q.waiting[n:]
		q.inFlight++
		go s.send(addr, q, batch)
	}
	if len(q.waiting) == 0 && q.inFlight == 0 {
		delete(s.queues, addr)
	}
}

// release frees the slot a batch to addr held.
func (s *Sender) release(addr string, q *queue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q.inFlight--
	s.startLocked(addr, q)
}

// send sends one batch and hands each answer to its caller as it comes.
// The batch's context ends once every caller stopped waiting.
func (s *Sender) send(addr string, q *queue, batch []*item) {
	var once sync.Once
	free := func() { once.Do(func() { s.release(addr, q) }) }
	if s.Hold > 0 {
		hold := time.AfterFunc(s.Hold, free)
		defer hold.Stop()
	}
	defer free()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var left sync.WaitGroup
	for _, it := range batch {
		left.Add(1)
		stop := context.AfterFunc(it.ctx, left.Done)
		defer func() {
			if stop() {
				left.Done()
			}
		}()
	}
	go func() {
		left.Wait()
		cancel()
	}()
	answered := make([]bool, len(batch))
	if err := s.exchange(ctx, addr, batch, answered); err != nil {
		for i, it := range batch {
			if !answered[i] {
				it.done <- result{err: fmt.Errorf("%w at %s: %w", ErrNoAnswer, addr, err)}
			}
		}
	}
}

// exchange posts the batch and delivers the answers it reads; it returns
// nil once every request is answered.
func (s *Sender) exchange(ctx context.Context, addr string, batch []*item, answered []bool) error {
	bufs := make([][]byte, len(batch))
	for i, it := range batch {
		bufs[i] = it.wire
	}
	body := bytes.Join(bufs, nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL(addr), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/http")
	if s.Sent != nil {
		s.Sent(len(batch))
	}
	resp, err := s.Transport.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("the batch was refused: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	br := bufio.NewReader(resp.Body)
	for left := len(batch); left > 0; left-- {
		a, err := http.ReadResponse(br, nil)
		if err != nil {
			return fmt.Errorf("read an answer: %w", err)
		}
		i, err := itemOf(a, len(batch))
		if err == nil && answered[i] {
			err = fmt.Errorf("%w: answer %d came twice", ErrBadBatch, i)
		}
		if err != nil {
			return err
		}
		b, err := io.ReadAll(io.LimitReader(a.Body, s.Limits.MaxAnswer+1))
		if err == nil && int64(len(b)) > s.Limits.MaxAnswer {
			err = fmt.Errorf("%w: answer %d is larger than %d bytes", ErrBadBatch, i, s.Limits.MaxAnswer)
		}
		if err != nil {
			return fmt.Errorf("read answer %d: %w", i, err)
		}
		a.Header.Del(HeaderItem)
		a.Body = io.NopCloser(bytes.NewReader(b))
		a.ContentLength = int64(len(b))
		answered[i] = true
		batch[i].done <- result{resp: a}
	}
	// The end of the response, read, lets the connection carry the next batch.
	if _, err := io.Copy(io.Discard, io.LimitReader(br, 1)); err != nil {
		return fmt.Errorf("read the batch's end: %w", err)
	}
	return nil
}
