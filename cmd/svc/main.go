// Command svc is both the svc peer (svc agent) and the command-line client
// of the svc API.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/svc-project/svc/api"
)

// version is stamped at link time (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	if _, ok := guestExitCode(err); ok {
		os.Exit(exitCode(err)) // the guest's program said what it had to
	}
	if err != nil {
		fmt.Fprint(os.Stderr, errorMessage(err))
		os.Exit(exitCode(err))
	}
}

// errorMessage is what a failed command prints: the API's Status message
// with its code and reason, and what to do about an expired token.
func errorMessage(err error) string {
	var se *api.StatusError
	if !errors.As(err, &se) {
		return "Error: " + err.Error() + "\n"
	}
	msg := fmt.Sprintf("Error: %s (%d %s)\n", se.Status.Message, se.Status.Code, se.Status.Reason)
	if se.Status.Code == 401 && strings.Contains(se.Status.Message, "expired") {
		msg += expiredHint + "\n"
	}
	return msg
}
