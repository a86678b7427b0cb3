package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/testkit/browser"
	"github.com/svc-project/svc/testkit/oidcprovider"
	"github.com/svc-project/svc/testkit/poll"
)

// person runs the CLI as one person: their own config file (where svc
// login keeps the token), no token from the environment.
type person struct {
	t          *testing.T
	bin, api   string
	configPath string
}

func (p person) env() []string {
	env := []string{"SVC_CONFIG=" + p.configPath, "SVC_API_URL=" + p.api, "SVC_TOKEN=", "BROWSER=/bin/false"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SVC_") && !strings.HasPrefix(kv, "BROWSER=") {
			env = append(env, kv)
		}
	}
	return env
}

// run runs the CLI to the end: stdout, stderr and the exit status.
func (p person) run(stdin string, args ...string) (string, string, int) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.bin, args...)
	cmd.Env = p.env()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		p.t.Fatalf("svc %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

// must runs the CLI and fails the test unless it exits 0.
func (p person) must(args ...string) string {
	p.t.Helper()
	out, errOut, code := p.run("", args...)
	if code != 0 {
		p.t.Fatalf("svc %s: exit %d: %s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// login is a running 'svc login': its stderr, line by line, as it comes.
type login struct {
	cmd   *exec.Cmd
	lines chan string
	out   bytes.Buffer
	done  chan error
}

func (p person) startLogin(args ...string) *login {
	p.t.Helper()
	l := &login{lines: make(chan string, 100), done: make(chan error, 1)}
	l.cmd = exec.Command(p.bin, append([]string{"login"}, args...)...)
	l.cmd.Env = p.env()
	l.cmd.Stdout = &l.out
	stderr, err := l.cmd.StderrPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	if err := l.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			l.lines <- sc.Text()
		}
		close(l.lines)
		_, _ = io.Copy(io.Discard, stderr)
		l.done <- l.cmd.Wait()
	}()
	p.t.Cleanup(func() { _ = l.cmd.Process.Kill() })
	return l
}

// find returns the first submatch of re in the login's output.
func (l *login) find(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	var seen []string
	for {
		select {
		case line, ok := <-l.lines:
			if !ok {
				t.Fatalf("svc login ended without printing %s:\n%s", re, strings.Join(seen, "\n"))
			}
			seen = append(seen, line)
			if m := re.FindStringSubmatch(line); m != nil {
				return m[1]
			}
		case <-timeout:
			t.Fatalf("svc login did not print %s:\n%s", re, strings.Join(seen, "\n"))
		}
	}
}

// wait waits for the login to exit and returns what it printed.
func (l *login) wait(t *testing.T) string {
	t.Helper()
	go func() {
		for range l.lines { //nolint:revive // drain
		}
	}()
	select {
	case err := <-l.done:
		if err != nil {
			t.Fatalf("svc login: %v: %s", err, l.out.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("svc login did not end")
	}
	return l.out.String()
}

// The real binary, two agents and a real OpenID provider: svc login with
// Chromium filling the provider's sign-in page, svc login --device with
// the code typed and the device allowed in the browser; the person deploys
// in their group's namespace and is refused in another; an admin-group
// member makes a namespace; root removes the user and the token stops on
// both peers; an expired token says to run svc login.
func TestBinary_login_through_an_identity_provider(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	ctx := browser.New(t, 4*time.Minute)
	op := oidcprovider.Start(t, []oidcprovider.User{
		{Username: "alice", Password: "alice-pw", Email: "alice@example.com", Groups: []string{"dev"}},
		{Username: "bob", Password: "bob-pw", Email: "bob@example.com", Groups: []string{"ops-admins"}},
	})
	bin := buildBinary(t)
	dir := t.TempDir()
	const ip = "127.0.252.1" // this test's own address
	ports := freePortsOn(t, ip, 8)
	start := func(i int, env []string, args ...string) string {
		name := fmt.Sprintf("login-%d", i+1)
		runAgent(t, bin, dir, name, env, append([]string{"--bind", ip, "--data-dir", filepath.Join(dir, name), "--hypervisor", "fake",
			"--registry-allow", "127.0.0.0/8", "--cpu", "4", "--memory", "8", "--gpu", "0",
			"--api-port", strconv.Itoa(ports[4*i]), "--raft-port", strconv.Itoa(ports[4*i+1]), "--gossip-port", strconv.Itoa(ports[4*i+2]),
			"--tls-port", strconv.Itoa(ports[4*i+3])}, args...)...)
		return "http://" + ip + ":" + strconv.Itoa(ports[4*i])
	}
	poll := func(what string, cond func() error) {
		t.Helper()
		if err := poll.Until(context.Background(), 60*time.Second, cond); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	api1 := start(0, nil, "--bootstrap-expect", "1")
	root := person{t: t, bin: bin, api: api1, configPath: filepath.Join(dir, "root.json")}
	poll("the admin token", func() error {
		tok, err := os.ReadFile(filepath.Join(dir, "login-1", "admin.token"))
		if err != nil {
			return err
		}
		if _, errOut, code := root.run("", "user", "set-token", strings.TrimSpace(string(tok))); code != 0 {
			return fmt.Errorf("%s", errOut)
		}
		_, errOut, code := root.run("", "node", "list")
		if code != 0 {
			return fmt.Errorf("%s", errOut)
		}
		return nil
	})
	joinToken := strings.TrimSpace(root.must("cluster", "join-token", "create", "--auto-approve"))
	api2 := start(1, []string{"SVC_JOIN_TOKEN=" + joinToken}, "--join", ip+":"+strconv.Itoa(ports[2]))
	poll("two nodes", func() error {
		if out := root.must("node", "list"); strings.Count(out, "READY") != 2 {
			return fmt.Errorf("%s", out)
		}
		return nil
	})

	// The admin sets the provider up; the secret comes on stdin and is never shown.
	if out, errOut, code := root.run(op.ClientSecret+"\n", "cluster", "oidc", "set", "corp", "--issuer", op.Issuer, "--client-id", op.ClientID,
		"--client-secret-stdin", "--admin-group", "ops-admins", "--allowed-group", "dev", "--scopes", "openid,email,profile,groups"); code != 0 || !strings.Contains(out, "sealed") || strings.Contains(out, op.ClientSecret) {
		t.Fatalf("oidc set: %d %s %s", code, out, errOut)
	}
	if out := root.must("cluster", "oidc", "list", "-o", "json"); strings.Contains(out, op.ClientSecret) || !strings.Contains(out, `"clientSecretSet": true`) {
		t.Fatalf("oidc list shows: %s", out)
	}
	root.must("namespace", "create", "team-dev")
	root.must("namespace", "create", "team-ops")
	root.must("node", "namespace", "login-2", "team-dev")
	root.must("node", "namespace", "login-1", "team-ops")
	if out := root.must("rb", "add-subject", "team-dev", "--group", "dev"); !strings.Contains(out, "group") || !strings.Contains(out, "dev") {
		t.Fatalf("rb add-subject --group: %s", out)
	}

	// alice: svc login, the browser filling the provider's page.
	alice := person{t: t, bin: bin, api: api2, configPath: filepath.Join(dir, "alice.json")}
	l := alice.startLogin("--no-browser")
	authURL := l.find(t, regexp.MustCompile(`^\s+(http://\S+)$`))
	if !strings.HasPrefix(authURL, op.Issuer) || !strings.Contains(authURL, "code_challenge=") || !strings.Contains(authURL, "nonce=") {
		t.Fatalf("svc login printed %s", authURL)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(authURL), chromedp.WaitVisible("#username"),
		chromedp.SendKeys("#username", "alice"), chromedp.SendKeys("#password", "alice-pw"), chromedp.Click(`button[type="submit"]`),
		chromedp.WaitVisible(`//p[contains(., "Signed in to svc as alice@example.com")]`)); err != nil {
		browser.Screenshot(t, ctx, "cli-login-failed")
		t.Fatalf("sign in in the browser: %v", err)
	}
	browser.Screenshot(t, ctx, "cli-login-done")
	if out := l.wait(t); !strings.Contains(out, "Signed in as alice@example.com through corp (role user; groups: dev)") {
		t.Fatalf("svc login printed %q", out)
	}
	tok := strings.TrimSpace(alice.must("user", "get-token"))
	if strings.Count(tok, ".") != 2 {
		t.Fatalf("get-token: %q", tok)
	}
	alice.must("image", "generate", "blank", "--size", "1G", "-n", "team-dev")
	if out := alice.must("vm", "deploy", "--image", "blank", "--name", "a1", "-n", "team-dev", "--cpu", "1", "--memory", "1"); !strings.Contains(out, "Running") {
		t.Fatalf("alice's deploy: %s", out)
	}
	if _, errOut, code := alice.run("", "vm", "deploy", "--image", "blank", "--name", "a2", "-n", "team-ops"); code != 1 || !strings.Contains(errOut, "403") {
		t.Fatalf("alice in team-ops: exit %d: %s", code, errOut)
	}
	if _, errOut, code := alice.run("", "namespace", "create", "alices"); code != 1 || !strings.Contains(errOut, "403") {
		t.Fatalf("alice makes a namespace: exit %d: %s", code, errOut)
	}

	// bob: svc login --device, the code typed and the device allowed in the browser.
	bob := person{t: t, bin: bin, api: api1, configPath: filepath.Join(dir, "bob.json")}
	l = bob.startLogin("--device")
	verify := l.find(t, regexp.MustCompile(`^\s+(http://\S+/device)$`))
	code := l.find(t, regexp.MustCompile(`^\s+([A-Z0-9-]{6,})$`))
	if err := chromedp.Do(ctx, chromedp.Navigate(verify), chromedp.WaitVisible("#user_code"), chromedp.SendKeys("#user_code", code),
		chromedp.Click(`button[type="submit"]`), chromedp.WaitVisible("#username"),
		chromedp.SendKeys("#username", "bob"), chromedp.SendKeys("#password", "bob-pw"), chromedp.Click(`button[type="submit"]`),
		chromedp.WaitVisible(`//button[contains(., "Allow")]`)); err != nil {
		browser.Screenshot(t, ctx, "cli-device-failed")
		t.Fatalf("approve the device in the browser: %v", err)
	}
	browser.Screenshot(t, ctx, "cli-device-allow")
	if err := chromedp.Do(ctx, chromedp.Click(`//button[contains(., "Allow")]`),
		chromedp.WaitVisible(`//body[contains(., "Device authorization allowed")]`)); err != nil {
		t.Fatalf("allow: %v", err)
	}
	if out := l.wait(t); !strings.Contains(out, "Signed in as bob@example.com through corp (role admin") {
		t.Fatalf("svc login --device printed %q", out)
	}
	if out := bob.must("namespace", "create", "bobs"); !strings.Contains(out, "bobs") {
		t.Fatalf("bob makes a namespace: %s", out)
	}

	// Root on a host removes alice: her token is refused on both peers.
	out, errOut, rc := root.run("", "admin", "user", "remove", "alice@example.com", "--socket", filepath.Join(dir, "login-2", "admin.sock"))
	if rc != 0 {
		t.Fatalf("admin user remove: %d %s %s", rc, out, errOut)
	}
	for _, api := range []string{api1, api2} {
		alice.api = api
		if _, errOut, code := alice.run("", "vm", "list", "-n", "team-dev"); code != 1 || !strings.Contains(errOut, "401") {
			t.Fatalf("removed alice on %s: exit %d: %s", api, code, errOut)
		}
	}

	// A token that expired says what to do (the API's answer to one is
	// TestErrorMessage_expired_token's).
	expired := unsignedToken(t, time.Now().Add(-time.Minute))
	dave := person{t: t, bin: bin, api: api1, configPath: filepath.Join(dir, "dave.json")}
	dave.must("user", "set-token", expired)
	if _, errOut, code := dave.run("", "user", "get-token"); code != 1 || !strings.Contains(errOut, "run 'svc login'") {
		t.Fatalf("get-token of an expired token: exit %d: %s", code, errOut)
	}
}

// unsignedToken is a JWT that expired at exp (its signature is nobody's).
func unsignedToken(t *testing.T, exp time.Time) string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"EdDSA","typ":"JWT"}`)) + "." + enc([]byte(fmt.Sprintf(`{"sub":"dave","exp":%d}`, exp.Unix()))) + "." + enc([]byte("sig"))
}

func TestErrorMessage_expired_token(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want []string
		not  string
	}{
		{"expired", &api.StatusError{Status: api.NewStatus(401, api.ReasonUnauthorized, "token has expired (at 2026-11-26T17:00:00Z)")},
			[]string{"token has expired", "(401 Unauthorized)", "run 'svc login'"}, ""},
		{"another 401", &api.StatusError{Status: api.NewStatus(401, api.ReasonUnauthorized, "no bearer token")},
			[]string{"no bearer token"}, "svc login"},
		{"not the API's", errors.New("dial tcp: refused"), []string{"Error: dial tcp: refused"}, "svc login"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := errorMessage(tc.err)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			if tc.not != "" && strings.Contains(got, tc.not) {
				t.Errorf("%q says %q", got, tc.not)
			}
		})
	}
}
