package peerclaim

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// EnvDir names the directory of a run's claims (make test sets it).
const EnvDir = "SVC_PEER_CLAIMS"

// ErrTaken is wrapped when another test or script holds a claim.
var ErrTaken = errors.New("claimed by another test cluster")

// Dir is where claims are kept: EnvDir's, else one directory of the
// machine's temporary directory. run says whether it is a run's (claims
// last the run).
func Dir() (dir string, run bool) {
	if d := os.Getenv(EnvDir); d != "" {
		return d, true
	}
	return filepath.Join(os.TempDir(), "svc-peer-claims"), false
}

// Claimant is who claims: Owner is a test binary with the tests it was
// asked to run, or a script, the same in every run; PID the process that
// holds the names while it runs; Holder what in that process holds them
// (a test; "" once released). One test binary's tests run one after
// another and may share names; two test processes of a run, or two tests
// of one process at once, may not.
type Claimant struct {
	Owner  string
	PID    int
	Holder string
}

// Peer and Addr are the keys a cluster claims: a peer's name, and the
// address it binds.
func Peer(name string) string { return "peer." + name }

// Addr is the key of an address (see Peer).
func Addr(ip string) string { return "addr." + ip }

// Claim takes keys for c in dir, all or none of them. A key is refused
// when another owner took it in this run (run), or when it is held now by
// another owner's live process, or by another holder of c's own process.
func Claim(dir string, run bool, c Claimant, keys ...string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("peer claims: %w", err)
	}
	unlock, err := lock(dir)
	if err != nil {
		return err
	}
	defer unlock()
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			return err
		}
		prev, ok, err := read(filepath.Join(dir, k))
		if err != nil {
			return err
		}
		if ok && refused(run, c, prev) {
			how := "holds it now"
			if run && prev.Owner != c.Owner {
				how = "took it earlier in this run"
			}
			return fmt.Errorf("%s of %s: %w: %s (pid %d) %s. A peer removes the domains under its name that it does not know, and a VM listens on its peer's address: every cluster on this machine's libvirtd needs peer names and addresses of its own (testcluster.Options.Prefix and Subnet)",
				strings.TrimPrefix(strings.TrimPrefix(k, "peer."), "addr."), c.Owner, ErrTaken, prev.Owner, prev.PID, how)
		}
	}
	for _, k := range keys {
		if err := write(filepath.Join(dir, k), c); err != nil {
			return err
		}
	}
	return nil
}

// refused says whether prev's claim stands against c.
func refused(run bool, c, prev Claimant) bool {
	if prev.Owner != c.Owner {
		return run || (prev.Holder != "" && alive(prev.PID))
	}
	// The same test or script: run again, it takes its names again; two
	// holders at once clash, in one process or in two (two processes of one
	// command: a make test whose shares of a package were all asked alike).
	if prev.Holder == "" {
		return false
	}
	if prev.PID == c.PID {
		return prev.Holder != c.Holder
	}
	return alive(prev.PID)
}

// Release gives up c's hold on keys (its owner keeps them for the run).
func Release(dir string, c Claimant, keys ...string) error {
	unlock, err := lock(dir)
	if err != nil {
		return err
	}
	defer unlock()
	for _, k := range keys {
		path := filepath.Join(dir, k)
		prev, ok, err := read(path)
		if err != nil || !ok || prev != c {
			continue // not c's any more
		}
		prev.Holder = ""
		if err := write(path, prev); err != nil {
			return err
		}
	}
	return nil
}

// For claims keys for test tb, in the name of this test process, until tb
// ends; it fails tb when another test holds one.
func For(tb testing.TB, keys ...string) {
	tb.Helper()
	c := Claimant{Owner: process(), PID: os.Getpid(), Holder: tb.Name()}
	dir, run := Dir()
	if err := Claim(dir, run, c, keys...); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = Release(dir, c, keys...) })
}

// process names this test process by its package and the tests it was
// asked for (go test's -run, -skip and -bench): the same in every run of
// one command of make test, and different between two of them.
func process() string {
	name := filepath.Base(os.Args[0])
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Path != "" {
		name = bi.Path
	}
	for _, f := range []string{"test.run", "test.skip", "test.bench"} {
		if fl := flag.Lookup(f); fl != nil && fl.Value.String() != "" {
			name += fmt.Sprintf(" -%s=%s", strings.TrimPrefix(f, "test."), fl.Value)
		}
	}
	return name
}

// checkKey refuses a key that is no plain file name.
func checkKey(k string) error {
	if k == "" || k == "." || k == ".." || strings.ContainsAny(k, "/\x00\n") || strings.HasPrefix(k, ".lock") {
		return fmt.Errorf("peer claims: %q is not a claim's name", k)
	}
	return nil
}

func lock(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("peer claims: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("peer claims: lock %s: %w", dir, err)
	}
	return func() { _ = f.Close() }, nil // closing the file releases its lock
}

// read reads a claim: its owner, pid and holder, a line each.
func read(path string) (Claimant, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Claimant{}, false, nil
	}
	if err != nil {
		return Claimant{}, false, fmt.Errorf("peer claims: %w", err)
	}
	lines := strings.SplitN(strings.TrimSuffix(string(b), "\n"), "\n", 3)
	for len(lines) < 3 {
		lines = append(lines, "")
	}
	pid, _ := strconv.Atoi(lines[1])
	return Claimant{Owner: lines[0], PID: pid, Holder: lines[2]}, true, nil
}

func write(path string, c Claimant) error {
	if strings.ContainsAny(c.Owner+c.Holder, "\n") {
		return fmt.Errorf("peer claims: %q holds a newline", c.Owner+c.Holder)
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%s\n%d\n%s\n", c.Owner, c.PID, c.Holder), 0o644); err != nil {
		return fmt.Errorf("peer claims: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("peer claims: %w", err)
	}
	return nil
}

// alive says whether process pid runs.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
