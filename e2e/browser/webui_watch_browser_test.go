package browser

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/browser"
	"github.com/svc-project/svc/testkit/testcluster"
)

// uiRequests counts the requests the page has completed (the resource
// timing entries; a watch stream, still open, is not one yet).
const uiRequests = `performance.getEntriesByType("resource").filter(e => e.name.includes("/api/v1/")).length`

// The web UI in headless Chromium keeps its views current from the API's
// watch streams: a VM deployed through the API shows Running within a
// second of the deploy's answer, and the page makes no request meanwhile
// (it does not poll); a node cordoned through the API shows as such.
func TestWebUI_browser_watch(t *testing.T) {
	ctx := browser.New(t, 3*time.Minute)
	c := testcluster.New(t, 2, testcluster.Options{})
	c.WaitLeader()
	m := c.Members[1]
	admin := c.Client(m)
	kit.TinyVM(t, admin, "seed", "")
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			browser.Screenshot(t, ctx, "webui-watch-failed")
			t.Fatalf("%s: %v", what, err)
		}
	}
	do("sign in", chromedp.Navigate("http://"+m.Peer.APIAddr()+"/ui/"), chromedp.WaitVisible("#signin-form"),
		browser.Paste("#token", c.Token("admin", true)), chromedp.Click("#signin-form button"),
		chromedp.WaitVisible("#app"), uiView("vms"), chromedp.WaitVisible(`tr[data-vm="seed"]`))
	// The page's own reads are done: the namespaces it offers are filled.
	waitJS(t, c, ctx, "the namespaces read", `document.querySelectorAll("#namespaces option").length > 0`, 10*time.Second)
	count := func() float64 {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[float64](uiRequests))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	settled := count()

	deployCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := admin.DeployVM(deployCtx, kit.NS, api.DeployRequest{Name: "api-vm", Image: "tiny", CPU: kit.Intp(1)}); err != nil {
		t.Fatal(err)
	}
	answered := time.Now()
	waitJS(t, c, ctx, "the API's VM Running in the page", `!!document.querySelector('tr[data-vm="api-vm"] td[data-status="Running"]')`, 10*time.Second)
	shown := time.Since(answered)
	t.Logf("the VM showed Running %s after the deploy answered", shown.Round(time.Millisecond))
	if shown > time.Second {
		t.Fatalf("the VM showed %s after the deploy answered, more than a second", shown)
	}
	browser.Screenshot(t, ctx, "webui-watch-vms")
	// Nothing asked for it, and nothing polls: the page's requests are the
	// ones it had made before, some seconds later still.
	idle := time.NewTimer(time.Until(answered.Add(3 * time.Second)))
	<-idle.C // a span of time is what is measured here, not a condition
	if n := count(); n != settled {
		t.Fatalf("the page made %v requests while it showed the deploy and idled (it polls)", n-settled)
	}

	target := c.Members[0].Name
	if _, err := admin.CordonNode(deployCtx, kit.NS, target); err != nil {
		t.Fatal(err)
	}
	do("the nodes view", uiView("nodes"), chromedp.WaitVisible(`tr[data-node="`+target+`"]`))
	waitJS(t, c, ctx, "the cordoned node shown", `!!document.querySelector('tr[data-node="`+target+`"] td[data-scheduling="cordoned"]')`, 10*time.Second)
	browser.Screenshot(t, ctx, "webui-watch-nodes")
}
