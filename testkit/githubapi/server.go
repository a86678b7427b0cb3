package githubapi

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Server is a running stand-in.
type Server struct {
	// URL is the REST API's base address, ending in "/" (with Prefix).
	URL string
	// Token is a fine-grained token it accepts.
	Token string
	// RunnerURL is where runners started with its JIT configurations reach
	// it (default its own address; a guest may need another: SetRunnerURL).
	RunnerURL string
	// AppID, InstallationID and AppKey are the App it knows.
	AppID, InstallationID int64
	AppKey                *rsa.PrivateKey

	srv *httptest.Server

	mu        sync.Mutex
	nextID    int64
	repos     map[string][]*run // "owner/repo" -> runs, oldest first
	runners   map[int64]*Runner
	ever      []Runner // every runner registered, as it was registered
	instToks  map[string]time.Time
	hooks     []hook
	requests  map[string]int // "METHOD pattern" -> count
	delivered []Delivery
	lose      map[string]int // action -> deliveries of it still to lose

	// Rate limits (limits.go).
	limits           Limits
	calls            []call
	windowStart      time.Time
	used, refusals   int
	goneRemovals     int
	forcedUntil      time.Time
	forcedRetryAfter bool
}

// LoseDeliveries has the next n deliveries of action not made, as GitHub
// sometimes fails to deliver an event.
func (s *Server) LoseDeliveries(action string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lose[action] += n
}

// GoneRemovals returns how many DELETEs named a runner that was not
// registered (404): GitHub counts each against the write budget as any.
func (s *Server) GoneRemovals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.goneRemovals
}

// Requests returns how many requests a route ("METHOD pattern") served.
func (s *Server) Requests(pattern string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[pattern]
}

// Deliveries returns the webhook deliveries made so far.
func (s *Server) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.delivered)
}

type run struct {
	ID   int64
	Jobs []*Job
}

// Job is a workflow job of the stand-in.
type Job struct {
	ID, RunID           int64
	Repo                string
	Labels              []string
	Status, Conclusion  string
	RunnerID            int64
	RunnerName          string
	QueuedAt, StartedAt time.Time
	CompletedAt         time.Time
}

// Runner is a registered runner (a JIT configuration handed out).
type Runner struct {
	ID     int64
	Name   string
	Scope  string
	Labels []string
	Busy   bool
	JobID  int64
}

type hook struct {
	url    string
	secret []byte
}

// Delivery is a webhook delivery the stand-in made.
type Delivery struct {
	Event  string
	Action string
	JobID  int64
	Code   int
}

// Start runs a stand-in until the test ends; prefix is "" (github.com's
// api.github.com) or "/api/v3" (a GitHub Enterprise Server's).
func Start(t testing.TB, key *rsa.PrivateKey, prefix string) *Server {
	t.Helper()
	s := &Server{Token: "github_pat_standin", AppID: 4242, InstallationID: 77, AppKey: key, nextID: 1000,
		repos: map[string][]*run{}, runners: map[int64]*Runner{}, instToks: map[string]time.Time{}, requests: map[string]int{}, lose: map[string]int{}, limits: Limits{}.withDefaults()}
	mux := http.NewServeMux()
	route := func(pattern string, h func(http.ResponseWriter, *http.Request)) {
		method, path, _ := strings.Cut(pattern, " ")
		mux.HandleFunc(method+" "+prefix+path, func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.requests[pattern]++
			s.mu.Unlock()
			h(w, r)
		})
	}
	route("POST /app/installations/{id}/access_tokens", s.accessToken)
	route("POST /orgs/{org}/actions/runners/generate-jitconfig", s.authed(s.jitConfig))
	route("POST /repos/{owner}/{repo}/actions/runners/generate-jitconfig", s.authed(s.jitConfig))
	route("GET /orgs/{org}/actions/runners", s.authed(s.listRunners))
	route("GET /repos/{owner}/{repo}/actions/runners", s.authed(s.listRunners))
	route("DELETE /orgs/{org}/actions/runners/{id}", s.authed(s.removeRunner))
	route("DELETE /repos/{owner}/{repo}/actions/runners/{id}", s.authed(s.removeRunner))
	route("GET /repos/{owner}/{repo}/actions/runs", s.authed(s.listRuns))
	route("GET /repos/{owner}/{repo}/actions/runs/{run}/jobs", s.authed(s.listJobs))
	route("GET /orgs/{org}/repos", s.authed(s.listRepos))
	route("GET /repos/{owner}/{repo}/actions/jobs/{job}", s.authed(s.getJob))
	// What GitHub's runner does over its own protocol, for a runner
	// stand-in in a guest: take a job with its JIT configuration, finish it.
	mux.HandleFunc("POST /_standin/acquire", s.acquire)
	mux.HandleFunc("POST /_standin/jobs/{job}/complete", s.completeHTTP)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	s.URL = s.srv.URL + prefix + "/"
	return s
}

// fail answers GitHub's error shape.
func fail(w http.ResponseWriter, code int, msg string) {
	failDoc(w, code, msg, "https://docs.github.com/rest")
}

// failDoc answers GitHub's error shape with its documentation address.
func failDoc(w http.ResponseWriter, code int, msg, doc string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg, "documentation_url": doc})
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// authed lets through the fine-grained token and live installation
// tokens, within the rate limits (limits.go).
func (s *Server) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		ok := (strings.EqualFold(scheme, "Bearer") || strings.EqualFold(scheme, "token")) && tok != ""
		if ok && tok != s.Token {
			s.mu.Lock()
			exp, known := s.instToks[tok]
			s.mu.Unlock()
			ok = known && time.Now().Before(exp)
		}
		if !ok {
			fail(w, http.StatusUnauthorized, "Bad credentials")
			return
		}
		if s.limit(w, r) {
			return
		}
		h(w, r)
	}
}

// accessToken trades an App's JWT for an installation token (an hour).
func (s *Server) accessToken(w http.ResponseWriter, r *http.Request) {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		fail(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
		return
	}
	var c jwt.RegisteredClaims
	_, err := jwt.ParseWithClaims(tok, &c, func(*jwt.Token) (any, error) { return &s.AppKey.PublicKey, nil }, jwt.WithValidMethods([]string{"RS256"}))
	if err != nil || c.Issuer != strconv.FormatInt(s.AppID, 10) || c.ExpiresAt == nil || c.IssuedAt == nil || c.ExpiresAt.Sub(c.IssuedAt.Time) > 11*time.Minute {
		fail(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
		return
	}
	if r.PathValue("id") != strconv.FormatInt(s.InstallationID, 10) {
		fail(w, http.StatusNotFound, "Not Found")
		return
	}
	s.mu.Lock()
	s.nextID++
	t := fmt.Sprintf("ghs_standin%d", s.nextID)
	exp := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	s.instToks[t] = exp
	s.mu.Unlock()
	reply(w, http.StatusCreated, map[string]any{"token": t, "expires_at": exp.Format(time.RFC3339), "permissions": map[string]string{"administration": "write", "actions": "read"}})
}

func scopeOf(r *http.Request) string {
	if org := r.PathValue("org"); org != "" {
		return org
	}
	return r.PathValue("owner") + "/" + r.PathValue("repo")
}

// jitConfig registers a runner and hands out its configuration: here the
// base64 of {"runner_id", "name", "labels", "scope"}, which only this
// stand-in reads (GitHub's is opaque too).
func (s *Server) jitConfig(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name          string   `json:"name"`
		RunnerGroupID int64    `json:"runner_group_id"`
		Labels        []string `json:"labels"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Name == "" || req.RunnerGroupID == 0 {
		fail(w, http.StatusUnprocessableEntity, "Invalid request.\n\n\"name\", \"runner_group_id\" and \"labels\" are required.")
		return
	}
	if len(req.Labels) == 0 || len(req.Labels) > 100 {
		fail(w, http.StatusUnprocessableEntity, "Invalid request.\n\nlabels must have between 1 and 100 items.")
		return
	}
	scope := scopeOf(r)
	s.mu.Lock()
	for _, rn := range s.runners {
		if rn.Name == req.Name && rn.Scope == scope {
			s.mu.Unlock()
			fail(w, http.StatusConflict, "Already exists - A runner with the name "+req.Name+" already exists.")
			return
		}
	}
	s.nextID++
	// Exactly the labels asked for: a JIT runner never runs config.sh,
	// which is what adds self-hosted, the OS and the architecture.
	rn := &Runner{ID: s.nextID, Name: req.Name, Scope: scope, Labels: slices.Clone(req.Labels)}
	s.runners[rn.ID] = rn
	s.ever = append(s.ever, *rn)
	s.mu.Unlock()
	s.mu.Lock()
	runnerURL := first(s.RunnerURL, s.srv.URL)
	s.mu.Unlock()
	enc, _ := json.Marshal(map[string]any{"runner_id": rn.ID, "name": rn.Name, "labels": rn.Labels, "scope": scope, "url": runnerURL})
	labels := []map[string]any{}
	for i, l := range rn.Labels {
		typ := "custom"
		if defaultLabel(l) {
			typ = "read-only"
		}
		labels = append(labels, map[string]any{"id": i + 1, "name": l, "type": typ})
	}
	reply(w, http.StatusCreated, map[string]any{
		"runner":             map[string]any{"id": rn.ID, "name": rn.Name, "os": "unknown", "status": "offline", "busy": false, "labels": labels},
		"encoded_jit_config": base64.StdEncoding.EncodeToString(enc),
	})
}

// listRunners lists the scope's runners, by id, as GitHub's "List
// self-hosted runners" does: ?name= keeps the runner of that name, pages of
// per_page (default 30); a runner is online while it has a job.
func (s *Server) listRunners(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	s.mu.Lock()
	var rs []Runner
	for _, rn := range s.runners {
		if rn.Scope == scopeOf(r) && (name == "" || rn.Name == name) {
			rs = append(rs, *rn)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(rs, func(a, b Runner) int { return cmp.Compare(a.ID, b.ID) })
	out := []map[string]any{}
	for _, rn := range page(w, r, rs) {
		status := "offline"
		if rn.Busy {
			status = "online"
		}
		labels := []map[string]any{}
		for i, l := range rn.Labels {
			labels = append(labels, map[string]any{"id": i + 1, "name": l, "type": "custom"})
		}
		out = append(out, map[string]any{"id": rn.ID, "name": rn.Name, "os": "unknown", "status": status, "busy": rn.Busy, "labels": labels})
	}
	reply(w, http.StatusOK, map[string]any{"total_count": len(rs), "runners": out})
}

func (s *Server) removeRunner(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	rn, ok := s.runners[id]
	ok = ok && rn.Scope == scopeOf(r)
	busy := ok && rn.Busy
	if ok && !busy {
		delete(s.runners, id)
	}
	if !ok {
		s.goneRemovals++
	}
	s.mu.Unlock()
	switch {
	case !ok:
		fail(w, http.StatusNotFound, "Not Found")
		return
	case busy:
		// GitHub's answer for a runner that runs a job.
		fail(w, http.StatusUnprocessableEntity, "Bad request - Runner \""+rn.Name+"\" is still running a job")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// page cuts items to the request's page and writes the Link header.
func page[T any](w http.ResponseWriter, r *http.Request, items []T) []T {
	per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if per <= 0 {
		per = 30
	}
	per = min(per, 100)
	n, _ := strconv.Atoi(r.URL.Query().Get("page"))
	n = max(n, 1)
	last := max((len(items)+per-1)/per, 1)
	link := func(p int, rel string) string {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(p))
		u := *r.URL
		u.RawQuery = q.Encode()
		return fmt.Sprintf("<http://%s%s>; rel=%q", r.Host, u.RequestURI(), rel)
	}
	var links []string
	if n < last {
		links = append(links, link(n+1, "next"), link(last, "last"))
	}
	if n > 1 {
		links = append(links, link(n-1, "prev"), link(1, "first"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	from := min((n-1)*per, len(items))
	return items[from:min(from+per, len(items))]
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	status := r.URL.Query().Get("status")
	s.mu.Lock()
	var runs []map[string]any
	for _, rn := range s.repos[scopeOf(r)] {
		st := runStatus(rn)
		if status == "" || status == st {
			runs = append(runs, map[string]any{"id": rn.ID, "status": st, "repository": map[string]any{"full_name": scopeOf(r)}})
		}
	}
	s.mu.Unlock()
	items := page(w, r, runs)
	if items == nil {
		items = []map[string]any{}
	}
	reply(w, http.StatusOK, map[string]any{"total_count": len(runs), "workflow_runs": items})
}

// defaultLabel reports whether l is one of the labels config.sh gives a
// runner, which GitHub marks read-only.
func defaultLabel(l string) bool {
	switch strings.ToLower(l) {
	case "self-hosted", "linux", "windows", "macos", "x64", "arm64", "arm", "x86":
		return true
	}
	return false
}

// runStatus is a run's status as GitHub reports it: queued until one of its
// jobs starts, then in_progress (its other jobs may still be queued: a
// matrix, a needs: chain) until every job completed.
func runStatus(rn *run) string {
	started, done := false, true
	for _, j := range rn.Jobs {
		if j.Status != "queued" {
			started = true
		}
		if j.Status != "completed" {
			done = false
		}
	}
	switch {
	case done:
		return "completed"
	case started:
		return "in_progress"
	}
	return "queued"
}

func jobJSON(j *Job) map[string]any {
	m := map[string]any{"id": j.ID, "run_id": j.RunID, "status": j.Status, "labels": j.Labels, "created_at": j.QueuedAt.Format(time.RFC3339)}
	if j.Conclusion != "" {
		m["conclusion"] = j.Conclusion
	}
	if j.RunnerID != 0 {
		m["runner_id"], m["runner_name"] = j.RunnerID, j.RunnerName
	}
	return m
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("run"), 10, 64)
	s.mu.Lock()
	var jobs []map[string]any
	found := false
	for _, rn := range s.repos[scopeOf(r)] {
		if rn.ID == id {
			found = true
			for _, j := range rn.Jobs {
				jobs = append(jobs, jobJSON(j))
			}
		}
	}
	s.mu.Unlock()
	if !found {
		fail(w, http.StatusNotFound, "Not Found")
		return
	}
	items := page(w, r, jobs)
	reply(w, http.StatusOK, map[string]any{"total_count": len(jobs), "jobs": items})
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("job"), 10, 64)
	s.mu.Lock()
	var got map[string]any
	for _, rn := range s.repos[scopeOf(r)] {
		for _, j := range rn.Jobs {
			if j.ID == id {
				got = jobJSON(j)
			}
		}
	}
	s.mu.Unlock()
	if got == nil {
		fail(w, http.StatusNotFound, "Not Found")
		return
	}
	reply(w, http.StatusOK, got)
}

func (s *Server) listRepos(w http.ResponseWriter, r *http.Request) {
	org := r.PathValue("org")
	s.mu.Lock()
	var repos []map[string]any
	names := make([]string, 0, len(s.repos))
	for full := range s.repos {
		names = append(names, full)
	}
	s.mu.Unlock()
	slices.Sort(names)
	for _, full := range names {
		if owner, name, _ := strings.Cut(full, "/"); owner == org {
			repos = append(repos, map[string]any{"name": name, "full_name": full, "archived": false})
		}
	}
	items := page(w, r, repos)
	if items == nil {
		items = []map[string]any{}
	}
	reply(w, http.StatusOK, items)
}

// Hook has the stand-in deliver workflow_job events to url, signed with secret.
func (s *Server) Hook(url string, secret []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks = append(s.hooks, hook{url: url, secret: secret})
}

// Queue adds a workflow run of one job per labels list to repo ("owner/name")
// and delivers a queued event for each; lost drops the deliveries (a
// webhook GitHub failed to deliver).
func (s *Server) Queue(ctx context.Context, repo string, lost bool, labels ...[]string) []*Job {
	jobs := make([]QueuedJob, len(labels))
	for i, l := range labels {
		jobs[i] = QueuedJob{Labels: l, Lost: lost}
	}
	return s.QueueRun(ctx, repo, jobs...)
}

// QueuedJob is a job of a run QueueRun adds: its runs-on labels, and
// whether its queued delivery is lost.
type QueuedJob struct {
	Labels []string
	Lost   bool
}

// QueueRun adds a workflow run of the jobs to repo and delivers a queued
// event for each whose delivery is not lost.
func (s *Server) QueueRun(ctx context.Context, repo string, queued ...QueuedJob) []*Job {
	s.mu.Lock()
	s.nextID++
	rn := &run{ID: s.nextID}
	for _, q := range queued {
		s.nextID++
		rn.Jobs = append(rn.Jobs, &Job{ID: s.nextID, RunID: rn.ID, Repo: repo, Labels: q.Labels, Status: "queued", QueuedAt: time.Now()})
	}
	s.repos[repo] = append(s.repos[repo], rn)
	jobs := slices.Clone(rn.Jobs)
	s.mu.Unlock()
	for i, j := range jobs {
		if !queued[i].Lost {
			s.deliver(ctx, "queued", j)
		}
	}
	return jobs
}

// Start is a runner, started with an encoded JIT configuration, taking a
// queued job its labels match (the oldest): it returns the job, or nil.
func (s *Server) Start(ctx context.Context, encoded string) (*Job, error) {
	b, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, fmt.Errorf("not a JIT configuration: %w", err)
	}
	var cfg struct {
		RunnerID int64 `json:"runner_id"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("not a JIT configuration: %w", err)
	}
	s.mu.Lock()
	rn, ok := s.runners[cfg.RunnerID]
	if !ok || rn.Busy || rn.JobID != 0 {
		s.mu.Unlock()
		return nil, fmt.Errorf("runner %d is unknown, removed or already used (a JIT configuration is good for one job)", cfg.RunnerID)
	}
	var got *Job
	for _, r := range s.repos[rn.Scope] {
		for _, j := range r.Jobs {
			if got == nil && j.Status == "queued" && labelsMatch(rn.Labels, j.Labels) {
				got = j
			}
		}
	}
	if got == nil && !strings.Contains(rn.Scope, "/") { // an organisation's runner
		for repo, runs := range s.repos {
			for _, r := range runs {
				for _, j := range r.Jobs {
					if got == nil && strings.HasPrefix(repo, rn.Scope+"/") && j.Status == "queued" && labelsMatch(rn.Labels, j.Labels) {
						got = j
					}
				}
			}
		}
	}
	if got != nil {
		rn.Busy, rn.JobID = true, got.ID
		got.Status, got.RunnerID, got.RunnerName, got.StartedAt = "in_progress", rn.ID, rn.Name, time.Now()
	}
	s.mu.Unlock()
	if got != nil {
		s.deliver(ctx, "in_progress", got)
	}
	return got, nil
}

func labelsMatch(runner, job []string) bool {
	for _, l := range job {
		if !slices.ContainsFunc(runner, func(r string) bool { return strings.EqualFold(r, l) }) {
			return false
		}
	}
	return true
}

// Complete finishes a job (success or failure) and delivers the event; the
// JIT runner that ran it is gone, as an ephemeral runner is.
func (s *Server) Complete(ctx context.Context, jobID int64, conclusion string) error {
	s.mu.Lock()
	var got *Job
	for _, runs := range s.repos {
		for _, r := range runs {
			for _, j := range r.Jobs {
				if j.ID == jobID {
					got = j
				}
			}
		}
	}
	if got == nil || got.Status != "in_progress" {
		s.mu.Unlock()
		return fmt.Errorf("job %d is not in progress", jobID)
	}
	got.Status, got.Conclusion, got.CompletedAt = "completed", conclusion, time.Now()
	delete(s.runners, got.RunnerID)
	s.mu.Unlock()
	s.deliver(ctx, "completed", got)
	return nil
}

// Jobs returns a copy of every job, by id.
func (s *Server) Jobs() map[int64]Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int64]Job{}
	for _, runs := range s.repos {
		for _, r := range runs {
			for _, j := range r.Jobs {
				out[j.ID] = *j
			}
		}
	}
	return out
}

// Runners returns a copy of the registered runners.
func (s *Server) Runners() []Runner {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Runner
	for _, r := range s.runners {
		out = append(out, *r)
	}
	return out
}

// RegisterRunner registers a runner of scope ("owner/repo" or an org) as
// a generate-jitconfig call does, for a test that stands for a start whose
// caller died before it recorded the runner.
func (s *Server) RegisterRunner(scope, name string, labels []string) Runner {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	rn := &Runner{ID: s.nextID, Name: name, Scope: scope, Labels: slices.Clone(labels)}
	s.runners[rn.ID] = rn
	s.ever = append(s.ever, *rn)
	return *rn
}

// Registered returns every runner registered so far (removed ones too), as
// registered.
func (s *Server) Registered() []Runner {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ever)
}

// SetRunnerURL sets where runners reach the stand-in: an address the
// guests can reach, where the test serves Handler.
func (s *Server) SetRunnerURL(u string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.RunnerURL = u
}

// Handler is the stand-in's HTTP handler, to serve on another listener too.
func (s *Server) Handler() http.Handler { return s.srv.Config.Handler }

func first(v ...string) string {
	for _, x := range v {
		if x != "" {
			return x
		}
	}
	return ""
}

// acquire is a runner asking for its job: {"jitconfig": "..."} -> the job
// (200), or 204 while none is queued for it.
func (s *Server) acquire(w http.ResponseWriter, r *http.Request) {
	var req struct {
		JITConfig string `json:"jitconfig"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fail(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	job, err := s.Start(r.Context(), req.JITConfig)
	switch {
	case err != nil:
		fail(w, http.StatusUnauthorized, err.Error())
	case job == nil:
		w.WriteHeader(http.StatusNoContent)
	default:
		reply(w, http.StatusOK, jobJSON(job))
	}
}

// completeHTTP is a runner reporting its job done: {"conclusion": "success"}.
func (s *Server) completeHTTP(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("job"), 10, 64)
	var req struct {
		Conclusion string `json:"conclusion"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Conclusion == "" {
		fail(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	if err := s.Complete(r.Context(), id, req.Conclusion); err != nil {
		fail(w, http.StatusConflict, err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Sign is the X-Hub-Signature-256 of body with secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// SignSHA1 is the legacy X-Hub-Signature of body with secret, which GitHub
// still sends beside X-Hub-Signature-256.
func SignSHA1(secret, body []byte) string {
	m := hmac.New(sha1.New, secret)
	m.Write(body)
	return "sha1=" + hex.EncodeToString(m.Sum(nil))
}

// deliver posts a workflow_job event to every hook, as GitHub does (one
// attempt; a failed delivery is not retried).
func (s *Server) deliver(ctx context.Context, action string, j *Job) {
	s.mu.Lock()
	if s.lose[action] > 0 {
		s.lose[action]--
		s.mu.Unlock()
		return
	}
	hooks := slices.Clone(s.hooks)
	body, _ := json.Marshal(map[string]any{
		"action": action, "workflow_job": jobJSON(j),
		"repository": map[string]any{"full_name": j.Repo, "name": j.Repo[strings.Index(j.Repo, "/")+1:], "owner": map[string]any{"login": j.Repo[:strings.Index(j.Repo, "/")]}},
	})
	s.nextID++
	delivery := fmt.Sprintf("standin-%d", s.nextID)
	s.mu.Unlock()
	for _, h := range hooks {
		code := 0
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("User-Agent", "GitHub-Hookshot/standin")
			req.Header.Set("X-GitHub-Event", "workflow_job")
			req.Header.Set("X-GitHub-Delivery", delivery)
			req.Header.Set("X-Hub-Signature-256", Sign(h.secret, body))
			// GitHub sends the legacy SHA-1 signature beside it.
			req.Header.Set("X-Hub-Signature", SignSHA1(h.secret, body))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				code = resp.StatusCode
				resp.Body.Close()
			}
		}
		s.mu.Lock()
		s.delivered = append(s.delivered, Delivery{Event: "workflow_job", Action: action, JobID: j.ID, Code: code})
		s.mu.Unlock()
	}
}
