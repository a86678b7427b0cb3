package browser

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/browser"
)

// The web UI's VM configs view, in headless Chromium: where a hot config's
// template is ready and its node's pool, all ready.
func TestWebUI_hot_pool_view(t *testing.T) {
	c, m, _ := kit.HotRig(t, 2)
	bctx := browser.New(t, 2*time.Minute)
	if err := chromedp.Do(bctx, chromedp.Navigate("http://"+m.Peer.APIAddr()+"/ui/"), chromedp.WaitVisible("#signin-form"),
		browser.Paste("#token", c.Token("admin", true)), chromedp.Click("#signin-form button"), chromedp.WaitVisible("#app"),
		uiView("vmconfigs"), chromedp.WaitVisible(`tr[data-config="ci"]`)); err != nil {
		browser.Screenshot(t, bctx, "webui-hotpool-failed")
		t.Fatal(err)
	}
	want := m.Name + ": 2/2 ready"
	waitJS(t, c, bctx, "the config's row", fmt.Sprintf(`document.querySelector('tr[data-config="ci"]').children[5].textContent === %q && document.querySelector('tr[data-config="ci"]').children[6].textContent === %q`, m.Name, want), 10*time.Second)
	browser.Screenshot(t, bctx, "webui-hotpool")
}
