package oidcprovider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// A person's steps on the provider's pages, as plain form posts: for tests
// of the cluster's side that need no browser (the CLI's and the web UI's
// tests drive Chromium through the same pages).

var authRequestRE = regexp.MustCompile(`name="id" value="([^"]+)"`)

// SignIn follows authURL, signs in on the login page as username and
// returns the address the provider sent the browser back to (the redirect
// URI with code and state, or an error).
func (p *Provider) SignIn(ctx context.Context, authURL, username, password string) (*url.URL, error) {
	jar, _ := cookiejar.New(nil)
	var back *url.URL
	hc := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if !strings.HasPrefix(req.URL.String(), p.Issuer) {
			back = req.URL
			return http.ErrUseLastResponse
		}
		return nil
	}}
	page, err := get(ctx, hc, authURL)
	if back != nil {
		return back, nil // the provider answered at once (an error)
	}
	if err != nil {
		return nil, err
	}
	m := authRequestRE.FindStringSubmatch(page)
	if m == nil {
		return nil, fmt.Errorf("no login form in %.300q", page)
	}
	page, err = post(ctx, hc, p.Issuer+"/login/username", url.Values{"id": {m[1]}, "username": {username}, "password": {password}})
	if back != nil {
		return back, nil
	}
	if err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("the provider did not send the browser back: %.300q", page)
}

// ApproveDevice types userCode on the device page, signs in as username
// and allows (or denies) the device.
func (p *Provider) ApproveDevice(ctx context.Context, userCode, username, password string, allow bool) error {
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	page, err := post(ctx, hc, p.Issuer+"/device/login", url.Values{"user_code": {userCode}, "username": {username}, "password": {password}})
	if err != nil {
		return err
	}
	if !strings.Contains(page, "confirm?action=allowed") {
		return fmt.Errorf("no confirmation page: %.300q", page)
	}
	action := "denied"
	if allow {
		action = "allowed"
	}
	page, err = get(ctx, hc, p.Issuer+"/device/confirm?action="+action)
	if err != nil {
		return err
	}
	if !strings.Contains(page, "Device authorization "+action) {
		return fmt.Errorf("not %s: %.300q", action, page)
	}
	return nil
}

func get(ctx context.Context, hc *http.Client, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	return do(hc, req)
}

func post(ctx context.Context, hc *http.Client, u string, form url.Values) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return do(hc, req)
}

func do(hc *http.Client, req *http.Request) (string, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode >= 400 {
		return string(b), errors.New(resp.Status + ": " + strings.TrimSpace(string(b)))
	}
	return string(b), nil
}
