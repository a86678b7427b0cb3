package guest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"time"

	"golang.org/x/crypto/ssh"
)

// Run runs cmd over SSH at addr with a password and returns its output.
func Run(ctx context.Context, addr, user, password, cmd string) (string, error) {
	d := net.Dialer{Timeout: 3 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("ssh %s: %w", addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	cfg := &ssh.ClientConfig{
		User:            user,
		Auth:            []ssh.AuthMethod{ssh.Password(password)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), // test guests make a new key every boot
		Timeout:         5 * time.Second,
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if err != nil {
		return "", fmt.Errorf("ssh %s: %w", addr, err)
	}
	client := ssh.NewClient(c, chans, reqs)
	defer client.Close()
	s, err := client.NewSession()
	if err != nil {
		return "", fmt.Errorf("ssh %s: session: %w", addr, err)
	}
	defer s.Close()
	var stdout, stderr bytes.Buffer
	s.Stdout, s.Stderr = &stdout, &stderr
	if err := s.Run(cmd); err != nil {
		return stdout.String() + stderr.String(), fmt.Errorf("ssh %s: %q: %w", addr, cmd, err)
	}
	return stdout.String() + stderr.String(), nil
}

// WaitRun retries Run until it succeeds or ctx ends, and returns the output.
func WaitRun(ctx context.Context, addr, user, password, cmd string) (string, error) {
	for {
		attempt, cancel := context.WithTimeout(ctx, 8*time.Second)
		out, err := Run(attempt, addr, user, password, cmd)
		cancel()
		if err == nil {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
