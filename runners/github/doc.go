// Package github is what a runner pool needs of GitHub Actions: a
// just-in-time runner configuration for one job's VM (generate-jitconfig),
// the removal of a runner, the jobs queued in a repository or an
// organisation (the fallback when a webhook is lost), and the check and
// parsing of workflow_job webhook deliveries (X-Hub-Signature-256). It
// talks to GitHub's REST API, or a GitHub Enterprise Server's, through
// google/go-github, authenticated as a GitHub App installation
// (bradleyfalzon/ghinstallation mints and renews the installation tokens)
// or with a fine-grained token.
//
// It keeps within GitHub's documented rate limits (limits.go): the calls
// that make and remove runners are paced under the secondary limit on
// content-creating requests, the sweep's reads have an hourly budget and
// leave the last tenth of the primary limit alone, and a refusal (403 or
// 429) holds every call until the time GitHub gave (Retry-After, or
// x-ratelimit-reset when nothing is left, or else a minute). The runner
// pools (node/runnerpool) use it; testkit/githubapi stands in for GitHub
// in the tests.
package github
