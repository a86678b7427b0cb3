// Package gitlab is the driver of gitlab-runner's custom executor for svc:
// each CI job gets a VM of its own. gitlab-runner runs the driver's four
// stages as programs (svc gitlab-executor config|prepare|run|cleanup):
// config describes the executor, prepare deploys the job's VM (named after
// the job, so that any later stage, or a cleanup after a crash, finds it),
// run carries each of the job's scripts into the guest through its agent
// and streams what it prints, and cleanup deletes the VM.
//
// The protocol is gitlab-runner's: the job's variables arrive in the
// environment as CUSTOM_ENV_<NAME>; a stage that fails because the job's
// script failed exits with $BUILD_FAILURE_EXIT_CODE (and writes the
// script's own exit status to $BUILD_EXIT_CODE_FILE when the runner gives
// one), any other failure with $SYSTEM_FAILURE_EXIT_CODE, so the runner can
// retry a system failure and report a build failure as the job's.
package gitlab
