package testreport

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// A stream as go test -json writes it: a test with a subtest, a test run
// twice (-count=2), and two benchmarks, which test2json gives no pass line.
const stream = `{"Time":"2026-12-07T10:00:00Z","Action":"start","Package":"p"}
{"Time":"2026-12-07T10:00:00Z","Action":"run","Package":"p","Test":"TestA"}
{"Time":"2026-12-07T10:00:00Z","Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Time":"2026-12-07T10:00:01Z","Action":"run","Package":"p","Test":"TestA/sub"}
{"Time":"2026-12-07T10:00:03Z","Action":"pass","Package":"p","Test":"TestA/sub","Elapsed":2}
{"Time":"2026-12-07T10:00:03Z","Action":"pass","Package":"p","Test":"TestA","Elapsed":3}
{"Time":"2026-12-07T10:00:03Z","Action":"run","Package":"p","Test":"TestB"}
{"Time":"2026-12-07T10:00:04Z","Action":"fail","Package":"p","Test":"TestB","Elapsed":1}
{"Time":"2026-12-07T10:00:04Z","Action":"run","Package":"p","Test":"TestB"}
{"Time":"2026-12-07T10:00:09Z","Action":"pass","Package":"p","Test":"TestB","Elapsed":5}
not an event: a build error
{"Time":"2026-12-07T10:00:10Z","Action":"run","Package":"p","Test":"BenchmarkX"}
{"Time":"2026-12-07T10:00:10Z","Action":"output","Package":"p","Test":"BenchmarkX","Output":"BenchmarkX-2 1 5 ns/op\n"}
{"Time":"2026-12-07T10:01:50Z","Action":"run","Package":"p","Test":"BenchmarkY"}
{"Time":"2026-12-07T10:01:52Z","Action":"output","Package":"p","Output":"PASS\n"}
{"Time":"2026-12-07T10:01:52Z","Action":"pass","Package":"p","Elapsed":112}
`

func TestTimings_tests_and_benchmarks(t *testing.T) {
	evs, err := Read(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Timing{}
	for _, tm := range Timings(evs) {
		got[tm.Test] = tm
	}
	for _, c := range []struct {
		test   string
		took   time.Duration
		failed bool
	}{
		{"TestA", 3 * time.Second, false},
		{"TestA/sub", 2 * time.Second, false},
		{"TestB", time.Second, true}, // the first of -count's runs
		{"BenchmarkX", 100 * time.Second, false},
		{"BenchmarkY", 2 * time.Second, false},
	} {
		if tm, ok := got[c.test]; !ok || tm.Took != c.took || tm.Failed != c.failed {
			t.Errorf("%s: %+v (found %v), want %s failed=%v", c.test, tm, ok, c.took, c.failed)
		}
	}
	top := Slowest(Timings(evs), 2)
	if len(top) != 2 || top[0].Test != "BenchmarkX" || top[1].Test != "TestA" {
		t.Fatalf("slowest two: %+v", top)
	}
}

func TestOutput_prints_what_tests_printed(t *testing.T) {
	var out bytes.Buffer
	if err := Output(&out, strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	want := "=== RUN   TestA\nnot an event: a build error\nBenchmarkX-2 1 5 ns/op\nPASS\n"
	if out.String() != want {
		t.Fatalf("output:\n%q\nwant\n%q", out.String(), want)
	}
}

// A failed test's output is shown with its subtests', after it ends; a
// passing test's is not, nor -v's framing or a bare PASS; the package's
// lines are.
func TestQuiet_shows_what_go_test_shows(t *testing.T) {
	const failing = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestOK"}
{"Action":"output","Package":"p","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"p","Test":"TestOK","Output":"    a_test.go:1: chatter\n"}
{"Action":"output","Package":"p","Test":"TestOK","Output":"--- PASS: TestOK (0.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestOK"}
{"Action":"run","Package":"p","Test":"TestBad"}
{"Action":"output","Package":"p","Test":"TestBad","Output":"=== RUN   TestBad\n"}
{"Action":"run","Package":"p","Test":"TestBad/sub"}
{"Action":"output","Package":"p","Test":"TestBad/sub","Output":"=== RUN   TestBad/sub\n"}
{"Action":"output","Package":"p","Test":"TestBad/sub","Output":"    a_test.go:9: broke\n"}
{"Action":"output","Package":"p","Test":"TestBad/sub","Output":"    --- FAIL: TestBad/sub (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestBad/sub"}
{"Action":"output","Package":"p","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestBad"}
{"Action":"output","Package":"p","Output":"FAIL\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}
{"Action":"fail","Package":"p"}
{"Action":"output","Package":"q","Output":"PASS\n"}
{"Action":"output","Package":"q","Output":"ok  \tq\t0.01s\n"}
`
	var out bytes.Buffer
	if err := Quiet(&out, strings.NewReader(failing)); err != nil {
		t.Fatal(err)
	}
	want := "    a_test.go:9: broke\n    --- FAIL: TestBad/sub (0.00s)\n--- FAIL: TestBad (0.00s)\nFAIL\nFAIL\tp\t0.01s\nok  \tq\t0.01s\n"
	if out.String() != want {
		t.Fatalf("quiet output:\n%s\nwant\n%s", out.String(), want)
	}
}

// testdata/timeout.json is what go test -json -timeout 2s printed for a
// package of three tests: TestA passes, TestB fails, and TestHang waits
// on a goroutine it started until the binary's timeout panics.
func readTimeout(t *testing.T) []Event {
	t.Helper()
	f, err := os.Open("testdata/timeout.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestQuiet_prints_a_test_the_timeout_stopped(t *testing.T) {
	f, err := os.Open("testdata/timeout.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	if err := Quiet(&out, f); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"want 2, got 3", "--- DID NOT END: TestHang (tt)", "a_test.go:6: before", "panic: test timed out after 2s", "tt.TestHang"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	if strings.Index(got, "DID NOT END") > strings.Index(got, "FAIL\ttt") {
		t.Errorf("the package's FAIL line before the panic:\n%s", got)
	}
	if strings.Contains(got, "a_test.go:3: hi") {
		t.Errorf("a passing test's output printed:\n%s", got)
	}
}

func TestTimings_a_test_the_timeout_stopped(t *testing.T) {
	got := map[string]Timing{}
	for _, tm := range Timings(readTimeout(t)) {
		got[tm.Test] = tm
	}
	for _, c := range []struct {
		test            string
		failed, unended bool
	}{
		{"TestA", false, false},
		{"TestB", true, false},
		{"TestHang", true, true},
	} {
		if tm, ok := got[c.test]; !ok || tm.Failed != c.failed || tm.Unended != c.unended {
			t.Errorf("%s: %+v (found %v), want failed=%v unended=%v", c.test, tm, ok, c.failed, c.unended)
		}
	}
}

func TestFailures_name_the_test_and_where_it_waits(t *testing.T) {
	fs := Failures(readTimeout(t), "tt")
	if len(fs) != 2 {
		t.Fatalf("%d failures, want TestB and TestHang: %+v", len(fs), fs)
	}
	if fs[0].Test != "TestB" || fs[0].Unended || strings.Join(fs[0].Why, "\n") != "    a_test.go:4: want 2, got 3" {
		t.Errorf("TestB: %+v", fs[0])
	}
	why := strings.Join(fs[1].Why, "\n")
	if fs[1].Test != "TestHang" || !fs[1].Unended {
		t.Errorf("TestHang: %+v", fs[1])
	}
	for _, want := range []string{
		"a_test.go:6: before",            // what it printed
		"panic: test timed out after 2s", // why it stopped
		"sync.(*WaitGroup).Wait",         // where the test waits
		"tt.TestHang",                    // its own frame
		"tt.waitForever",                 // and the goroutine it started
	} {
		if !strings.Contains(why, want) {
			t.Errorf("no %q in:\n%s", want, why)
		}
	}
	if strings.Contains(why, "testing.(*M).startAlarm") || strings.Contains(why, "main.main") {
		t.Errorf("goroutines that are not the test's:\n%s", why)
	}
}
