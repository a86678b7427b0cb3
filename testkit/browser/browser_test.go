package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/svc-project/svc/testkit/poll"
)

// A wait that ran out of the browser's own deadline (New's) still gets its
// screenshot, of the same tab: the browser outlives that deadline.
func TestScreenshot_after_the_deadline(t *testing.T) {
	ctx := New(t, 5*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(`data:text/html,<h1 id="x">kept</h1>`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#never")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a wait for what never shows: %v, want the deadline", err)
	}
	p := Screenshot(t, ctx, "browser-after-the-deadline")
	if p == "" {
		t.Fatal("no screenshot after the deadline")
	}
	st, err := os.Stat(p)
	if err != nil || st.Size() < 1000 {
		t.Fatalf("screenshot %s: %v %v", p, st, err)
	}
}

// A failed step's report names what the page still waits for (a request
// the server never answers) and what the page said (its console, a failed
// request, an uncaught exception).
func TestReport_names_requests_in_flight_and_the_pages_messages(t *testing.T) {
	ctx := New(t, 30*time.Second)
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/never":
			select { // an answer that never comes, until the test ends
			case <-stop:
			case <-r.Context().Done():
			}
		case "/gone":
			http.Error(w, "no", http.StatusNotFound)
		default:
			_, _ = io.WriteString(w, `<p id="p">page</p><script>console.log("hello", 42); fetch("/never"); import("/gone.js"); throw new Error("boom");</script>`)
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	want := []string{"requests in flight: 1", srv.URL + "/never", `console.log: "hello" 42`, "boom", "gone.js"}
	poll.For(t, "the report", 20*time.Second, func() error {
		got := report(ctx)
		for _, w := range want {
			if !strings.Contains(got, w) {
				return fmt.Errorf("the report lacks %q:%s", w, got)
			}
		}
		return nil
	})
}
