package testreport

import (
	"sort"
	"strings"
	"time"
)

// Failure is a top-level test that failed or never ended, with the lines
// that tell why, short enough for the end of a CI log.
type Failure struct {
	Package string
	Test    string
	Took    time.Duration
	// Unended: the test had not ended when its package did.
	Unended bool
	// Why: for a failed test the last lines it (and its subtests)
	// printed; for one that never ended, the panic's first line, then
	// the stacks of the goroutines that are the test's or that it
	// started, each cut to its frames in the module.
	Why []string
}

// Limits of what a Failure keeps.
const (
	whyLines       = 12 // a failed test's last lines
	stackFrames    = 10 // frames a goroutine shows
	stackGoroutine = 4  // goroutines an unended test shows
)

// Failures returns the failed or unended top-level tests of evs, in the
// order they ended; module is the import path whose frames a stack keeps
// ("" keeps all).
func Failures(evs []Event, module string) []Failure {
	type key struct{ pkg, test string }
	out := map[key][]string{}
	var order []key
	var fails []Failure
	for _, ev := range evs {
		top, _, _ := strings.Cut(ev.Test, "/")
		k := key{ev.Package, top}
		switch {
		case ev.Action == "output" && ev.Test != "" && !strings.HasPrefix(ev.Test, "Benchmark"):
			if !framing(ev.Output) {
				if _, ok := out[k]; !ok {
					order = append(order, k)
				}
				out[k] = append(out[k], ev.Output)
			}
		case (ev.Action == "pass" || ev.Action == "skip") && ev.Test == top && top != "":
			delete(out, k)
		case ev.Action == "fail" && ev.Test == top && top != "":
			fails = append(fails, Failure{Package: ev.Package, Test: top, Took: secs(ev.Elapsed), Why: tail(out[k], whyLines)})
			delete(out, k)
		case ev.Test == "" && (ev.Action == "pass" || ev.Action == "fail"):
			for _, o := range order {
				if lines, ok := out[o]; ok && o.pkg == ev.Package {
					fails = append(fails, Failure{Package: o.pkg, Test: o.test, Unended: true, Why: unendedWhy(lines, o.test, module)})
					delete(out, o)
				}
			}
		}
	}
	return fails
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// tail returns the last n lines of ls without their newlines, and without
// the test's own --- FAIL lines.
func tail(ls []string, n int) []string {
	var keep []string
	for _, l := range ls {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "--- FAIL") {
			keep = append(keep, strings.TrimRight(l, "\n"))
		}
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	return keep
}

// unendedWhy reads the output of a test that never ended: the lines it
// printed before a panic, then the panic's first line ("panic: test timed
// out after 30m0s") and the goroutines of the dump that name the test (its
// own, and those it started: "created by ...TestX"), cut to module frames.
func unendedWhy(lines []string, test, module string) []string {
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "panic: ") {
			start = i
			break
		}
	}
	if start < 0 {
		return tail(lines, whyLines)
	}
	why := tail(lines[:start], whyLines/2)
	why = append(why, strings.TrimRight(lines[start], "\n"))
	var blocks [][]string
	var cur []string
	for _, l := range lines[start+1:] {
		l = strings.TrimRight(l, "\n")
		if strings.HasPrefix(l, "goroutine ") {
			if cur != nil {
				blocks = append(blocks, cur)
			}
			cur = []string{l}
			continue
		}
		if cur != nil && l != "" {
			cur = append(cur, l)
		}
	}
	if cur != nil {
		blocks = append(blocks, cur)
	}
	// the longest-waiting goroutines first: a hang is the oldest wait
	sort.SliceStable(blocks, func(i, j int) bool { return waited(blocks[i][0]) > waited(blocks[j][0]) })
	shown := 0
	for _, b := range blocks {
		if shown == stackGoroutine {
			break
		}
		if !names(b, "."+test+"(") && !names(b, "."+test+".func") {
			continue
		}
		shown++
		why = append(why, b[0])
		why = append(why, frames(b[1:], module)...)
	}
	return why
}

// waited reads the minutes in a goroutine header ("goroutine 7 [select, 14
// minutes]:"); 0 without.
func waited(header string) int {
	_, rest, ok := strings.Cut(header, ", ")
	if !ok {
		return 0
	}
	n := 0
	for _, c := range rest {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func names(block []string, s string) bool {
	for _, l := range block {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// frames keeps of a goroutine's stack (function line, then its file line)
// the frame it waits in and the frames in module, up to stackFrames.
func frames(stack []string, module string) []string {
	var keep []string
	n := 0
	for i := 0; i+1 < len(stack) && n < stackFrames; i += 2 {
		fn, file := stack[i], stack[i+1]
		if strings.HasPrefix(fn, "created by ") {
			keep = append(keep, "  "+fn)
			break
		}
		inModule := module == "" || strings.HasPrefix(fn, module)
		if !inModule && n > 0 {
			continue
		}
		if !inModule && (strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "internal/") || strings.Contains(fn, ".runtime_")) {
			continue
		}
		n++
		if i := strings.LastIndex(file, " +0x"); i > 0 {
			file = file[:i]
		}
		keep = append(keep, "  "+strings.TrimPrefix(fn, module+"/"), "    "+strings.TrimSpace(file))
	}
	return keep
}
