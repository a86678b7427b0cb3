//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"
)

// deadline bounds the whole step.
const deadline = 20 * time.Second

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var err error
	switch {
	case len(os.Args) == 2 && os.Args[1] == "-init":
		err = initial(ctx, "/")
	case len(os.Args) == 3:
		err = step(ctx, "/", os.Args[1], os.Args[2], os.Stdin)
	default:
		fmt.Fprintln(os.Stderr, "usage: identity <host name> boot|restore | identity -init")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "identity:", err)
		os.Exit(1)
	}
}

// step is the identity step, for the system at root.
func step(ctx context.Context, root, name, how string, seed io.Reader) error {
	if how != "boot" && how != "restore" {
		return fmt.Errorf("%q is neither boot nor restore", how)
	}
	if !validHostName(name) {
		return fmt.Errorf("%q is not a host name", name)
	}
	if how == "restore" {
		// First: every key made below draws from the generator.
		if err := reseed(seed); err != nil {
			return err
		}
	}
	if err := syscall.Sethostname([]byte(name)); err != nil {
		return fmt.Errorf("set the host name: %w", err)
	}
	if err := writeFile(root, "etc/hostname", []byte(name+"\n"), 0o644); err != nil {
		return err
	}
	if how == "restore" {
		return initial(ctx, root)
	}
	return nil
}

// initial makes a new machine id and new SSH host keys and (re)starts the
// SSH server with them.
func initial(ctx context.Context, root string) error {
	if err := newIdentity(root); err != nil {
		return err
	}
	return restartSSH(ctx)
}

// errTimeout is returned when a wait ran out.
var errTimeout = errors.New("timed out")

// validHostName reports whether name is a host name the kernel takes: at
// most 64 bytes of DNS labels (letters, digits, hyphens not at either end).
func validHostName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
