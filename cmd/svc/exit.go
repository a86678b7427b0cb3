package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Exit statuses scripts can rely on.
const (
	exitOK    = 0
	exitError = 1 // the call failed (the API's message is on stderr)
	exitUsage = 2 // the command was called wrongly
)

// usageError is a mistake in how a command was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// markUsageErrors makes cobra's own complaints (bad flags, wrong number of
// arguments) usage errors, on cmd and every command under it.
func markUsageErrors(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	if !cmd.Runnable() && cmd.HasSubCommands() {
		// A group: its help, or an unknown subcommand.
		cmd.Args = func(c *cobra.Command, a []string) error {
			if len(a) > 0 {
				return usageErrorf("unknown command %q for %q", a[0], c.CommandPath())
			}
			return nil
		}
		cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	} else if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error {
			if err := args(c, a); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		markUsageErrors(sub)
	}
}

// exitCode is the exit status of a command's error.
func exitCode(err error) int {
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	}
	if code, ok := guestExitCode(err); ok {
		return code
	}
	switch {
	case errors.As(err, &ue),
		// cobra's errors of the command line that no hook sees
		strings.HasPrefix(err.Error(), "unknown command"),
		strings.HasPrefix(err.Error(), "required flag"),
		strings.HasPrefix(err.Error(), "if any flags in the group"):
		return exitUsage
	}
	return exitError
}
