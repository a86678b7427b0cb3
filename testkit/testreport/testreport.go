package testreport

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Event is one line of go test -json.
type Event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// Timing is how long one test, subtest or benchmark took.
type Timing struct {
	Package string
	Test    string
	Took    time.Duration
	Failed  bool
	// Unended: the test had not ended when its package did (the test
	// binary timed out or panicked); Took is up to the package's end.
	Unended bool
}

// maxLine bounds one event line (a test's output line with its JSON).
const maxLine = 4 << 20

// Read decodes a stream of events. A line that is not an event (a build
// error go test printed without -json's framing) is skipped.
func Read(r io.Reader) ([]Event, error) {
	var evs []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		var ev Event
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Action == "" {
			continue
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		return evs, fmt.Errorf("read test events: %w", err)
	}
	return evs, nil
}

// Timings returns each test's and benchmark's time in evs, in no order.
func Timings(evs []Event) []Timing {
	var out []Timing
	type key struct{ pkg, test string }
	bench := map[string]Event{} // package → the benchmark that runs now
	endBench := func(pkg string, at time.Time) {
		b, ok := bench[pkg]
		if !ok {
			return
		}
		delete(bench, pkg)
		out = append(out, Timing{Package: b.Package, Test: b.Test, Took: at.Sub(b.Time)})
	}
	seen := map[key]bool{}
	running := map[key]Event{} // a test's run event until it ends
	for _, ev := range evs {
		if b, ok := bench[ev.Package]; ok && ev.Test != b.Test && !strings.HasPrefix(ev.Test, b.Test+"/") {
			endBench(ev.Package, ev.Time)
		}
		switch {
		case ev.Action == "run" && strings.HasPrefix(ev.Test, "Benchmark") && !strings.Contains(ev.Test, "/"):
			bench[ev.Package] = ev
		case ev.Action == "run" && ev.Test != "" && !strings.HasPrefix(ev.Test, "Benchmark"):
			running[key{ev.Package, ev.Test}] = ev
		case ev.Test == "" && (ev.Action == "pass" || ev.Action == "fail"):
			// the package ended: its tests that did not never will
			for k, r := range running {
				if k.pkg == ev.Package {
					delete(running, k)
					if !seen[k] {
						seen[k] = true
						out = append(out, Timing{Package: k.pkg, Test: k.test, Took: ev.Time.Sub(r.Time), Failed: true, Unended: true})
					}
				}
			}
		case (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip") && ev.Test != "":
			delete(running, key{ev.Package, ev.Test})
			if ev.Action == "skip" {
				continue
			}
			if strings.HasPrefix(ev.Test, "Benchmark") {
				if b, ok := bench[ev.Package]; ok && b.Test == ev.Test {
					delete(bench, ev.Package)
					out = append(out, Timing{Package: ev.Package, Test: ev.Test, Took: ev.Time.Sub(b.Time), Failed: ev.Action == "fail"})
				}
				continue
			}
			k := key{ev.Package, ev.Test}
			if seen[k] {
				continue // -count above 1: the first run
			}
			seen[k] = true
			out = append(out, Timing{Package: ev.Package, Test: ev.Test, Took: time.Duration(ev.Elapsed * float64(time.Second)), Failed: ev.Action == "fail"})
		}
	}
	for _, b := range bench { // a package that ended without its pass line (killed)
		out = append(out, Timing{Package: b.Package, Test: b.Test, Failed: true})
	}
	return out
}

// Slowest returns the n longest of ts, longest first; subtests are left
// out (their test's time holds theirs).
func Slowest(ts []Timing, n int) []Timing {
	var top []Timing
	for _, t := range ts {
		if !strings.Contains(t.Test, "/") {
			top = append(top, t)
		}
	}
	sort.SliceStable(top, func(i, j int) bool { return top[i].Took > top[j].Took })
	if len(top) > n {
		top = top[:n]
	}
	return top
}

// Output writes what each event printed, in order: go test -v's output.
func Output(w io.Writer, r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		var ev Event
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Action == "" {
			if _, err := fmt.Fprintln(w, sc.Text()); err != nil { // not an event: as it came
				return err
			}
			continue
		}
		if ev.Action == "output" {
			if _, err := io.WriteString(w, ev.Output); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read test events: %w", err)
	}
	return nil
}

// Quiet writes what go test prints without -v from a stream of events: a
// package's own lines (its ok or FAIL line, a build error, a panic), and a
// test's output only when the test failed, with its subtests', in the
// order it came, after the test ends; a passing test's output, the
// framing lines of -v (=== RUN and the like) and a bare PASS are left out.
// Lines that are not events are written as they came.
func Quiet(w io.Writer, r io.Reader) error {
	held := map[string][]string{} // package + top-level test → its output so far
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		var ev Event
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Action == "" {
			if _, err := fmt.Fprintln(w, sc.Text()); err != nil {
				return err
			}
			continue
		}
		top, _, _ := strings.Cut(ev.Test, "/")
		key := ev.Package + " " + top
		switch {
		case ev.Test == "" && (ev.Action == "output" || ev.Action == "build-output"):
			if ev.Output == "PASS\n" {
				continue
			}
			if strings.HasPrefix(ev.Output, "FAIL\t") {
				// the package's FAIL line comes after what its unended
				// tests printed, as go test prints it
				if err := flushUnended(w, held, ev.Package+" "); err != nil {
					return err
				}
			}
			if _, err := io.WriteString(w, ev.Output); err != nil {
				return err
			}
		case ev.Action == "output":
			if framing(ev.Output) {
				continue
			}
			held[key] = append(held[key], ev.Output)
		case (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip") && ev.Test == top:
			lines := held[key]
			delete(held, key)
			if ev.Action != "fail" {
				continue
			}
			if err := writeAll(w, lines); err != nil {
				return err
			}
		}
		if ev.Test == "" && (ev.Action == "pass" || ev.Action == "fail") {
			// the package ended: a test still holding output never ended
			// (the binary timed out or panicked, and its panic is that
			// test's output)
			if err := flushUnended(w, held, ev.Package+" "); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read test events: %w", err)
	}
	return flushUnended(w, held, "") // the stream ended before its packages (killed)
}

// flushUnended writes and forgets the held output of the tests whose key
// starts with prefix, in key order, each under a line that says it never
// ended.
func flushUnended(w io.Writer, held map[string][]string, prefix string) error {
	var keys []string
	for k := range held {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		pkg, test, _ := strings.Cut(k, " ")
		if _, err := fmt.Fprintf(w, "--- DID NOT END: %s (%s)\n", test, pkg); err != nil {
			return err
		}
		if err := writeAll(w, held[k]); err != nil {
			return err
		}
		delete(held, k)
	}
	return nil
}

func writeAll(w io.Writer, lines []string) error {
	for _, l := range lines {
		if _, err := io.WriteString(w, l); err != nil {
			return err
		}
	}
	return nil
}

// framing says whether a line is one of -v's own (a test run, paused,
// continued or named), which go test without -v does not print.
func framing(line string) bool {
	for _, p := range []string{"=== RUN ", "=== PAUSE ", "=== CONT ", "=== NAME "} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}
