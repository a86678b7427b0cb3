package vm

import (
	"time"

	"github.com/svc-project/svc/e2e/kit"
)

// jobsWait bounds n runner jobs that run at most q at a time.
func jobsWait(n, q int) time.Duration { return time.Duration((n+q-1)/q) * kit.RunnerJobWait }
