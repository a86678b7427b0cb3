// Command ghrunner stands in, in the test image, for GitHub's actions
// runner started with a just-in-time configuration (run.sh --jitconfig):
// it reads the configuration testkit/githubapi handed out, asks the
// stand-in for the job GitHub would assign it, "runs" it for a moment and
// reports it complete, then exits, as an ephemeral runner does. It speaks
// only to the stand-in (its /_standin routes), never to GitHub.
package main
