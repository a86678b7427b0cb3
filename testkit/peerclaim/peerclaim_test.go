package peerclaim

import (
	"errors"
	"os"
	"os/exec"
	"testing"
)

// deadPID is a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestClaim_rules(t *testing.T) {
	me := os.Getpid()
	dead := deadPID(t)
	a := Claimant{Owner: "node.test TestA", PID: me, Holder: "TestA"}
	cases := []struct {
		name  string
		run   bool
		prev  *Claimant
		next  Claimant
		taken bool
	}{
		{"free", true, nil, a, false},
		{"another owner in the run, released", true, &Claimant{Owner: "x.sh", PID: dead}, a, true},
		{"another owner in the run, alive", true, &Claimant{Owner: "x.sh", PID: me, Holder: "x.sh"}, a, true},
		{"another owner outside a run, dead", false, &Claimant{Owner: "x.sh", PID: dead, Holder: "x.sh"}, a, false},
		{"another owner outside a run, released", false, &Claimant{Owner: "x.sh", PID: me}, a, false},
		{"another owner outside a run, alive", false, &Claimant{Owner: "x.sh", PID: me, Holder: "x.sh"}, a, true},
		{"the same test again, another process", true, &Claimant{Owner: a.Owner, PID: dead, Holder: "TestA"}, a, false},
		// Two processes of one command at once (two shares of a package
		// that a make test asked alike): the second is refused.
		{"the same test in another live process", true, &Claimant{Owner: a.Owner, PID: os.Getppid(), Holder: "TestA"}, a, true},
		{"the same test, released", true, &Claimant{Owner: a.Owner, PID: me}, Claimant{Owner: a.Owner, PID: me, Holder: "TestA/sub"}, false},
		{"the same test, two live holders", true, &Claimant{Owner: a.Owner, PID: me, Holder: "TestA/one"}, Claimant{Owner: a.Owner, PID: me, Holder: "TestA/two"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.prev != nil {
				if err := Claim(dir, c.run, *c.prev, Peer("p-1")); err != nil {
					t.Fatal(err)
				}
			}
			err := Claim(dir, c.run, c.next, Peer("q-1"), Peer("p-1"))
			if got := errors.Is(err, ErrTaken); got != c.taken {
				t.Fatalf("Claim = %v, taken %v, want %v", err, got, c.taken)
			}
			// all or none: q-1 is c.next's only when the claim passed
			got, ok, _ := read(dir + "/" + Peer("q-1"))
			if ok != !c.taken || (ok && got != c.next) {
				t.Fatalf("q-1 = %+v %v after Claim = %v", got, ok, err)
			}
		})
	}
}

func TestRelease_keeps_the_owner_for_the_run(t *testing.T) {
	dir := t.TempDir()
	a := Claimant{Owner: "node.test TestA", PID: os.Getpid(), Holder: "TestA"}
	if err := Claim(dir, true, a, Addr("127.0.1.1")); err != nil {
		t.Fatal(err)
	}
	if err := Release(dir, a, Addr("127.0.1.1")); err != nil {
		t.Fatal(err)
	}
	b := Claimant{Owner: "svc.test TestB", PID: os.Getpid(), Holder: "TestB"}
	if err := Claim(dir, true, b, Addr("127.0.1.1")); !errors.Is(err, ErrTaken) {
		t.Fatalf("another owner's claim in the run = %v", err)
	}
	if err := Claim(dir, false, b, Addr("127.0.1.1")); err != nil {
		t.Fatalf("outside a run, a released claim is free: %v", err)
	}
}

func TestClaim_refuses_a_key_that_is_no_name(t *testing.T) {
	for _, k := range []string{"", "..", "a/b", ".lock", "x\ny"} {
		if err := Claim(t.TempDir(), true, Claimant{Owner: "o"}, k); err == nil {
			t.Errorf("Claim(%q) passed", k)
		}
	}
}
