package cluster

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/node/fabric"
	"github.com/svc-project/svc/testkit/testcluster"
)

// TestJoin_flood_writes_nothing: join requests with a real token's id and
// an invented secret are refused before anything is proposed (before, each
// was a Raft entry on every peer: 1,412 requests, 1,412 entries), and a
// source address that keeps asking is answered 429 before its request is
// read; a host with the real token joins as before.
func TestJoin_flood_writes_nothing(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	leader := c.WaitLeader()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	created, err := c.Client(leader).CreateJoinToken(ctx, api.JoinTokenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	real, err := fabric.ParseJoinToken(created.Token)
	if err != nil {
		t.Fatal(err)
	}
	guess, err := fabric.NewJoinToken(real.CA)
	if err != nil {
		t.Fatal(err)
	}
	guess.ID = real.ID // the id is printed by 'join-token list'; the secret is guessed
	target := c.Followers()[0].Peer.GossipAddr()
	join := func(from string, i int) error {
		d := &net.Dialer{Timeout: 3 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		req := fabric.JoinRequest{Name: fmt.Sprintf("rogue-%d", i), Addr: "127.0.0.1", RaftAddr: "127.0.0.1:1", PublicKey: publicKeyDER(t)}
		_, err := fabric.Join(ctx, d.DialContext, target, guess, req)
		return err
	}

	// 50 sources, 5 guesses each: within each source's burst
	before := leader.Peer.FSM().Index()
	var mu sync.Mutex
	refusals := map[string]int{}
	var wg sync.WaitGroup
	for s := range 50 {
		wg.Go(func() {
			for i := range 5 {
				err := join(fmt.Sprintf("127.0.1.%d", s+1), s*5+i)
				why := "admitted"
				switch {
				case errors.Is(err, fabric.ErrRefused) && strings.Contains(err.Error(), "secret is wrong"):
					why = "wrong secret"
				case err != nil:
					why = err.Error()
				}
				mu.Lock()
				refusals[why]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if refusals["wrong secret"] != 250 {
		t.Fatalf("250 guesses answered %v", refusals)
	}
	if grew := leader.Peer.FSM().Index() - before; grew > 25 {
		t.Fatalf("250 guessed secrets grew the Raft log by %d entries", grew)
	}

	// one source that keeps guessing is slowed down
	throttled := 0
	for i := range 30 {
		if err := join("127.0.2.1", 1000+i); err != nil && strings.Contains(err.Error(), "too many join attempts") {
			throttled++
		}
	}
	if throttled < 15 {
		t.Fatalf("%d of 30 quick guesses from one address were throttled", throttled)
	}

	// and a real host still joins
	m := c.Add()
	c.WaitFor("the new host a node", 30*time.Second, func() error {
		if _, ok := leader.Peer.FSM().Node(m.Name); !ok {
			return errors.New("not yet")
		}
		return nil
	})
}

// publicKeyDER is a fresh public key for a join request.
func publicKeyDER(t *testing.T) []byte {
	t.Helper()
	key, err := fabric.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	return der
}
