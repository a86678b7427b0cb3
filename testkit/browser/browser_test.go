package browser

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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
