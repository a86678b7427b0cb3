package browser

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// Require returns the Chromium binary, skipping the test without one
// unless SVC_REQUIRE_BROWSER=1 (make test) makes that a failure.
func Require(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("SVC_REQUIRE_BROWSER") == "1" {
		t.Fatal("no chromium (SVC_REQUIRE_BROWSER=1): scripts/install-deps.sh installs it")
	}
	t.Skip("no chromium: scripts/install-deps.sh installs it")
	return ""
}

// New starts a headless Chromium for the test and returns a context that
// drives a tab of it, ending after timeout; the browser stops with the test.
func New(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	bin := Require(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // tests run as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 1600),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	w := newWatcher()
	bctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(w.event))
	t.Cleanup(func() { cancel(); acancel() })
	// The browser lives as long as the context of its first Run: started
	// here, without the deadline, it outlives a wait that ran out, so the
	// screenshot of the failure can still be taken (Screenshot).
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, tcancel := context.WithTimeout(context.WithValue(bctx, watcherKey{}, w), timeout)
	t.Cleanup(tcancel)
	return ctx
}

// screenshotTimeout bounds a screenshot.
const screenshotTimeout = 30 * time.Second

// Screenshot saves a full-page screenshot as build/artifacts/<name>.png and
// returns its path. It is taken even when ctx's deadline has passed (a
// failed wait's screenshot is the one that says why), in the same tab.
func Screenshot(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), screenshotTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	return Save(t, name, png)
}

// Save keeps a PNG as build/artifacts/<name>.png and returns its path.
func Save(t testing.TB, name string, png []byte) string {
	t.Helper()
	_, src, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(src), "..", "..", "build", "artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
	return p
}

// TextRows reads a screenshot of a screen of light text on a dark ground
// (a console) and returns how many bands of rows hold lit pixels, and the
// share of pixels that are lit: a black or blank screen has no bands.
func TextRows(pngData []byte) (bands int, lit float64, err error) {
	img, err := png.Decode(bytes.NewReader(pngData))
	if err != nil {
		return 0, 0, err
	}
	b := img.Bounds()
	litPixels, inBand := 0, false
	for y := b.Min.Y; y < b.Max.Y; y++ {
		row := 0
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if (r+g+bl)/3 > 0x6000 {
				row++
			}
		}
		litPixels += row
		switch {
		case row > 0 && !inBand:
			bands, inBand = bands+1, true
		case row == 0:
			inBand = false
		}
	}
	return bands, float64(litPixels) / float64(b.Dx()*b.Dy()), nil
}

// Step runs what's actions in the tab of ctx; when they fail, it saves a
// screenshot (<test>-failed) and ends the test with the error and what the
// page showed then: its address and the text of its .error elements.
func Step(t testing.TB, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	began := time.Now()
	err := chromedp.Do(ctx, actions...)
	if err == nil {
		t.Logf("%s: %s", what, time.Since(began).Round(time.Millisecond))
		return
	}
	Screenshot(t, ctx, strings.ReplaceAll(t.Name(), "/", "-")+"-failed")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), screenshotTimeout)
	defer cancel()
	page, perr := chromedp.Run(sctx, chromedp.Evaluate[string](`location.href + " " + JSON.stringify([...document.querySelectorAll(".error")].map((e) => e.textContent).filter((s) => s))`))
	if perr != nil {
		page = "(unread: " + perr.Error() + ")"
	}
	t.Fatalf("%s: %v; the page: %s%s", what, err, page, report(ctx))
}

// Paste puts text into the field sel as a person pasting it does: the field
// focused, the text inserted at once (the page sees its input events). A
// token typed key by key (SendKeys: three DevTools calls a character) took
// most of two minutes in a Chromium starved of CPU (CI).
func Paste(sel, text string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		if _, err := chromedp.Focus(sel)(ctx, tg); err != nil {
			return chromedp.Void{}, err
		}
		_, err := cdp.Call(ctx, tg, input.InsertText, input.InsertTextParams{Text: text})
		return chromedp.Void{}, err
	}
}
