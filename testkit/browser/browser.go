package browser

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

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
	ctx, cancel := chromedp.NewContext(actx)
	ctx, tcancel := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() { tcancel(); cancel(); acancel() })
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
