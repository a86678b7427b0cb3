package httpapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/auth"
)

// Rule says who may call a route.
type Rule int

// Rules.
const (
	// RuleOpen routes need no token.
	RuleOpen Rule = iota
	// RuleMember routes need a user or service account bound to the
	// route's namespace (every user is bound to svc-default; admins to all).
	RuleMember
	// RuleAdmin routes need a user with the admin role.
	RuleAdmin
	// RulePeer routes are for the cluster's peers only.
	RulePeer
)

func (r Rule) String() string {
	return [...]string{"open", "member", "admin", "peer"}[r]
}

type principalKey struct{}

// principalOf returns who the request acts for (zero for open routes).
func principalOf(ctx context.Context) auth.Principal {
	p, _ := ctx.Value(principalKey{}).(auth.Principal)
	return p
}

// authorize checks the request's token against the route's rule; a denied
// call never reaches a handler, so it changes nothing.
func (s *Server) authorize(r *http.Request, rule Rule, p httprouter.Params) (auth.Principal, error) {
	if rule == RuleOpen {
		return auth.Principal{}, nil
	}
	if rule == RulePeer {
		// A peer is its certificate; no token makes one.
		name, ok := s.links.PeerOf(r)
		if !ok {
			return auth.Principal{}, errorf(http.StatusForbidden, api.ReasonForbidden, "only the cluster's peers may call this, over the fabric with their certificates")
		}
		return auth.Principal{Kind: auth.KindPeer, Name: name}, nil
	}
	pr, err := s.authn.Authenticate(r.Header.Get("Authorization"), time.Now())
	if errors.Is(err, auth.ErrRevoked) {
		// A good signature for a subject this replica does not know (yet):
		// it may have just been created through another peer. Catch up with
		// the leader, within a bound, before refusing.
		s.metrics.subjectSyncs.Inc()
		ctx, cancel := context.WithTimeout(r.Context(), subjectSyncWait)
		if serr := s.ready.SyncReplica(ctx); serr == nil {
			pr, err = s.authn.Authenticate(r.Header.Get("Authorization"), time.Now())
		}
		cancel()
	}
	if err != nil {
		return pr, errorf(http.StatusUnauthorized, api.ReasonUnauthorized, "%s", err.Error())
	}
	forbidden := func(format string, args ...any) error {
		return errorf(http.StatusForbidden, api.ReasonForbidden, format, args...)
	}
	switch rule {
	case RuleAdmin:
		if !pr.IsAdmin() {
			return pr, forbidden("%s may not do this: it needs the admin role", pr)
		}
	case RuleMember:
		if pr.Kind == auth.KindPeer {
			return pr, forbidden("peers may only call internal routes")
		}
		if ns := p.ByName("namespace"); ns != "" && !s.canReach(pr, ns) {
			return pr, forbidden("%s is not bound to namespace %q (by name, or by a group of their last sign-in); an admin can add it with 'svc rb add-subject'", pr, ns)
		}
	}
	return pr, nil
}

// subjectSyncWait bounds the wait for the replica to learn a token's subject.
const subjectSyncWait = 3 * time.Second

// canReach reports whether p may use namespace ns.
func (s *core) canReach(p auth.Principal, ns string) bool {
	switch {
	case p.IsAdmin():
		return true
	case p.Kind == auth.KindUser:
		if ns == api.DefaultNamespace {
			return true
		}
		rb := s.replica.FSM().RoleBinding(ns)
		if slices.Contains(rb.Users, p.Name) {
			return true
		}
		// The groups of the person's last sign-in.
		u, _ := s.replica.FSM().User(p.Name)
		for _, g := range u.Groups {
			if slices.Contains(rb.Groups, g) {
				return true
			}
		}
		return false
	case p.Kind == auth.KindServiceAccount:
		return ns == p.Namespace || slices.Contains(s.replica.FSM().RoleBinding(ns).ServiceAccounts, p.Namespace+":"+p.Name)
	}
	return false
}

// owner names the principal as the owner of what it creates.
func owner(ctx context.Context) string {
	p := principalOf(ctx)
	if p.Kind == auth.KindServiceAccount {
		return p.Namespace + ":" + p.Name
	}
	return p.Name
}
