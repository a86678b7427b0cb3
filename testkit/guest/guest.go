package guest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// Run runs cmd over SSH at addr with a password and returns its output.
func Run(ctx context.Context, addr, user, password, cmd string) (string, error) {
	conn, err := dial(ctx, addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return runOn(conn, addr, user, password, cmd)
}

// runOn runs cmd over the SSH connection conn to addr.
func runOn(conn net.Conn, addr, user, password, cmd string) (string, error) {
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

// Timed tells when the steps of one SSH session happened.
type Timed struct {
	Banner time.Time // the server's version line arrived
	Done   time.Time // the command finished
	Output string
}

// bannerRetry is how long WaitRunTimed waits for a banner on one
// connection before it makes another. A connection made while a guest
// behind QEMU's user-mode network is still booting reaches the guest only
// when that network's TCP sends its SYN again (seconds apart, after the
// first one was lost before the guest had an address), so a client that
// waits on it sees the guest's SSH server late; a waiter that tries
// again sees it within this of its start, as tools waiting for SSH do.
const bannerRetry = time.Second

// WaitRunTimed is WaitRun that also notes when the server's banner
// arrived, on the connection the command runs on, as a person's ssh sees
// it: reading the banner on a connection of its own would cost an emulated
// guest one more SSH server process and key exchange on the way to the
// command. A connection that brings no banner within bannerRetry is
// closed for a new one. Banner is that of the first attempt that got one.
func WaitRunTimed(ctx context.Context, addr, user, password, cmd string) (Timed, error) {
	var t Timed
	for {
		attempt, cancel := context.WithTimeout(ctx, 8*time.Second)
		conn, err := dial(attempt, addr)
		if err == nil {
			bc := &bannerConn{Conn: conn}
			if dl, ok := attempt.Deadline(); ok {
				bc.after = dl
				_ = conn.SetReadDeadline(time.Now().Add(bannerRetry))
			}
			t.Output, err = runOn(bc, addr, user, password, cmd)
			t.Done = time.Now()
			if t.Banner.IsZero() {
				t.Banner = bc.at
			}
			conn.Close()
		}
		cancel()
		if err == nil {
			return t, nil
		}
		select {
		case <-ctx.Done():
			return t, fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// bannerConn notes when the first line (the SSH version banner) arrives;
// its reads then wait until after.
type bannerConn struct {
	net.Conn
	at, after time.Time
}

func (c *bannerConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.at.IsZero() && bytes.IndexByte(p[:n], '\n') >= 0 {
		c.at = time.Now()
		if !c.after.IsZero() {
			_ = c.Conn.SetReadDeadline(c.after)
		}
	}
	return n, err
}

// errGotKey ends a handshake once the server's host key is known.
var errGotKey = errors.New("host key read")

// HostKey returns the SHA256 fingerprint of the SSH host key of the type
// algo (ssh.KeyAlgoED25519, ...) the server at addr presents, as a client
// checking it would read it; it does not log in.
func HostKey(ctx context.Context, addr, algo string) (string, error) {
	conn, err := dial(ctx, addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	var fp string
	cfg := &ssh.ClientConfig{
		User:              "nobody",
		HostKeyAlgorithms: []string{algo},
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			fp = ssh.FingerprintSHA256(key)
			return errGotKey
		},
		Timeout: 5 * time.Second,
	}
	_, _, _, err = ssh.NewClientConn(conn, addr, cfg)
	if fp == "" {
		return "", fmt.Errorf("ssh %s: no %s host key: %w", addr, algo, err)
	}
	return fp, nil
}

// bannerWait bounds one wait for a banner when the caller's context has
// no deadline, and each attempt of WaitBanner.
const bannerWait = 2 * time.Second

// WaitBanner waits until the SSH server at addr sends its version banner
// ("SSH-2.0-..."), trying again every 50 ms until ctx ends (each attempt
// waiting at most bannerWait), and returns it.
func WaitBanner(ctx context.Context, addr string) (string, error) {
	for {
		attempt, cancel := context.WithTimeout(ctx, bannerWait)
		line, err := Banner(attempt, addr)
		cancel()
		if err == nil {
			return line, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Banner connects once to the SSH server at addr and returns the version
// banner it sends first ("SSH-2.0-..."), waiting for it until ctx's
// deadline (bannerWait without one): a guest under software emulation on
// a busy host can take seconds to answer a connection.
func Banner(ctx context.Context, addr string) (string, error) {
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(bannerWait)
	}
	_ = conn.SetDeadline(deadline)
	line, err := bufio.NewReader(io.LimitReader(conn, 256)).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("ssh %s: no banner: %w", addr, err)
	}
	if !strings.HasPrefix(line, "SSH-") {
		return "", fmt.Errorf("ssh %s: %q is no SSH banner", addr, line)
	}
	return strings.TrimSpace(line), nil
}

// dial connects to an SSH server at addr, the connection bounded by ctx's
// deadline.
func dial(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 3 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ssh %s: %w", addr, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	return conn, nil
}
