package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/browser"
	"github.com/svc-project/svc/testkit/testcluster"
)

// waitJS polls a JavaScript condition in the page until it is true.
func waitJS(t *testing.T, c *testcluster.Cluster, ctx context.Context, what, expr string, timeout time.Duration) {
	t.Helper()
	c.WaitFor(what, timeout, func() error {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("not yet: %s", expr)
		}
		return nil
	})
}

// uiView shows a view of the UI: a fragment of the page, so changing it is
// no navigation to wait for.
func uiView(name string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[string](`location.hash = "`+name+`"`)(ctx, tg)
		return chromedp.Void{}, err
	}
}

// The web UI in headless Chromium, served by the peer that does not host
// the VM: the sign-in page without a token; the node; a deploy of
// mini-linux from the form until it runs; its console with text on the
// canvas, where typed keys log in and run a command; the VM deleted; and a
// token of another namespace that sees none of it.
func TestWebUI_browser(t *testing.T) {
	ctx := browser.New(t, 8*time.Minute)
	c, _ := kit.LibvirtCluster(t, "lvweb", 27)
	host, other := c.Members[0], c.Members[1]
	ui := "http://" + other.Peer.APIAddr() + "/ui/"
	began := time.Now()
	shot := func(name string) {
		t.Logf("%s after %s", name, time.Since(began).Round(time.Second))
		browser.Screenshot(t, ctx, "webui-"+name)
	}
	browser.Step(t, ctx, "the sign-in page", chromedp.Navigate(ui), chromedp.WaitVisible("#signin-form"))
	shot("signin")
	browser.Step(t, ctx, "sign in", browser.Paste("#token", c.Token("admin", true)), chromedp.Click("#signin-form button"),
		chromedp.WaitVisible("#app"), uiView("nodes"), chromedp.WaitVisible(`tr[data-node="`+host.Name+`"]`))
	shot("nodes")

	// The form's shared storage box: the namespace's shared storage on first.
	if _, err := c.Client(host).SetSharedStorage(context.Background(), kit.NS, 1<<30); err != nil {
		t.Fatal(err)
	}
	browser.Step(t, ctx, "deploy from the form", uiView("vms"), chromedp.WaitVisible("#deploy-form"),
		chromedp.SendKeys(`#deploy-form input[name="name"]`, "ui-vm"),
		chromedp.Click(`#deploy-form input[name="sharedStorage"]`),
		chromedp.SetValue(`#deploy-form select[name="image"]`, "mini-linux"),
		chromedp.SendKeys(`#deploy-form input[name="cpu"]`, "1"),
		chromedp.SendKeys(`#deploy-form input[name="memory"]`, "0.25"),
		chromedp.SendKeys(`#deploy-form input[name="node"]`, host.Name),
		chromedp.Click(`#deploy-form details summary`),
		chromedp.SendKeys(`#deploy-form input[name="ttl"]`, "2h"),
		chromedp.SendKeys(`#deploy-form textarea[name="customMetadata"]`, "owner=web"),
		chromedp.WaitVisible(`#deploy-form input[name="reservedPorts"]`))
	shot("deploy-form")
	browser.Step(t, ctx, "submit the form", chromedp.Click(`#deploy-form button[type="submit"]`))
	waitJS(t, c, ctx, "the VM Running in the page", `!!document.querySelector('tr[data-vm="ui-vm"] td[data-status="Running"]')`, 4*time.Minute)
	shot("vm-running")
	vm, err := c.Client(host).GetVM(context.Background(), kit.NS, "ui-vm")
	if err != nil {
		t.Fatal(err)
	}
	kit.GuestRun(t, c, vm, "true") // booted
	if vm.CustomMetadata["owner"] != "web" || vm.ExpiresAt == nil || time.Until(*vm.ExpiresAt) < 110*time.Minute {
		t.Fatalf("the form's metadata and ttl: the VM has %v, expires at %v", vm.CustomMetadata, vm.ExpiresAt)
	}
	if !vm.SharedStorage || !strings.Contains(kit.GuestRun(t, c, vm, "cat /proc/mounts"), " /shared 9p ") {
		t.Fatalf("the form's shared storage box: the VM says sharedStorage %v, its mounts lack /shared", vm.SharedStorage)
	}

	browser.Step(t, ctx, "open the console", chromedp.Click(`tr[data-vm="ui-vm"] button[data-action="console"]`), chromedp.WaitVisible("#console canvas"))
	waitJS(t, c, ctx, "the console connected", `document.querySelector("#console-status").textContent === "connected"`, time.Minute)
	// What a person sees: the canvas laid out at least the guest's text
	// mode (720x400) on the page, and a screenshot of that rectangle of the
	// page (not the canvas's data) with lines of text on it.
	waitJS(t, c, ctx, "the canvas laid out at the guest's size or more", `(r => r.width >= 720 && r.height >= 400)(document.querySelector("#console canvas").getBoundingClientRect())`, time.Minute)
	c.WaitFor("the guest's text in a screenshot of the console", time.Minute, func() error {
		png, err := chromedp.Run(ctx, chromedp.Screenshot("#console canvas"))
		if err != nil {
			return err
		}
		bands, lit, err := browser.TextRows(png)
		if err != nil {
			return err
		}
		browser.Save(t, "webui-console-canvas", png)
		if bands < 3 || lit < 0.002 {
			return fmt.Errorf("%d lines of lit pixels, %.4f of the pixels lit", bands, lit)
		}
		return nil
	})
	shot("console")
	typeLine := func(s string) { browser.Step(t, ctx, "type "+s, chromedp.SendKeys("#console canvas", s+"\r")) }
	tty1 := func(what, pattern string) {
		c.WaitFor(what, time.Minute, func() error {
			if out := kit.GuestRun(t, c, vm, "ps -o tty,args 2>/dev/null || ps"); !strings.Contains(out, pattern) {
				return fmt.Errorf("not yet:\n%s", out)
			}
			return nil
		})
	}
	// The screen's pixels, summed: typing must change them (the echo).
	const screenSum = `(() => {
		const cv = document.querySelector("#console canvas");
		const d = cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data;
		let s = 0;
		for (let i = 0; i < d.length; i += 4) s = (s * 31 + d[i] + d[i+1] + d[i+2]) % 1000000007;
		return s;
	})()`
	before, err := chromedp.Run(ctx, chromedp.Evaluate[float64](screenSum))
	if err != nil {
		t.Fatal(err)
	}
	typeLine("admin")
	waitJS(t, c, ctx, "the typed line echoed on the canvas", screenSum+` !== `+fmt.Sprint(before), 30*time.Second)
	tty1("login asks for the password", "login")
	typeLine("admin")
	tty1("a shell on tty1", "-sh")
	typeLine("touch /tmp/typed")
	c.WaitFor("the typed command ran", time.Minute, func() error {
		if out := kit.GuestRun(t, c, vm, "test -e /tmp/typed && echo yes || echo no"); strings.TrimSpace(out) != "yes" {
			return fmt.Errorf("/tmp/typed: %q", out)
		}
		return nil
	})
	shot("console-typed")

	browser.Step(t, ctx, "delete the VM", uiView("vms"), chromedp.WaitVisible(`tr[data-vm="ui-vm"]`))
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(window.confirm = () => true, true)`)); err != nil {
		t.Fatal(err)
	}
	browser.Step(t, ctx, "click delete", chromedp.Click(`tr[data-vm="ui-vm"] button[data-action="delete"]`))
	waitJS(t, c, ctx, "the VM gone from the page", `!document.querySelector('tr[data-vm="ui-vm"]')`, time.Minute)
	// Its shared folder leaves the host once the namespace's storage is off
	// (and the test's data dir holds no mount).
	if err := c.Client(host).DisableSharedStorage(context.Background(), kit.NS); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the shared folder gone from the host", 2*time.Minute, func() error {
		if _, err := os.Stat(filepath.Join(host.DataDir, "shared", kit.NS)); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})

	// A service account of another namespace sees none of svc-default.
	cl := c.Client(host)
	if _, err := cl.CreateNamespace(context.Background(), "team-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateServiceAccount(context.Background(), "team-b", "bot"); err != nil {
		t.Fatal(err)
	}
	tok, err := cl.ServiceAccountToken(context.Background(), "team-b", "bot", api.TokenRequest{Duration: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	kit.RealDeploy(t, c, api.DeployRequest{Image: "mini-linux", Name: "private", Node: host.Name})
	browser.Step(t, ctx, "sign in as team-b", chromedp.Click("#signout"), chromedp.WaitVisible("#signin-form"),
		browser.Paste("#token", tok.Token), chromedp.Click("#signin-form button"), chromedp.WaitVisible("#app"),
		uiView("vms"))
	waitJS(t, c, ctx, "a refusal shown", `document.querySelector("#error").textContent.includes("is not bound")`, 30*time.Second)
	if found, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.querySelector('tr[data-vm="private"]')`)); err != nil || found {
		t.Fatalf("another namespace's token sees the VM (%v)", err)
	}
	shot("other-namespace")
}
