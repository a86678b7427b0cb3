package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/svc-project/svc/testkit/peerclaim"
)

func main() {
	owner := flag.String("owner", "", "who claims (a script's path): the same in every run")
	pid := flag.Int("pid", os.Getppid(), "the process that holds the names while it runs")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: claim -owner OWNER [-pid PID] PEER-NAME...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *owner == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	keys := make([]string, 0, flag.NArg())
	for _, n := range flag.Args() {
		keys = append(keys, peerclaim.Peer(n))
	}
	dir, run := peerclaim.Dir()
	if err := peerclaim.Claim(dir, run, peerclaim.Claimant{Owner: *owner, PID: *pid, Holder: *owner}, keys...); err != nil {
		fmt.Fprintln(os.Stderr, "claim:", err)
		os.Exit(1)
	}
}
