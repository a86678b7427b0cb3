// Command svc-testreport reads go test -json streams for make test:
//
//	svc-testreport quiet < events        prints what go test prints without -v (a failed test's output, each package's line)
//	svc-testreport output < events       prints what the tests printed (go test -v's output)
//	svc-testreport slowest [-n 15] FILE...   prints the n slowest tests and benchmarks of the files
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
		return errors.New("usage: svc-testreport quiet, svc-testreport output, or svc-testreport slowest [-n N] FILE")
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
		for _, name := range fs.Args() {
			f, err := os.Open(name)
			if err != nil {
				return err
			}
			evs, err := testreport.Read(f)
			f.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			all = append(all, testreport.Timings(evs)...)
		}
		for _, t := range testreport.Slowest(all, *n) {
			mark := ""
			if t.Failed {
				mark = "  FAILED"
			}
			fmt.Printf("%8.1f s  %s %s%s\n", t.Took.Seconds(), strings.TrimPrefix(t.Package, "github.com/svc-project/svc/"), t.Test, mark)
		}
		return nil
	}
	return fmt.Errorf("unknown command %q: quiet, output or slowest", args[0])
}
