package browser

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/svc-project/svc/testkit/browser"
	"github.com/svc-project/svc/testkit/testcluster"
)

// The API explorer in a real (headless) Chromium: Authorize takes the
// spec's "Bearer <token>", and "Try it out" on the node list answers 200
// with the node, from the peer that served the page.
func TestExplorer_browser_try_it_out(t *testing.T) {
	ctx := browser.New(t, 2*time.Minute)
	c := testcluster.New(t, 1, testcluster.Options{})
	m := c.Members[0]
	base := "http://" + m.Peer.APIAddr()
	op := "#operations-nodes-getNodes"
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/api/v1/swagger"),
		chromedp.WaitVisible(".swagger-ui .btn.authorize"),
		chromedp.Click(".swagger-ui .btn.authorize"),
		chromedp.WaitVisible(".auth-container input"),
		browser.Paste(".auth-container input", "Bearer "+c.Token("admin", true)),
		chromedp.Click(".auth-btn-wrapper .modal-btn.auth"),
		chromedp.Click(".auth-btn-wrapper .btn-done"),
		chromedp.Click(op+" .opblock-summary-control"),
		chromedp.WaitVisible(op+" .try-out__btn"),
		chromedp.Click(op+" .try-out__btn"),
		chromedp.WaitVisible(op+` tr[data-param-name="namespace"] input`),
		chromedp.SendKeys(op+` tr[data-param-name="namespace"] input`, "svc-default"),
		chromedp.Click(op+" .execute"),
		chromedp.WaitVisible(op+" .live-responses-table tbody .response-col_status"),
	)
	browser.Screenshot(t, ctx, "explorer-try-it-out")
	if err != nil {
		t.Fatal(err)
	}
	status, err := chromedp.Run(ctx, chromedp.Text(op+" .live-responses-table tbody .response-col_status"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := chromedp.Run(ctx, chromedp.Text(op+" .live-responses-table .response-col_description pre"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(status, "200") || !strings.Contains(body, `"name": "`+m.Name+`"`) {
		t.Fatalf("try it out answered %q:\n%s", status, body)
	}
}
