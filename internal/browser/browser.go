package browser

import (
	"context"
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

// Screenshot saves a full-page screenshot as build/artifacts/<name>.png and
// returns its path.
func Screenshot(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return ""
	}
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
