package github

import (
	"errors"
	"fmt"
	"strings"

	gh "github.com/google/go-github/v88/github"
)

// ErrSignature is wrapped when a delivery's signature is missing or wrong.
var ErrSignature = errors.New("webhook signature does not match the pool's secret")

// JobEvent is a workflow_job delivery.
type JobEvent struct {
	// Action: queued, waiting, in_progress or completed.
	Action string
	Job    Job
	// Conclusion of a completed job (success, failure, cancelled...).
	Conclusion string
}

// ParseDelivery checks a webhook delivery's X-Hub-Signature-256 against
// secret (a sha256= HMAC-SHA256 of the body, compared in constant time;
// nothing else is taken) and parses
// a workflow_job event; other events are ignored (ok false). A ping, the
// delivery GitHub sends when a hook is made, is ok with no event.
func ParseDelivery(secret []byte, event, signature string, body []byte) (JobEvent, bool, error) {
	if len(secret) == 0 {
		return JobEvent{}, false, fmt.Errorf("%w: the pool has no webhook secret", ErrSignature)
	}
	// SHA-256 only: go-github would also take a SHA-1 signature here.
	if !strings.HasPrefix(signature, "sha256=") {
		return JobEvent{}, false, fmt.Errorf("%w: X-Hub-Signature-256 is not a sha256= signature", ErrSignature)
	}
	if err := gh.ValidateSignature(signature, body, secret); err != nil {
		return JobEvent{}, false, fmt.Errorf("%w: %v", ErrSignature, err)
	}
	if event != "workflow_job" {
		return JobEvent{}, false, nil
	}
	v, err := gh.ParseWebHook(event, body)
	if err != nil {
		return JobEvent{}, false, fmt.Errorf("github: a workflow_job delivery: %w", err)
	}
	e, ok := v.(*gh.WorkflowJobEvent)
	if !ok || e.WorkflowJob == nil {
		return JobEvent{}, false, errors.New("github: a workflow_job delivery without its job")
	}
	return JobEvent{Action: e.GetAction(), Job: jobOf(e.GetRepo().GetFullName(), e.WorkflowJob), Conclusion: e.WorkflowJob.GetConclusion()}, true, nil
}
