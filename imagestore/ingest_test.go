package imagestore

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// refusal is a record error that says whether the state refused the write.
type refusal struct{ sure bool }

func (r refusal) Error() string { return fmt.Sprintf("refused for certain: %v", r.sure) }
func (r refusal) Refusal() bool { return r.sure }

// Ingest keeps a blob its record took, and removes one the state refused
// unless something else refers to it or holds it; a failure that may have
// recorded it all the same (a timeout, a lost answer) leaves it to the
// collector.
func TestStaged_Ingest_cases(t *testing.T) {
	refused := fmt.Errorf("record: %w", refusal{sure: true})
	timedOut := fmt.Errorf("record: %w", refusal{sure: false})
	lost := errors.New("connection reset")
	cases := []struct {
		name     string
		before   bool // the bytes were in the store already
		inUse    bool // a record refers to the digest
		leased   bool // another request holds a lease on it
		recorded error
		kept     bool
	}{
		{"recorded", false, false, false, nil, true},
		{"refused, new bytes nobody wants", false, false, false, refused, false},
		{"refused, but a record refers to them", false, true, false, refused, true},
		{"refused, but another request holds them", false, false, true, refused, true},
		{"refused, bytes that were there before", true, false, false, refused, true},
		{"timed out, may be recorded yet", false, false, false, timedOut, true},
		{"answer lost, may be recorded", false, false, false, lost, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			data := []byte("blob " + c.name)
			if c.before {
				l, err := stage(t, s, data).Commit()
				if err != nil {
					t.Fatal(err)
				}
				l.Release()
			}
			st := stage(t, s, data)
			err = st.Ingest(context.Background(), func(string) bool { return c.inUse }, func(context.Context) error {
				if c.leased { // another request commits the same bytes meanwhile
					other, err := s.Lease(st.Digest)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(other.Release)
				}
				return c.recorded
			})
			if !errors.Is(err, c.recorded) || (c.recorded == nil) != (err == nil) {
				t.Fatalf("Ingest = %v, want %v", err, c.recorded)
			}
			if got := s.Has(st.Digest); got != c.kept {
				t.Fatalf("blob kept = %v, want %v", got, c.kept)
			}
		})
	}
}
