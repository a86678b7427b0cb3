package githubapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Limits are GitHub's documented REST rate limits
// (docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api).
// The zero value of a field is GitHub's figure.
type Limits struct {
	// PerHour is the primary limit: requests an hour of one token or
	// installation (5,000 for a token and the least an App installation has).
	PerHour int
	// WritesPerMinute and WritesPerHour are the secondary limits on
	// content-creating requests (80 and 500); the stand-in counts every
	// POST, PATCH, PUT and DELETE of the REST API as one.
	WritesPerMinute, WritesPerHour int
	// PointsPerMinute is the secondary limit on points (900): a GET is 1
	// point, a POST, PATCH, PUT or DELETE 5.
	PointsPerMinute int
}

func (l Limits) withDefaults() Limits {
	if l.PerHour <= 0 {
		l.PerHour = 5000
	}
	if l.WritesPerMinute <= 0 {
		l.WritesPerMinute = 80
	}
	if l.WritesPerHour <= 0 {
		l.WritesPerHour = 500
	}
	if l.PointsPerMinute <= 0 {
		l.PointsPerMinute = 900
	}
	return l
}

// Documentation addresses GitHub's rate limit answers carry (clients such
// as go-github tell the two limits apart by them).
const (
	primaryDoc   = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-primary-rate-limits"
	secondaryDoc = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits"
)

// call is one REST request, as the limits count it.
type call struct {
	at    time.Time
	write bool
}

// SetLimits replaces the limits (the counts so far stay).
func (s *Server) SetLimits(l Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = l.withDefaults()
}

// SecondaryLimitFor has every REST request answered as GitHub answers one
// past a secondary rate limit, for d: 403 with its message, and, when
// retryAfter, a Retry-After header of the seconds left (GitHub sends one
// only sometimes; without it a client is to wait at least a minute).
func (s *Server) SecondaryLimitFor(d time.Duration, retryAfter bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forcedUntil, s.forcedRetryAfter = time.Now().Add(d), retryAfter
}

// Refusals returns how many requests a rate limit refused.
func (s *Server) Refusals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refusals
}

// MostWritesInAMinute returns the most content-creating requests made in
// any 60 seconds so far (refused ones too: GitHub counts what it is sent).
func (s *Server) MostWritesInAMinute() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var writes []time.Time
	for _, c := range s.calls {
		if c.write {
			writes = append(writes, c.at)
		}
	}
	most := 0
	for i, j := 0, 0; j < len(writes); j++ {
		for writes[j].Sub(writes[i]) >= time.Minute {
			i++
		}
		most = max(most, j-i+1)
	}
	return most
}

// CallsBetween returns how many REST requests came between from and to.
func (s *Server) CallsBetween(from, to time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if !c.at.Before(from) && c.at.Before(to) {
			n++
		}
	}
	return n
}

// limit counts a REST request and answers it as GitHub does when a limit
// refuses it (true: answered). Every answer carries the primary limit's
// x-ratelimit-* headers.
func (s *Server) limit(w http.ResponseWriter, r *http.Request) bool {
	now := time.Now()
	write := r.Method != http.MethodGet && r.Method != http.MethodHead
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.windowStart.IsZero() || now.Sub(s.windowStart) >= time.Hour {
		s.windowStart, s.used = now, 0
	}
	s.calls = append(s.calls, call{at: now, write: write})
	lim := s.limits
	h := w.Header()
	reset := s.windowStart.Add(time.Hour)
	setRate := func(remaining int) {
		h.Set("X-RateLimit-Limit", strconv.Itoa(lim.PerHour))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
		h.Set("X-RateLimit-Used", strconv.Itoa(s.used))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
		h.Set("X-RateLimit-Resource", "core")
	}
	secondary := func(retryAfter time.Duration) bool {
		s.refusals++
		setRate(max(lim.PerHour-s.used, 0))
		if retryAfter > 0 {
			h.Set("Retry-After", strconv.Itoa(int((retryAfter+time.Second-1)/time.Second)))
		}
		failDoc(w, http.StatusForbidden, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID standin.", secondaryDoc)
		return true
	}
	if now.Before(s.forcedUntil) {
		var after time.Duration
		if s.forcedRetryAfter {
			after = s.forcedUntil.Sub(now)
		}
		return secondary(after)
	}
	if s.used >= lim.PerHour {
		s.refusals++
		setRate(0)
		failDoc(w, http.StatusForbidden, fmt.Sprintf("API rate limit exceeded for installation ID %d. If you reach out to GitHub Support for help, please include the request ID standin and timestamp %s.", s.InstallationID, now.UTC().Format("2006-01-02 15:04:05 MST")), primaryDoc)
		return true
	}
	s.used++
	// The secondary limits count what came in the last minute and hour,
	// this request included.
	writesMin, writesHour, points := 0, 0, 0
	for _, c := range s.calls {
		age := now.Sub(c.at)
		if c.write && age < time.Hour {
			writesHour++
		}
		if age < time.Minute {
			points++
			if c.write {
				writesMin++
				points += 4
			}
		}
	}
	if write && (writesMin > lim.WritesPerMinute || writesHour > lim.WritesPerHour) || points > lim.PointsPerMinute {
		return secondary(0)
	}
	setRate(lim.PerHour - s.used)
	return false
}
