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
// The runner pools that use it are not built yet (see the README's
// "What works today"); this package and its stand-in of GitHub's API
// (testkit/githubapi) are their first part.
package github
