package browser

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/browser"
	"github.com/svc-project/svc/testkit/oidcnode"
	"github.com/svc-project/svc/testkit/oidcprovider"
	"github.com/svc-project/svc/testkit/testcluster"
)

// The web UI's "Sign in with corp" in headless Chromium: the provider's own
// sign-in page filled in, back to the UI signed in as the person (role and
// namespaces from their groups); an answer this tab did not ask for is
// refused.
func TestWebUI_signs_in_through_the_provider(t *testing.T) {
	ctx := browser.New(t, 3*time.Minute)
	op := oidcprovider.Start(t, kit.People, "http://127.0.0.1/ui/callback")
	c := testcluster.New(t, 1, testcluster.Options{})
	m := c.WaitLeader()
	admin := c.Client(m)
	kit.SetProvider(t, admin, op)
	if _, err := admin.CreateNamespace(ctx, "team-dev"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AddSubjects(ctx, "team-dev", api.Subjects{Groups: []string{"dev"}}); err != nil {
		t.Fatal(err)
	}
	ui := "http://" + m.Peer.APIAddr() + "/ui"
	shot := func(name string) { browser.Screenshot(t, ctx, "webui-signin-"+name) }
	browser.Step(t, ctx, "the sign-in page offers the provider", chromedp.Navigate(ui), chromedp.WaitVisible(`button[data-provider="corp"]`))
	shot("page")
	browser.Step(t, ctx, "to the provider's page", chromedp.Click(`button[data-provider="corp"]`), chromedp.WaitVisible("#username"))
	if url, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`)); err != nil || !strings.HasPrefix(url, op.Issuer) {
		t.Fatalf("the browser is at %q (%v), not the provider", url, err)
	}
	shot("provider")
	browser.Step(t, ctx, "sign in at the provider", chromedp.SendKeys("#username", "alice"), chromedp.SendKeys("#password", "alice-pw"),
		chromedp.Click(`button[type="submit"]`), chromedp.WaitVisible("#app"))
	waitJS(t, c, ctx, "who is signed in", `document.querySelector("#whoami").textContent === "alice@example.com (user)"`, 10*time.Second)
	// Her group's namespace opens; the address bar holds no code.
	browser.Step(t, ctx, "her group's namespace", chromedp.SetValue("#namespace", "team-dev"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#namespace").dispatchEvent(new Event("change"))`), uiView("vms"), chromedp.WaitVisible("#deploy-form"))
	waitJS(t, c, ctx, "no error in team-dev", `document.querySelector("#error").textContent === "" && location.pathname === "/ui" && !location.search`, 10*time.Second)
	shot("signed-in")
	tok, err := chromedp.Run(ctx, chromedp.Evaluate[string](`sessionStorage.getItem("svc-token")`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.NewClient("http://"+m.Peer.APIAddr(), tok).ListVMs(ctx, "team-dev"); err != nil {
		t.Fatalf("the UI's token in team-dev: %v", err)
	}

	// An answer of a sign-in this tab did not start is refused.
	browser.Step(t, ctx, "sign out", chromedp.Click("#signout"), chromedp.WaitVisible(`button[data-provider="corp"]`))
	browser.Step(t, ctx, "a forged answer", chromedp.Navigate(ui+"/callback?code=stolen&state=forged"))
	browser.Step(t, ctx, "the sign-in page again", chromedp.WaitVisible("#signin-form"))
	waitJS(t, c, ctx, "the refusal", `document.querySelector("#provider-error").textContent.includes("not of a sign-in this tab started")`, 10*time.Second)
	shot("forged")
}

// The web UI through the second provider (Node.js oidc-provider with its
// defaults: claims from UserInfo, iss in the answer): its own login and
// consent pages in Chromium, back to the UI signed in with the group's
// role; the code verifier never in an address.
func TestWebUI_signs_in_through_a_certified_provider(t *testing.T) {
	ctx := browser.New(t, 3*time.Minute)
	op := oidcnode.Start(t, []oidcnode.Person{{Username: "alice", Email: "alice@corp.example", Groups: []string{"dev"}}}, "http://127.0.0.1/ui/callback")
	c := testcluster.New(t, 1, testcluster.Options{})
	m := c.WaitLeader()
	admin := c.Client(m)
	if _, err := admin.SetOIDCProvider(ctx, "node", api.OIDCProviderRequest{Issuer: op.Issuer, ClientID: op.ClientID, ClientSecret: op.ClientSecret,
		Scopes: []string{"openid", "email", "profile", "groups"}, AllowedGroups: []string{"dev"}}); err != nil {
		t.Fatal(err)
	}
	ui := "http://" + m.Peer.APIAddr() + "/ui"
	shot := func(name string) { browser.Screenshot(t, ctx, "webui-signin-node-"+name) }
	browser.Step(t, ctx, "the sign-in page offers the provider", chromedp.Navigate(ui), chromedp.WaitVisible(`button[data-provider="node"]`))
	browser.Step(t, ctx, "to the provider's login page", chromedp.Click(`button[data-provider="node"]`), chromedp.WaitVisible(`input[name="login"]`))
	if url, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`)); err != nil || strings.Contains(url, "code_verifier") {
		t.Fatalf("the browser is at %q (%v)", url, err)
	}
	shot("provider")
	browser.Step(t, ctx, "sign in at the provider", chromedp.SendKeys(`input[name="login"]`, "alice"), chromedp.SendKeys(`input[name="password"]`, "any"),
		chromedp.Click(`button[type="submit"]`), chromedp.WaitVisible(`button[type="submit"]`))
	shot("consent")
	browser.Step(t, ctx, "consent", chromedp.Click(`button[type="submit"]`), chromedp.WaitVisible("#app"))
	waitJS(t, c, ctx, "who is signed in", `document.querySelector("#whoami").textContent === "alice@corp.example (user)"`, 10*time.Second)
	shot("signed-in")
}
