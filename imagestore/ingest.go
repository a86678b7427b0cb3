package imagestore

import (
	"context"
	"errors"
	"fmt"
)

// Ingest is the one way a new blob enters the store and the replicated
// state: it commits st and records it (see Lease.Record).
func (st *Staged) Ingest(ctx context.Context, inUse InUse, record func(context.Context) error) error {
	lease, err := st.Commit()
	if err != nil {
		return fmt.Errorf("store the file: %w", err)
	}
	return lease.Record(ctx, inUse, record)
}

// Record runs record, which refers to the leased blob in the replicated
// state, and then ends the lease (once record has returned, its write has
// reached this replica, so no clean-up can take the blob meanwhile). When
// the state refused the record (an error that says so, see Refusal), a
// blob this lease's commit brought is removed again unless a record refers
// to it (inUse) or another lease holds it: what no record took does not
// wait for the collector. Any other failure (a timeout, a lost answer) may
// have recorded the blob all the same, before this replica knows it: the
// blob is left to the collector, which removes it after its grace if no
// record took it.
func (l *Lease) Record(ctx context.Context, inUse InUse, record func(context.Context) error) error {
	defer l.Release()
	err := record(ctx)
	if err == nil || !l.created || !refused(err) {
		return err
	}
	l.Release()
	if _, rerr := l.s.RemoveUnused(l.digest, inUse); rerr != nil {
		return errors.Join(err, fmt.Errorf("remove the blob no record took: %w", rerr))
	}
	return err
}

// Refusal is implemented by errors that know whether the write they report
// was refused for certain (raftfsm.RuleError).
type Refusal interface {
	error
	Refusal() bool
}

func refused(err error) bool {
	var r Refusal
	return errors.As(err, &r) && r.Refusal()
}
