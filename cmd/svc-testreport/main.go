// Command svc-testreport reads go test -json streams for make test:
//
//	svc-testreport quiet < events        prints what go test prints without -v (a failed test's output, each package's line)
//	svc-testreport output < events       prints what the tests printed (go test -v's output)
//	svc-testreport slowest [-n 15] FILE...   prints the n slowest tests and benchmarks of the files
//	svc-testreport failures FILE...      prints each failed or unended test of the files, and why, in short
//
// (package testkit/testreport).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/svc-project/svc/testkit/testreport"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "svc-testreport:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: svc-testreport quiet | output | slowest [-n N] FILE... | failures FILE (each FILE a go test -json stream)")
	}
	switch args[0] {
	case "quiet":
		return testreport.Quiet(os.Stdout, os.Stdin)
	case "output":
		return testreport.Output(os.Stdout, os.Stdin)
	case "slowest":
		fs := flag.NewFlagSet("slowest", flag.ContinueOnError)
		n := fs.Int("n", 15, "how many")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		var all []testreport.Timing
		if err := eachFile(fs.Args(), func(evs []testreport.Event) { all = append(all, testreport.Timings(evs)...) }); err != nil {
			return err
		}
		for _, t := range testreport.Slowest(all, *n) {
			mark := ""
			switch {
			case t.Unended:
				mark = "  DID NOT END"
			case t.Failed:
				mark = "  FAILED"
			}
			fmt.Printf("%8.1f s  %s %s%s\n", t.Took.Seconds(), strings.TrimPrefix(t.Package, module+"/"), t.Test, mark)
		}
		return nil
	case "failures":
		var all []testreport.Failure
		if err := eachFile(args[1:], func(evs []testreport.Event) { all = append(all, testreport.Failures(evs, module)...) }); err != nil {
			return err
		}
		for _, f := range all {
			what := fmt.Sprintf("FAILED after %.1f s", f.Took.Seconds())
			if f.Unended {
				what = "DID NOT END (its test binary stopped first)"
			}
			fmt.Printf("%s %s: %s\n", strings.TrimPrefix(f.Package, module+"/"), f.Test, what)
			for _, l := range f.Why {
				fmt.Println("    " + l)
			}
		}
		return nil
	}
	return fmt.Errorf("unknown command %q: quiet, output, slowest or failures", args[0])
}

// module is the import path whose packages and frames the reports shorten.
const module = "github.com/svc-project/svc"

// eachFile reads each named file's events and hands them to use.
func eachFile(names []string, use func([]testreport.Event)) error {
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		evs, err := testreport.Read(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		use(evs)
	}
	return nil
}
