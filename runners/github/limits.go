package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	gh "github.com/google/go-github/v88/github"
	"golang.org/x/time/rate"
)

// What a Client spends of GitHub's rate limits
// (docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api):
// a token or an App installation has 5,000 requests an hour (the primary
// limit), and at most 80 content-creating requests a minute, 500 an hour,
// and 900 points a minute (the secondary limits).
const (
	// WritesPerSecond and WriteBurst pace the requests that make or
	// remove runners: at most WriteBurst+60 in any minute (70), under the
	// 80 of the secondary limit, and 3,600 an hour before the hourly 500
	// bites (only a crowd of jobs gets near it; each costs one JIT
	// configuration and at most one removal).
	WritesPerSecond = 1.0
	WriteBurst      = 10
	// ReadsPerHour and ReadBurst bound the reads the sweep spends (the
	// fallback for lost webhook deliveries): a third of the primary limit,
	// so that two pools on one installation leave room for the rest.
	ReadsPerHour = 1800
	ReadBurst    = 60
	// secondaryWait is how long a client waits after a secondary limit
	// refusal that gave no Retry-After (GitHub: "wait for at least one
	// minute").
	secondaryWait = time.Minute
	// reserve is the share of the primary limit the sweep leaves alone:
	// below it, only starts and removals of runners call GitHub.
	reserve = 0.1
)

// ErrLimited is wrapped by a LimitError.
var ErrLimited = errors.New("github: rate limited")

// ErrReadBudget is the sweep's reads for the hour spent (a LimitError is
// not: GitHub has not refused anything).
var ErrReadBudget = errors.New("github: the sweep's hourly budget of reads is spent")

// LimitError is GitHub refusing a request under a rate limit, or this
// client not asking until that limit has passed.
type LimitError struct {
	// Until is when GitHub may be asked again.
	Until time.Time
	// Secondary tells a secondary limit from the primary one.
	Secondary bool
	Msg       string
}

func (e *LimitError) Error() string {
	kind := "primary"
	if e.Secondary {
		kind = "secondary"
	}
	return fmt.Sprintf("github: %s rate limit until %s: %s", kind, e.Until.UTC().Format(time.RFC3339), e.Msg)
}

func (e *LimitError) Unwrap() error { return ErrLimited }

// HeldUntil returns when GitHub may be asked again, if err says it may not
// be now.
func HeldUntil(err error) (time.Time, bool) {
	var le *LimitError
	if errors.As(err, &le) {
		return le.Until, true
	}
	return time.Time{}, false
}

// limits is a Client's share of GitHub's limits and what GitHub said last.
type limits struct {
	writes *rate.Limiter
	reads  *rate.Limiter

	mu   sync.Mutex
	hold *LimitError // no request before hold.Until
	rate gh.Rate     // the primary limit as of the last answer
}

func newLimits() *limits {
	return &limits{
		writes: rate.NewLimiter(rate.Limit(WritesPerSecond), WriteBurst),
		reads:  rate.NewLimiter(rate.Limit(float64(ReadsPerHour)/3600), ReadBurst),
	}
}

// held returns the standing hold, if any.
func (l *limits) held(now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hold != nil && now.Before(l.hold.Until) {
		return l.hold
	}
	return nil
}

// HeldUntil returns when the client calls GitHub again, if a rate limit
// keeps it from doing so now.
func (c *Client) HeldUntil() (time.Time, bool) {
	if err := c.lim.held(time.Now()); err != nil {
		return HeldUntil(err)
	}
	return time.Time{}, false
}

// kind of request, for the limits.
type kind int

const (
	// sweepRead is a read of the sweep: within the read budget, and not
	// below the primary limit's reserve.
	sweepRead kind = iota
	// write makes or removes a runner: paced under the secondary limit.
	write
)

// call makes one request through do within the limits: none while a hold
// stands; a write waits its turn; a sweep's read is refused once the budget
// or the reserve is spent. A refusal GitHub answers makes a hold (until
// x-ratelimit-reset for the primary limit; Retry-After, or a minute, for a
// secondary one).
func (c *Client) call(ctx context.Context, k kind, do func() (*gh.Response, error)) error {
	l := c.lim
	if err := l.held(time.Now()); err != nil {
		return err
	}
	switch k {
	case write:
		if err := l.writes.Wait(ctx); err != nil {
			return fmt.Errorf("github: waiting for a turn to write: %w", err)
		}
	case sweepRead:
		l.mu.Lock()
		low := l.rate.Limit > 0 && float64(l.rate.Remaining) < reserve*float64(l.rate.Limit) && time.Now().Before(l.rate.Reset.Time)
		l.mu.Unlock()
		if low {
			return fmt.Errorf("%w: GitHub's limit is nearly spent (%d left until %s); the sweep waits", ErrReadBudget, l.rate.Remaining, l.rate.Reset.UTC().Format(time.RFC3339))
		}
		if !l.reads.Allow() {
			return ErrReadBudget
		}
	}
	resp, err := do()
	now := time.Now()
	if resp != nil && resp.Rate.Limit > 0 {
		l.mu.Lock()
		l.rate = resp.Rate
		l.mu.Unlock()
	}
	if le := limitOf(err, resp, now); le != nil {
		l.mu.Lock()
		if l.hold == nil || le.Until.After(l.hold.Until) {
			l.hold = le
		}
		l.mu.Unlock()
		if err == nil {
			return nil // this answer stands; the next call waits
		}
		return fmt.Errorf("%w (%w)", le, err)
	}
	return err
}

// limitOf tells a rate limit refusal in a request's outcome, as GitHub
// documents the answers: with Retry-After, wait that long; with
// x-ratelimit-remaining 0, until x-ratelimit-reset; else at least a
// minute. A success that leaves no request of the primary limit holds
// until its reset too.
func limitOf(err error, resp *gh.Response, now time.Time) *LimitError {
	var rle *gh.RateLimitError
	var are *gh.AbuseRateLimitError
	reset := func(def time.Duration) time.Time {
		if resp != nil && resp.Rate.Limit > 0 && resp.Rate.Remaining == 0 && resp.Rate.Reset.After(now) {
			return resp.Rate.Reset.Time
		}
		return now.Add(def)
	}
	switch {
	case err == nil:
		if resp != nil && resp.Rate.Limit > 0 && resp.Rate.Remaining == 0 && resp.Rate.Reset.After(now) {
			return &LimitError{Until: resp.Rate.Reset.Time, Msg: "no request of the hour's limit is left"}
		}
		return nil
	case errors.As(err, &rle):
		return &LimitError{Until: reset(secondaryWait), Msg: rle.Message}
	case errors.As(err, &are):
		until := reset(secondaryWait)
		if are.Response == nil {
			return &LimitError{Until: until, Secondary: true, Msg: are.Message}
		}
		if s := are.Response.Header.Get("Retry-After"); s != "" {
			if n, perr := strconv.Atoi(s); perr == nil && n > 0 {
				until = now.Add(time.Duration(n) * time.Second)
			}
		}
		return &LimitError{Until: until, Secondary: true, Msg: are.Message}
	case resp != nil && resp.StatusCode == http.StatusTooManyRequests:
		// A 429 go-github did not recognise: a secondary limit all the same.
		return &LimitError{Until: reset(secondaryWait), Secondary: true, Msg: err.Error()}
	}
	return nil
}
