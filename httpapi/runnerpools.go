package httpapi

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/auth"
	"github.com/svc-project/svc/node/runnerpool"
	"github.com/svc-project/svc/node/signin"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/runners/github"
)

// runnerPoolsAPI serves runner pools, their jobs and GitHub's webhook.
type runnerPoolsAPI struct {
	*core
	pools RunnerPools
	keys  auth.Keys
}

// RunnerPools is the leader's pool controller, as the webhook uses it.
type RunnerPools interface {
	// Ran records the runner GitHub gave a job (in_progress), or the
	// job's end (completed: the VM that ran it goes).
	Ran(ctx context.Context, p raftfsm.RunnerPool, gj github.Job, conclusion string)
}

// maxWebhookBody bounds a delivery (a workflow_job event is a few KiB).
const maxWebhookBody = 1 << 20

// What the webhook answers a delivery it refuses, of a pool or not: the
// same words either way. webhookDecoy is the secret a delivery to a pool
// that does not exist is checked against.
const (
	webhookRefused = "the delivery's X-Hub-Signature-256 is not a sha256= signature of its body with the pool's webhook secret"
	webhookDecoy   = "svc: no such pool; this secret signs nothing"
)

func (s *runnerPoolsAPI) routes(srv *Server) {
	const ns = "/api/v1/namespaces/:namespace"
	srv.handle(Route{Method: http.MethodGet, Path: ns + "/runnerpools", Rule: RuleMember}, s.listRunnerPools)
	srv.handle(Route{Method: http.MethodPost, Path: ns + "/runnerpools", Rule: RuleAdmin, Write: true, Target: Leader}, s.createRunnerPool)
	srv.handle(Route{Method: http.MethodGet, Path: ns + "/runnerpools/:pool", Rule: RuleMember}, s.getRunnerPool)
	srv.handle(Route{Method: http.MethodDelete, Path: ns + "/runnerpools/:pool", Rule: RuleAdmin, Write: true, Target: Leader}, s.deleteRunnerPool)
	srv.handle(Route{Method: http.MethodGet, Path: ns + "/runnerpools/:pool/jobs", Rule: RuleMember}, s.listRunnerJobs)
	// GitHub delivers without a token: the pool's secret signs the body.
	srv.handle(Route{Method: http.MethodPost, Path: ns + "/runnerpools/:pool/webhook", Rule: RuleOpen, Write: true, Target: Leader}, s.runnerPoolWebhook)
}

func (s *runnerPoolsAPI) poolToAPI(p raftfsm.RunnerPool) api.RunnerPool {
	jobs := s.replica.FSM().RunnerJobs(p.Namespace, p.Name)
	st := api.RunnerPoolStatus{}
	for _, j := range jobs {
		switch j.State {
		case raftfsm.RunnerJobQueued:
			st.Queued++
			if st.Waiting == "" && j.Message != "" {
				st.Waiting = j.Message
			}
		case raftfsm.RunnerJobStarting:
			st.Starting++
		case raftfsm.RunnerJobRunning, raftfsm.RunnerJobCompleted:
			st.Running++
		case raftfsm.RunnerJobDone:
			st.Done++
		}
	}
	for _, vm := range s.replica.FSM().VMs(p.Namespace) {
		if vm.CustomMetadata[runnerpool.MetaPool] == p.Name {
			st.VMs++
		}
	}
	st.StartP50, st.StartP95 = raftfsm.RunnerStarts(jobs)
	return api.RunnerPool{
		Name: p.Name, Namespace: p.Namespace, VMConfig: p.VMConfig, Labels: append([]string{}, p.Labels...), Max: p.Max,
		RunnerCommand: p.RunnerCommand, JobTimeout: (time.Duration(p.JobTimeoutSeconds) * time.Second).String(),
		GitHub: api.RunnerPoolGitHub{URL: p.GitHub.URL, APIBase: p.GitHub.APIBase, AppID: p.GitHub.AppID, InstallationID: p.GitHub.InstallationID,
			RunnerGroupID: p.GitHub.RunnerGroupID, PrivateKeySet: len(p.GitHub.SealedPrivateKey) > 0, TokenSet: len(p.GitHub.SealedToken) > 0,
			WebhookSecretSet: len(p.GitHub.SealedWebhookSecret) > 0},
		WebhookPath: "/api/v1/namespaces/" + p.Namespace + "/runnerpools/" + p.Name + "/webhook",
		Status:      st, CreatedAt: p.CreatedAt,
	}
}

func (s *runnerPoolsAPI) listRunnerPools(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	ns := p.ByName("namespace")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	items := []api.RunnerPool{}
	for _, rp := range s.replica.FSM().RunnerPools(ns) {
		items = append(items, s.poolToAPI(rp))
	}
	writeJSON(w, http.StatusOK, api.List[api.RunnerPool]{Items: items})
	return nil
}

func (s *runnerPoolsAPI) getRunnerPool(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	rp, ok := s.replica.FSM().RunnerPool(p.ByName("namespace"), p.ByName("pool"))
	if !ok {
		return notFound("runner pool %q not found", p.ByName("pool"))
	}
	writeJSON(w, http.StatusOK, s.poolToAPI(rp))
	return nil
}

func (s *runnerPoolsAPI) listRunnerJobs(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	ns, pool := p.ByName("namespace"), p.ByName("pool")
	if _, ok := s.replica.FSM().RunnerPool(ns, pool); !ok {
		return notFound("runner pool %q not found", pool)
	}
	items := []api.RunnerJob{}
	for _, j := range s.replica.FSM().RunnerJobs(ns, pool) {
		items = append(items, api.RunnerJob{ID: j.ID, RunID: j.RunID, Repo: j.Repo, Labels: append([]string{}, j.Labels...), State: j.State, VM: j.VM, Attempts: j.Attempts,
			Message: j.Message, Conclusion: j.Conclusion, QueuedAt: j.QueuedAt, StartedAt: j.StartedAt, DoneAt: j.DoneAt})
	}
	writeJSON(w, http.StatusOK, api.List[api.RunnerJob]{Items: items})
	return nil
}

func (s *runnerPoolsAPI) createRunnerPool(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns := p.ByName("namespace")
	var req api.RunnerPoolRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := api.ValidateName("name", req.Name, api.MaxNameLen-16); err != nil {
		return badRequest("field \"name\": %s", err)
	}
	if _, err := github.ParseScope(req.GitHub.URL); err != nil {
		return badRequest("field \"github.url\": %s", err)
	}
	if req.GitHub.APIBase != "" {
		if err := signin.CheckIssuerURL(req.GitHub.APIBase); err != nil {
			return badRequest("field \"github.apiBase\": %q must be https (http only on a loopback address)", req.GitHub.APIBase)
		}
	}
	if (req.GitHub.Token == "") == (req.GitHub.PrivateKey == "") {
		return badRequest("field \"github\": give a token, or a GitHub App (appId, installationId, privateKey), not both")
	}
	if req.GitHub.PrivateKey != "" && (req.GitHub.AppID == 0 || req.GitHub.InstallationID == 0) {
		return badRequest("field \"github\": a GitHub App needs its appId and installationId")
	}
	if req.GitHub.WebhookSecret == "" || len(req.GitHub.WebhookSecret) > 1024 || len(req.GitHub.Token) > 4096 || len(req.GitHub.PrivateKey) > 16<<10 {
		return badRequest("field \"github.webhookSecret\": 1 to 1024 bytes (the secret of the webhook that delivers workflow_job events); token at most 4 KiB, privateKey at most 16 KiB")
	}
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	if _, ok := s.replica.FSM().VMConfig(ns, req.VMConfig); !ok {
		return notFound("vmconfig %q not found in namespace %q", req.VMConfig, ns)
	}
	timeout := 6 * time.Hour
	if req.JobTimeout != "" {
		d, err := time.ParseDuration(req.JobTimeout)
		if err != nil {
			return badRequest("field \"jobTimeout\": %q is not a Go duration", req.JobTimeout)
		}
		timeout = d
	}
	rec := raftfsm.RunnerPool{Namespace: ns, Name: req.Name, VMConfig: req.VMConfig, Labels: req.Labels, Max: req.Max,
		RunnerCommand: cmp.Or(req.RunnerCommand, api.DefaultRunnerCommand), JobTimeoutSeconds: int(timeout / time.Second),
		GitHub: raftfsm.GitHubPool{URL: req.GitHub.URL, APIBase: req.GitHub.APIBase, AppID: req.GitHub.AppID, InstallationID: req.GitHub.InstallationID,
			RunnerGroupID: req.GitHub.RunnerGroupID},
		CreatedAt: time.Now().UTC()}
	for _, sec := range []struct {
		val, what string
		into      *[]byte
	}{{req.GitHub.Token, "token", &rec.GitHub.SealedToken}, {req.GitHub.PrivateKey, "private-key", &rec.GitHub.SealedPrivateKey},
		{req.GitHub.WebhookSecret, "webhook-secret", &rec.GitHub.SealedWebhookSecret}} {
		if sec.val == "" {
			continue
		}
		b, err := auth.Seal(s.keys.SealKey(), []byte(sec.val), runnerpool.SecretAAD(ns, req.Name, sec.what))
		if err != nil {
			return err
		}
		*sec.into = b
	}
	// The pool acts through the API as an account of its namespace.
	sa := runnerpool.ServiceAccount(req.Name)
	if _, ok := s.replica.FSM().ServiceAccount(ns, sa); !ok {
		if _, err := s.apply(r.Context(), raftfsm.TypeSACreate, raftfsm.SACreate{Namespace: ns, Name: sa, Time: time.Now().UTC().Truncate(time.Second)}); err != nil && !errors.Is(err, raftfsm.ErrAlreadyExists) {
			return err
		}
	}
	v, err := s.apply(r.Context(), raftfsm.TypeRunnerPoolSet, raftfsm.RunnerPoolSet{Pool: rec})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, s.poolToAPI(*v.(*raftfsm.RunnerPool)))
	return nil
}

func (s *runnerPoolsAPI) deleteRunnerPool(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns, name := p.ByName("namespace"), p.ByName("pool")
	if _, err := s.apply(r.Context(), raftfsm.TypeRunnerPoolDelete, raftfsm.RunnerPoolDelete{Namespace: ns, Name: name}); err != nil {
		return err
	}
	// Its VMs are deleted by the leader's controller (they belong to no pool now).
	_, _ = s.apply(r.Context(), raftfsm.TypeSADelete, raftfsm.SADelete{Namespace: ns, Name: runnerpool.ServiceAccount(name)})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// runnerPoolWebhook takes GitHub's workflow_job deliveries: signed with the
// pool's secret, or refused (401) with nothing recorded.
func (s *runnerPoolsAPI) runnerPoolWebhook(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns, name := p.ByName("namespace"), p.ByName("pool")
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWebhookBody+1))
	if err != nil {
		return bodyError(err)
	}
	if len(body) > maxWebhookBody {
		return errorf(http.StatusRequestEntityTooLarge, api.ReasonRequestEntityTooLarge, "a delivery is at most %d bytes", maxWebhookBody)
	}
	// An unknown pool is answered as a bad signature is, after the same
	// work (a check against a secret of its own): the webhook tells no one
	// which pools exist.
	rp, ok := s.replica.FSM().RunnerPool(ns, name)
	secret := []byte(webhookDecoy)
	if ok {
		if secret, err = auth.Unseal(s.keys.SealKey(), rp.GitHub.SealedWebhookSecret, runnerpool.SecretAAD(ns, name, "webhook-secret")); err != nil {
			return err
		}
	}
	ev, parsed, err := github.ParseDelivery(secret, r.Header.Get("X-GitHub-Event"), r.Header.Get("X-Hub-Signature-256"), body)
	if !ok && err == nil {
		err = github.ErrSignature
	}
	switch {
	case errors.Is(err, github.ErrSignature):
		return errorf(http.StatusUnauthorized, api.ReasonUnauthorized, "%s", webhookRefused)
	case err != nil:
		return badRequest("%s", err)
	case !parsed:
		writeJSON(w, http.StatusOK, api.Message{Message: "ignored: not a workflow_job event"})
		return nil
	}
	msg := "ignored: the job's labels are not all the pool's"
	switch {
	case ev.Action == "queued" && github.Matches(runnerpool.Labels(s.replica.FSM(), rp), ev.Job.Labels):
		if _, err := s.apply(r.Context(), raftfsm.TypeRunnerJobUpdate, raftfsm.RunnerJobUpdate{Job: raftfsm.RunnerJob{
			Namespace: ns, Pool: name, ID: ev.Job.ID, RunID: ev.Job.RunID, Repo: ev.Job.Repo, Labels: ev.Job.Labels, State: raftfsm.RunnerJobQueued,
		}, Time: time.Now().UTC()}); err != nil && !errors.Is(err, raftfsm.ErrConflict) {
			return err
		}
		msg = "job " + strconv.FormatInt(ev.Job.ID, 10) + " queued"
	case ev.Action == "completed" || ev.Action == "in_progress":
		if s.pools != nil {
			ev.Job.Status = ev.Action
			s.pools.Ran(r.Context(), rp, ev.Job, ev.Conclusion)
		}
		msg = "job " + strconv.FormatInt(ev.Job.ID, 10) + " " + ev.Action
	case ev.Action == "waiting":
		msg = "noted"
	}
	writeJSON(w, http.StatusOK, api.Message{Message: msg})
	return nil
}
