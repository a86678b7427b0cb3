package signin

import (
	"context"
	"errors"
	"fmt"
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
	cctx, cancel := context.WithTimeout(s.ctx(ctx), s.cfg.Timeout)
	defer cancel()
	da, err := conf.DeviceAuth(cctx)
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
	id, err := s.identity(ctx, p, r, tok, "")
	return id, false, err
}
