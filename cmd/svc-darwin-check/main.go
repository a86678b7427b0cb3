// Command svc-darwin-check type-checks svc's darwin build (the macOS
// driver's calls into github.com/Code-Hex/vz/v3) on any host, for each
// GOARCH given, and exits 1 on the first arch with type errors.
//
//	svc-darwin-check [-arch arm64,amd64] [packages]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/svc-project/svc/internal/darwincheck"
)

func main() {
	arches := flag.String("arch", "arm64,amd64", "GOARCHes to check, comma-separated")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after this long")
	flag.Parse()
	patterns := flag.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	failed := false
	for _, arch := range strings.Split(*arches, ",") {
		start := time.Now()
		problems, err := darwincheck.Check(ctx, darwincheck.Options{Dir: ".", Arch: arch, Patterns: patterns})
		if err != nil {
			fmt.Fprintln(os.Stderr, "svc-darwin-check:", err)
			os.Exit(2)
		}
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, p)
		}
		verdict := "ok"
		if len(problems) > 0 {
			verdict, failed = fmt.Sprintf("%d type errors", len(problems)), true
		}
		fmt.Printf("darwin/%s: %s (%s)\n", arch, verdict, time.Since(start).Round(time.Millisecond))
	}
	if failed {
		os.Exit(1)
	}
}
