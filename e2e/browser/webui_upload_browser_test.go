package browser

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/browser"
	"github.com/svc-project/svc/testkit/registrytest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// The web UI's images view uploads a disk (the bytes arrive whole: same
// digest) showing its progress, and the jobs view shows a push job that the
// API started, with its state.
func TestWebUI_browser_upload_and_jobs(t *testing.T) {
	ctx := browser.New(t, 3*time.Minute)
	reg := registrytest.Start(t, registrytest.Options{})
	c := testcluster.New(t, 1, testcluster.Options{})
	ui := "http://" + c.Members[0].Peer.APIAddr() + "/ui/"
	disk := filepath.Join(t.TempDir(), "disk.raw")
	data := make([]byte, 16<<20)
	_, _ = rand.Read(data[:1<<20])
	if err := os.WriteFile(disk, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			browser.Screenshot(t, ctx, "webui-upload-failed")
			t.Fatalf("%s: %v", what, err)
		}
	}
	do("sign in", chromedp.Navigate(ui+"#images"), chromedp.WaitVisible("#signin-form"),
		browser.Paste("#token", c.Token("admin", true)), chromedp.Click("#signin-form button"),
		chromedp.WaitVisible(`#view input[type="file"]`))
	do("upload", chromedp.SendKeys(`#view form input[name="name"]`, "uploaded"),
		chromedp.SetUploadFiles(`#view input[type="file"]`, []string{disk}),
		chromedp.Click(`#view form button`))
	waitJS(t, c, ctx, "the image listed", `[...document.querySelectorAll("#view td")].some((td) => td.textContent === "uploaded")`, time.Minute)
	if max, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.querySelector("#view progress").max`)); err != nil || max < float64(len(data)) {
		t.Errorf("the upload's progress bar went to %v of %d bytes (%v)", max, len(data), err)
	}
	cl := c.Client(c.Members[0])
	img, err := cl.GetImage(context.Background(), kit.NS, "uploaded")
	if err != nil || img.Digest != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("uploaded image %+v %v", img, err)
	}
	browser.Screenshot(t, ctx, "webui-images")

	if _, err := cl.SetRegistryCredential(context.Background(), kit.NS, api.RegistryCredentialRequest{Server: reg.Host, Username: reg.Username, Password: reg.Password, AllowInsecure: true}); err != nil {
		t.Fatal(err)
	}
	job, err := cl.PushImage(context.Background(), kit.NS, "uploaded", reg.Host+"/ui/uploaded:1")
	if err != nil {
		t.Fatal(err)
	}
	do("the jobs view", uiView("jobs"))
	waitJS(t, c, ctx, "the push job Succeeded in the page", `[...document.querySelectorAll("#view tr")].some((tr) => tr.textContent.includes("`+job.JobName+`") && tr.textContent.includes("Succeeded"))`, time.Minute)
	browser.Screenshot(t, ctx, "webui-jobs")
}
