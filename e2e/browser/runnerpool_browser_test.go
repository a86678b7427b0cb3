package browser

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/browser"
)

// The web UI's runner pool view, in headless Chromium, once the pool ran
// its jobs: its VMs, done jobs and start times as the API reports them.
func TestWebUI_runner_pools_view(t *testing.T) {
	r := kit.NewPoolRig(t, 1, time.Hour)
	admin := r.SetUp(t, 2)
	r.GitHub.Queue(context.Background(), "acme/app", false, []string{"svc-linux"}, []string{"svc-linux"}, []string{"svc-linux"})
	r.WaitDone(t, admin, 3, time.Minute)
	// The browser's deadline starts once the pool is done: on a busy
	// machine the jobs alone have taken most of two minutes.
	bctx := browser.New(t, 2*time.Minute)
	m := r.Cluster.WaitLeader()
	browser.Step(t, bctx, "the sign-in page", chromedp.Navigate("http://"+m.Peer.APIAddr()+"/ui/"), chromedp.WaitVisible("#signin-form"))
	browser.Step(t, bctx, "sign in", browser.Paste("#token", r.Cluster.Token("admin", true)), chromedp.Click("#signin-form button"), chromedp.WaitVisible("#app"))
	browser.Step(t, bctx, "the runner pools view", uiView("runnerpools"), chromedp.WaitVisible(`tr[data-pool="ci"]`))
	waitJS(t, r.Cluster, bctx, "the pool's row", `document.querySelector('tr[data-pool="ci"]').textContent.includes("0 / 2") && document.querySelector('tr[data-pool="ci"]').children[6].textContent === "3"`, 10*time.Second)
	browser.Screenshot(t, bctx, "webui-runnerpools")
}
