package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/raftfsm"
)

// apply proposes a command on this peer, the leader (a write routed here),
// bounded by WriteTimeout: a peer that lost its leadership answers 503.
func (s *core) apply(ctx context.Context, t raftfsm.Type, body any) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	return s.raft.Apply(ctx, t, body)
}

// propose proposes one of this peer's own commands (what it received, a
// deploy it waits on) through the leader wherever it is, bounded by
// WriteTimeout.
func (s *core) propose(ctx context.Context, t raftfsm.Type, body any) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	return s.raft.Propose(ctx, t, body)
}

// deleter answers DELETE of a record named by the path parameter param: the
// namespace must exist (when the path has one), the command comes from the
// namespace and the name, and the answer is 204.
func (s *core) deleter(t raftfsm.Type, param string, body func(ns, name string) any) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		ns, name := p.ByName("namespace"), p.ByName(param)
		if param != "namespace" {
			if err := s.requireNamespace(ns); err != nil {
				return err
			}
		}
		if _, err := s.apply(r.Context(), t, body(ns, name)); err != nil {
			return err
		}
		if t == raftfsm.TypeSADelete {
			// Its tokens stop working on a peer once that peer applied this.
			if lagging := s.cfg.Propagation.WaitPeersApplied(r.Context(), s.replica.FSM().Index()); len(lagging) > 0 {
				w.Header().Add("Warning", fmt.Sprintf("299 - %q", "peers "+strings.Join(lagging, ", ")+" did not confirm the deletion in time; they refuse its tokens once they do"))
			}
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
}
