package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// maxSeed bounds the seed read from stdin.
const maxSeed = 512

// The random device's requests (linux/random.h).
const (
	rndAddEntropy = 0x40085203 // RNDADDENTROPY: _IOW('R', 0x03, int[2])
	rndReseedCRNG = 0x5207     // RNDRESEEDCRNG: _IO('R', 0x07)
)

// reseed credits the seed read from r to the kernel's input pool
// (RNDADDENTROPY) and has the kernel reseed its generator from the pool at
// once (RNDRESEEDCRNG): writing to /dev/urandom would only mix it in, and a
// copy of a saved guest would go on drawing the same numbers as its
// siblings until the kernel's next scheduled reseed.
func reseed(r io.Reader) error {
	seed, err := io.ReadAll(io.LimitReader(r, maxSeed))
	if err != nil {
		return fmt.Errorf("read the seed: %w", err)
	}
	if len(seed) < 32 {
		return fmt.Errorf("a seed of %d bytes is too short (at least 32)", len(seed))
	}
	f, err := os.OpenFile("/dev/urandom", os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	// struct rand_pool_info { int entropy_count; int buf_size; __u32 buf[]; }
	info := make([]byte, 8+len(seed))
	binary.NativeEndian.PutUint32(info[0:], uint32(8*len(seed)))
	binary.NativeEndian.PutUint32(info[4:], uint32(len(seed)))
	copy(info[8:], seed)
	if err := ioctl(f, rndAddEntropy, uintptr(unsafe.Pointer(&info[0]))); err != nil {
		return fmt.Errorf("add the seed to the pool: %w", err)
	}
	if err := ioctl(f, rndReseedCRNG, 0); err != nil {
		return fmt.Errorf("reseed: %w", err)
	}
	return nil
}

func ioctl(f *os.File, req, arg uintptr) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, arg); errno != 0 {
		return errno
	}
	return nil
}

// The SSH server: dropbear, on port 22, with the keys newIdentity makes.
const (
	dropbear = "/usr/sbin/dropbear"
	sshPID   = "/run/dropbear.pid"
)

// restartSSH stops the SSH server that runs (the sessions it holds stay
// open) and starts one with the host keys on disk, and returns once it
// accepts connections.
func restartSSH(ctx context.Context) error {
	if b, err := os.ReadFile(sshPID); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			if err := syscall.Kill(pid, syscall.SIGTERM); err == nil {
				if err := poll(ctx, 2*time.Millisecond, func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }); err != nil {
					return fmt.Errorf("the SSH server (pid %d) did not stop: %w", pid, err)
				}
			}
		}
	}
	// dropbear forks into the background; its descriptors are /dev/null
	// (the guest agent waits for the pipes it gave this step to close).
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer null.Close()
	p, err := os.StartProcess(dropbear, []string{dropbear, "-r", "/" + ed25519KeyFile, "-r", "/" + ecdsaKeyFile, "-p", "22", "-P", sshPID},
		&os.ProcAttr{Files: []*os.File{null, null, null}})
	if err != nil {
		return fmt.Errorf("start the SSH server: %w", err)
	}
	if st, err := p.Wait(); err != nil || !st.Success() {
		return fmt.Errorf("start the SSH server: %v %v", st, err)
	}
	if err := poll(ctx, 5*time.Millisecond, listening); err != nil {
		return fmt.Errorf("the SSH server does not accept connections on port 22: %w", err)
	}
	return nil
}

// listening reports whether something accepts connections at 127.0.0.1:22.
func listening() bool {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	return syscall.Connect(fd, &syscall.SockaddrInet4{Port: 22, Addr: [4]byte{127, 0, 0, 1}}) == nil
}

// poll calls done every interval until it returns true or ctx ends.
func poll(ctx context.Context, interval time.Duration, done func() bool) error {
	for !done() {
		select {
		case <-ctx.Done():
			return errTimeout
		case <-time.After(interval):
		}
	}
	return nil
}
