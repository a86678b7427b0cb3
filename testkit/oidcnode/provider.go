package oidcnode

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/testkit/guest"
)

// Person is someone the provider knows (any password signs them in).
type Person struct {
	Username string   `json:"username"`
	Email    string   `json:"email"`
	Groups   []string `json:"groups,omitempty"`
}

// Provider is a running provider.
type Provider struct {
	// Issuer is its issuer URL; ClientID and ClientSecret the client svc
	// is registered as.
	Issuer, ClientID, ClientSecret string
}

// dir is where the provider's script and packages are.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "_js")
}

// Start runs a provider on 127.0.0.1 until the test ends, with people and
// the client's redirect URIs (loopback ones take any port).
func Start(t testing.TB, people []Person, redirects ...string) *Provider {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir(), "node_modules", "oidc-provider"))
	}
	if err != nil {
		if os.Getenv("SVC_REQUIRE_BROWSER") == "1" {
			t.Fatalf("the Node.js OpenID provider cannot run (%v): make test-js-deps installs it", err)
		}
		t.Skipf("the Node.js OpenID provider cannot run (%v): run make test-js-deps", err)
	}
	port := guest.FreePort(t, "127.0.0.1")
	p := &Provider{Issuer: fmt.Sprintf("http://127.0.0.1:%d", port), ClientID: "svc", ClientSecret: "svc-secret-" + fmt.Sprint(time.Now().UnixNano())}
	pb, _ := json.Marshal(people)
	rb, _ := json.Marshal(append([]string{"http://127.0.0.1/callback"}, redirects...))
	cmd := exec.Command(node, filepath.Join(dir(), "provider.mjs"), fmt.Sprint(port))
	cmd.Env = append(os.Environ(), "OP_PEOPLE="+string(pb), "OP_REDIRECTS="+string(rb), "OP_CLIENT_ID="+p.ClientID, "OP_CLIENT_SECRET="+p.ClientSecret)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "listening ") {
				ready <- nil
				_, _ = io.Copy(io.Discard, out)
				return
			}
		}
		ready <- fmt.Errorf("the provider exited: %v", sc.Err())
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the Node.js OpenID provider did not start in 30 s")
	}
	return p
}

// browser is a client with cookies that stops where the provider sends
// it away (to a redirect URI).
type browser struct {
	hc   *http.Client
	away *url.URL
}

func (p *Provider) browser() *browser {
	jar, _ := cookiejar.New(nil)
	b := &browser{}
	b.hc = &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if !strings.HasPrefix(req.URL.String(), p.Issuer) {
			b.away = req.URL
			return http.ErrUseLastResponse
		}
		return nil
	}}
	return b
}

var (
	formRe   = regexp.MustCompile(`(?s)<form[^>]*action="([^"]+)"[^>]*>(.*?)</form>`)
	hiddenRe = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)"/?>`)
)

// page is a page's first form: where it posts, and its hidden fields.
type page struct {
	action string
	fields url.Values
	body   string
}

func (b *browser) do(ctx context.Context, method, u string, form url.Values) (page, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return page{}, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return page{}, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	pg := page{body: string(raw), fields: url.Values{}}
	if m := formRe.FindStringSubmatch(pg.body); m != nil {
		pg.action = m[1]
		for _, f := range hiddenRe.FindAllStringSubmatch(m[2], -1) {
			pg.fields.Set(f[1], f[2])
		}
	}
	return pg, nil
}

// walk answers the provider's pages as a person would: the login page
// with username (any password), consent and device confirmation with yes
// (or, with !allow, the device's abort), until the provider sends the
// browser away or shows a page with no form.
func (b *browser) walk(ctx context.Context, pg page, username string, allow bool) (page, error) {
	for range 10 {
		if b.away != nil || pg.action == "" {
			return pg, nil
		}
		f := pg.fields
		switch {
		case f.Get("prompt") == "login":
			f.Set("login", username)
			f.Set("password", "any")
		case f.Get("confirm") == "yes" && !allow:
			f.Set("abort", "yes")
		}
		var err error
		if pg, err = b.do(ctx, http.MethodPost, pg.action, f); err != nil {
			return pg, err
		}
	}
	return pg, fmt.Errorf("the provider's pages did not end")
}

// SignIn opens a sign-in address as a browser would, signs username in
// and consents, and returns where the provider sent the browser back to.
func (p *Provider) SignIn(ctx context.Context, authURL, username string) (*url.URL, error) {
	b := p.browser()
	pg, err := b.do(ctx, http.MethodGet, authURL, nil)
	if err == nil {
		_, err = b.walk(ctx, pg, username, true)
	}
	if err != nil {
		return nil, err
	}
	if b.away == nil {
		return nil, fmt.Errorf("the provider did not send the browser back")
	}
	return b.away, nil
}

// ApproveDevice types userCode at the provider's device page, signs
// username in, and allows the device (or, with !allow, aborts).
func (p *Provider) ApproveDevice(ctx context.Context, userCode, username string, allow bool) error {
	b := p.browser()
	pg, err := b.do(ctx, http.MethodGet, p.Issuer+"/device?user_code="+url.QueryEscape(userCode), nil)
	if err != nil {
		return err
	}
	last, err := b.walk(ctx, pg, username, allow)
	if err != nil {
		return err
	}
	if !strings.Contains(last.body, "Sign-in Success") && !strings.Contains(last.body, "Device") {
		return fmt.Errorf("the device page ended with %.300s", last.body)
	}
	return nil
}
