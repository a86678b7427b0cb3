package main

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

// loginWait bounds how long svc login waits for the person to finish at
// their provider.
const loginWait = 10 * time.Minute

func newLoginCmd(g *globals) *cobra.Command {
	var provider, host, kubeconfig string
	var device, noBrowser bool
	var port int
	cmd := &cobra.Command{
		Use:   "login [--provider NAME] [--device]",
		Short: "Sign in through your organisation's identity provider and keep the personal token (1 hour)",
		Long: `Sign in through the identity provider (OpenID Connect) an admin configured
('svc cluster oidc set'). The browser opens the provider's sign-in page; the
provider sends it back to this command on a loopback address, the cluster
checks who you are and answers a personal token, valid for an hour, which the
CLI keeps in its config (print it with 'svc user get-token'). Your role and
namespaces follow your groups in the directory at each sign-in.

On a host without a browser, --device prints an address and a code to type in
a browser anywhere else (the device authorization grant).`,
		Example: "  svc config set --api-url https://svc.example.com:8443\n  svc login\n  svc login --provider okta --device",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), loginWait)
			defer cancel()
			name, err := pickProvider(ctx, cl, provider)
			if err != nil {
				return err
			}
			var got api.SignedIn
			if device {
				got, err = deviceLogin(ctx, cmd.ErrOrStderr(), cl, name)
			} else {
				got, err = browserLogin(ctx, cmd.ErrOrStderr(), cl, name, host, port, !noBrowser)
			}
			if err != nil {
				return err
			}
			c, p, err := loadConfig()
			if err != nil {
				return err
			}
			c.Token = got.Token
			if err := saveConfig(p, c); err != nil {
				return err
			}
			groups := "none"
			if len(got.Groups) > 0 {
				groups = strings.Join(got.Groups, ", ")
			}
			until := "never"
			if got.ExpiresAt != nil {
				until = got.ExpiresAt.Local().Format("15:04 MST")
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Signed in as %s through %s (role %s; groups: %s).\nThe token is valid until %s and kept in %s.\n", got.User, got.Provider, got.Role, groups, until, p)
			if kubeconfig != "" {
				cl.Token = got.Token
				server, err := writeKubeconfig(ctx, cl, kubeconfig)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Wrote context %q (%s) to %s.\n", kubeName, server, kubeconfig)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&provider, "provider", "", "the provider to sign in with (needed when the cluster has several)")
	f.BoolVar(&device, "device", false, "sign in on another device: print an address and a code instead of opening a browser here")
	f.BoolVar(&noBrowser, "no-browser", false, "print the sign-in address without opening a browser")
	f.IntVar(&port, "port", 0, "the loopback port the provider sends the browser back to (0: any free one; some providers need a fixed one)")
	f.StringVar(&kubeconfig, "kubeconfig", "", "also write the token into this kubeconfig (context svc), for kubectl, client-go and Orka's tools")
	f.StringVar(&host, "redirect-host", "127.0.0.1", "the loopback name in the redirect address: 127.0.0.1, localhost or ::1 (as registered at the provider)")
	return cmd
}

// pickProvider names the provider: the one asked for, or the only one.
func pickProvider(ctx context.Context, cl *api.Client, want string) (string, error) {
	list, err := cl.SignInProviders(ctx)
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(list))
	for _, p := range list {
		if p.Name == want {
			return want, nil
		}
		names = append(names, p.Name)
	}
	switch {
	case len(list) == 0:
		return "", errors.New("this cluster has no identity provider to sign in with (an admin adds one with 'svc cluster oidc set'); ask an admin for a token instead")
	case want != "":
		return "", usageErrorf("no provider %q; this cluster has: %s", want, strings.Join(names, ", "))
	case len(list) > 1:
		return "", usageErrorf("this cluster has several providers: pick one with --provider (%s)", strings.Join(names, ", "))
	}
	return list[0].Name, nil
}

// callback is what the provider sent the browser back with.
type callback struct {
	code string
	iss  string // the provider's issuer, where it names itself (RFC 9207)
	err  error
	done chan string // the page's message, once the cluster answered
}

// browserLogin runs the authorization code flow through a loopback
// listener (RFC 8252): the provider sends the browser back to it.
func browserLogin(ctx context.Context, w io.Writer, cl *api.Client, provider, host string, port int, open bool) (api.SignedIn, error) {
	listen := map[string]string{"127.0.0.1": "127.0.0.1", "localhost": "127.0.0.1", "::1": "::1"}[host]
	if listen == "" {
		return api.SignedIn{}, usageErrorf("--redirect-host %q: use 127.0.0.1, localhost or ::1", host)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(listen, strconv.Itoa(port)))
	if err != nil {
		return api.SignedIn{}, fmt.Errorf("listen on the loopback address the provider sends the browser back to: %w", err)
	}
	defer ln.Close()
	_, lport, _ := net.SplitHostPort(ln.Addr().String())
	redirect := "http://" + net.JoinHostPort(host, lport) + "/callback"
	st, err := cl.StartSignIn(ctx, provider, redirect)
	if err != nil {
		return api.SignedIn{}, err
	}
	got := make(chan callback, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.URL.Path != "/callback" || q.Get("state") != st.State {
			http.Error(rw, "This is not the answer to the sign-in svc login started.", http.StatusBadRequest)
			return
		}
		cb := callback{code: q.Get("code"), iss: q.Get("iss"), done: make(chan string, 1)}
		if e := q.Get("error"); e != "" || cb.code == "" {
			cb.err = fmt.Errorf("the provider refused the sign-in: %s %s", e, q.Get("error_description"))
		}
		select {
		case got <- cb:
		default:
			http.Error(rw, "This sign-in is already finished.", http.StatusConflict)
			return
		}
		msg := "The sign-in did not finish."
		select {
		case msg = <-cb.done:
		case <-time.After(30 * time.Second):
		}
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(rw, "<!DOCTYPE html><html><head><title>svc</title></head><body style=\"font-family:sans-serif;margin:3em\"><h1>svc</h1><p>%s</p></body></html>", html.EscapeString(msg))
	})}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Fprintf(w, "Sign in with %s in your browser. If it does not open, open this address:\n\n  %s\n\n", provider, st.AuthURL)
	if open {
		openBrowser(st.AuthURL)
	}
	var cb callback
	select {
	case cb = <-got:
	case <-ctx.Done():
		return api.SignedIn{}, fmt.Errorf("no answer from the provider in time: %w", ctx.Err())
	}
	if cb.err != nil {
		cb.done <- cb.err.Error()
		return api.SignedIn{}, cb.err
	}
	// The code verifier never left this process: it goes with the code.
	out, err := cl.FinishSignIn(ctx, provider, api.SignInCallback{State: st.State, Code: cb.code, CodeVerifier: st.CodeVerifier, Issuer: cb.iss})
	if err != nil {
		var se *api.StatusError
		msg := err.Error()
		if errors.As(err, &se) {
			msg = se.Status.Message
		}
		cb.done <- "The cluster refused the sign-in: " + msg
		return api.SignedIn{}, err
	}
	cb.done <- fmt.Sprintf("Signed in to svc as %s. You can close this tab and go back to the terminal.", out.User)
	return out, nil
}

// openBrowser tries to show u in the person's browser: $BROWSER, else the
// desktop's opener. A failure is not an error: the address is printed.
func openBrowser(u string) {
	var c *exec.Cmd
	switch {
	case os.Getenv("BROWSER") != "":
		c = exec.Command(os.Getenv("BROWSER"), u)
	case runtime.GOOS == "darwin":
		c = exec.Command("open", u)
	default:
		c = exec.Command("xdg-open", u)
	}
	c.Stdout, c.Stderr = nil, nil
	if c.Start() == nil {
		go func() { _ = c.Wait() }()
	}
}

// deviceLogin runs the device authorization grant: the person approves on
// another device; the cluster is polled until they did.
func deviceLogin(ctx context.Context, w io.Writer, cl *api.Client, provider string) (api.SignedIn, error) {
	d, err := cl.StartDeviceSignIn(ctx, provider)
	if err != nil {
		return api.SignedIn{}, err
	}
	fmt.Fprintf(w, "To sign in, open this address in a browser on any device:\n\n  %s\n\nand enter the code:\n\n  %s\n\n", d.VerificationURI, d.UserCode)
	if d.VerificationURIComplete != "" {
		fmt.Fprintf(w, "(or open %s, which holds the code)\n\n", d.VerificationURIComplete)
	}
	fmt.Fprintf(w, "Waiting for the sign-in (until %s)...\n", d.ExpiresAt.Local().Format("15:04:05"))
	for {
		got, err := cl.PollDeviceSignIn(ctx, provider, d.Handle)
		switch {
		case err != nil:
			return api.SignedIn{}, err
		case got != nil:
			return *got, nil
		case time.Now().After(d.ExpiresAt):
			return api.SignedIn{}, errors.New("the code expired before the sign-in was approved; run 'svc login --device' again")
		}
		// The cluster waits up to 12 s for the approval on each poll; a
		// pause between polls keeps a fast "pending" from spinning.
		select {
		case <-ctx.Done():
			return api.SignedIn{}, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
