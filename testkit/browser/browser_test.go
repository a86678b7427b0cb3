package browser

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// A wait that ran out of time still gets its screenshot, of the same tab.
func TestScreenshot_after_the_deadline(t *testing.T) {
	ctx := New(t, 2*time.Minute)
	if err := chromedp.Do(ctx, chromedp.Navigate(`data:text/html,<h1 id="x">kept</h1>`)); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	<-short.Done()
	p := Screenshot(t, short, "browser-after-the-deadline")
	if p == "" {
		t.Fatal("no screenshot after the deadline")
	}
	st, err := os.Stat(p)
	if err != nil || st.Size() < 1000 {
		t.Fatalf("screenshot %s: %v %v", p, st, err)
	}
}
