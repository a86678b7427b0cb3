// Package githubapi is a stand-in for GitHub's REST API and its webhook
// deliveries, for tests of runner pools: no test machine reaches GitHub.
// It is written from GitHub's published REST description
// (docs.github.com/rest) and serves, with GitHub's paths, bodies, status
// codes and error shape ({"message", "documentation_url"}):
//
//   - POST /app/installations/{id}/access_tokens: an installation token for
//     a JWT signed with the App's private key (RS256, iss the app id, at
//     most 10 minutes);
//   - POST /orgs/{org}/actions/runners/generate-jitconfig and
//     /repos/{owner}/{repo}/actions/runners/generate-jitconfig: 201
//     {runner, encoded_jit_config}; 409 for a runner name in use, 422 for a
//     request without labels. The runner has exactly the labels asked for,
//     as GitHub documents: a JIT runner never runs config.sh, which is what
//     adds self-hosted, the OS and the architecture;
//   - GET /orgs/{org}/actions/runners, /repos/{owner}/{repo}/actions/runners:
//     {total_count, runners}, ?name= for the runner of that name, paged;
//   - DELETE /orgs/{org}/actions/runners/{id}, /repos/{owner}/{repo}/...: 204, 404;
//   - GET /repos/{owner}/{repo}/actions/jobs/{job_id}: one job;
//   - GET /repos/{owner}/{repo}/actions/runs?status=queued|in_progress (a
//     run is in_progress once any of its jobs started, its other jobs
//     possibly still queued),
//     /repos/{owner}/{repo}/actions/runs/{run_id}/jobs and
//     /orgs/{org}/repos, paginated (per_page, page, and a Link header with
//     rel="next" and rel="last");
//   - 401 "Bad credentials" for any other token;
//   - GitHub's rate limits (limits.go): x-ratelimit-* headers on every
//     answer, 403 past the primary limit (5,000 an hour) with
//     x-ratelimit-remaining 0, and 403 past a secondary limit (80
//     content-creating requests a minute, 500 an hour, 900 points a
//     minute) with GitHub's message and documentation address, and no
//     Retry-After (GitHub sends one only sometimes); a test can have every
//     request refused so for a while (SecondaryLimitFor).
//
// Deliveries carry X-GitHub-Event, X-GitHub-Delivery and
// X-Hub-Signature-256 (HMAC-SHA256 of the body with the hook's secret), as
// GitHub sends them. A test queues jobs (Queue), and a runner started with
// one of the stand-in's JIT configurations takes one (Start) and finishes it
// (Complete), each step delivered as a workflow_job event.
package githubapi
