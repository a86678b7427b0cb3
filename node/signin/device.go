package signin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/svc-project/svc/api"
)

// StartDevice begins a device sign-in (RFC 8628): the person opens the
// verification address on any device and types the user code; the client
// polls with the handle.
func (s *Service) StartDevice(ctx context.Context, provider string) (api.DeviceSignIn, error) {
	p, err := s.provider(provider)
	if err != nil {
		return api.DeviceSignIn{}, err
	}
	r, err := s.discover(ctx, p)
	if err != nil {
		return api.DeviceSignIn{}, err
	}
	conf, err := s.oauth(p, r, "")
	if err != nil {
		return api.DeviceSignIn{}, err
	}
	if conf.Endpoint.DeviceAuthURL == "" {
		return api.DeviceSignIn{}, fmt.Errorf("%w: provider %q has no device authorization endpoint; sign in with a browser (svc login without --device)", ErrInvalid, p.Name)
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	da, err := s.deviceAuth(cctx, conf)
	if err != nil {
		return api.DeviceSignIn{}, s.tokenError(p, err)
	}
	exp := da.Expiry
	if exp.IsZero() || exp.After(time.Now().Add(StateTTL)) {
		exp = time.Now().Add(StateTTL)
	}
	interval := int(da.Interval)
	if interval <= 0 {
		interval = 5
	}
	h, err := s.seal("device", sealed{Provider: p.Name, Issuer: p.Issuer, Device: da.DeviceCode, Interval: interval, Expires: exp.Unix()})
	if err != nil {
		return api.DeviceSignIn{}, err
	}
	return api.DeviceSignIn{UserCode: da.UserCode, VerificationURI: da.VerificationURI, VerificationURIComplete: da.VerificationURIComplete,
		ExpiresAt: exp.UTC().Truncate(time.Second), Interval: interval, Handle: h}, nil
}

// PollDevice waits up to PollWindow for the person to approve a device
// sign-in: their identity once they did, pending (true) while they have
// not.
func (s *Service) PollDevice(ctx context.Context, provider, handle string) (Identity, bool, error) {
	v, err := s.open("device", provider, handle, time.Now())
	if err != nil {
		return Identity{}, false, err
	}
	p, err := s.provider(provider)
	if err != nil {
		return Identity{}, false, err
	}
	r, err := s.discover(ctx, p)
	if err != nil {
		return Identity{}, false, err
	}
	conf, err := s.oauth(p, r, "")
	if err != nil {
		return Identity{}, false, err
	}
	window := min(PollWindow, time.Until(time.Unix(v.Expires, 0)))
	wctx, cancel := context.WithTimeout(s.ctx(ctx), window)
	defer cancel()
	tok, err := conf.DeviceAccessToken(wctx, &oauth2.DeviceAuthResponse{DeviceCode: v.Device, Interval: int64(v.Interval)})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return Identity{}, false, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded) && time.Now().Unix() < v.Expires:
		return Identity{}, true, nil
	case errors.Is(err, context.DeadlineExceeded):
		return Identity{}, false, fmt.Errorf("%w: the device sign-in expired; start again", ErrRefused)
	default:
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "access_denied" {
			return Identity{}, false, fmt.Errorf("%w: the sign-in was denied at provider %q", ErrRefused, p.Name)
		}
		return Identity{}, false, s.tokenError(p, err)
	}
	if !s.once("device", handle, v.Expires) {
		return Identity{}, false, fmt.Errorf("%w: this device sign-in has given its token already; start again", ErrRefused)
	}
	id, err := s.identity(ctx, p, r, tok, "")
	return id, false, err
}

// deviceAuth asks the provider for a device code (RFC 8628 3.1). A client
// the provider gave a secret authenticates there as at its token endpoint
// (RFC 6749 2.3: HTTP Basic, the id and secret form-encoded); one with
// no secret sends its id alone (a public client: Entra ID refuses a
// secret from one).
func (s *Service) deviceAuth(ctx context.Context, conf *oauth2.Config) (*oauth2.DeviceAuthResponse, error) {
	form := url.Values{"client_id": {conf.ClientID}}
	if len(conf.Scopes) > 0 {
		form.Set("scope", strings.Join(conf.Scopes, " "))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, conf.Endpoint.DeviceAuthURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if conf.ClientSecret != "" {
		req.SetBasicAuth(url.QueryEscape(conf.ClientID), url.QueryEscape(conf.ClientSecret))
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		re := &oauth2.RetrieveError{Response: resp, Body: body}
		var e struct {
			Code        string `json:"error"`
			Description string `json:"error_description"`
		}
		if json.Unmarshal(body, &e) == nil {
			re.ErrorCode, re.ErrorDescription = e.Code, e.Description
		}
		return nil, re
	}
	var da struct {
		DeviceCode              string `json:"device_code"`
		UserCode                string `json:"user_code"`
		VerificationURI         string `json:"verification_uri"`
		VerificationURL         string `json:"verification_url"` // Google's name
		VerificationURIComplete string `json:"verification_uri_complete"`
		ExpiresIn               int64  `json:"expires_in"`
		Interval                int64  `json:"interval"`
	}
	if err := json.Unmarshal(body, &da); err != nil || da.DeviceCode == "" || da.UserCode == "" {
		return nil, fmt.Errorf("the device authorization answer is not one (RFC 8628 3.2): %v", err)
	}
	out := &oauth2.DeviceAuthResponse{DeviceCode: da.DeviceCode, UserCode: da.UserCode, VerificationURI: cmpOr(da.VerificationURI, da.VerificationURL),
		VerificationURIComplete: da.VerificationURIComplete, Interval: da.Interval}
	if da.ExpiresIn > 0 {
		out.Expiry = time.Now().Add(time.Duration(da.ExpiresIn) * time.Second)
	}
	return out, nil
}
