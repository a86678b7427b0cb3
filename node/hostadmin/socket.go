package hostadmin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// AdminSocket is the unix socket, in the data dir, through which root on a
// peer's host mints personal tokens and removes users. It is mode 0600 and
// never reachable over the network.
const AdminSocket = "admin.sock"

// AdminTokenRequest is the body of POST /token on the admin socket.
type AdminTokenRequest struct {
	User  string `json:"user"`
	Admin bool   `json:"admin"`
	TTL   string `json:"ttl,omitempty"`
}

// AdminUserRequest is the body of POST /users/remove on the admin socket.
type AdminUserRequest struct {
	User string `json:"user"`
}

// Serve answers the admin socket in the data dir until ctx ends; wg holds
// its goroutines.
func (u *Users) Serve(ctx context.Context, wg *sync.WaitGroup) error {
	path := filepath.Join(u.cfg.DataDir, AdminSocket)
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = l.Close()
		return fmt.Errorf("admin socket: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", u.token)
	mux.HandleFunc("POST /users/remove", u.removeUser)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	wg.Go(func() {
		<-ctx.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	wg.Go(func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			u.cfg.Log.Error("admin socket stopped", "err", err)
		}
	})
	return nil
}

func adminReply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func adminError(w http.ResponseWriter, code int, err error) {
	reason := api.ReasonBadRequest
	if code >= 500 {
		reason = api.ReasonInternalError
	}
	adminReply(w, code, api.NewStatus(code, reason, err.Error()))
}

func (u *Users) token(w http.ResponseWriter, r *http.Request) {
	var req AdminTokenRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil {
		adminError(w, http.StatusBadRequest, fmt.Errorf("malformed request: %w", err))
		return
	}
	if err := api.ValidateUserName("--user", req.User); err != nil {
		adminError(w, http.StatusBadRequest, err)
		return
	}
	var ttl time.Duration
	if req.TTL != "" {
		d, err := time.ParseDuration(req.TTL)
		if err != nil || d < time.Minute {
			adminError(w, http.StatusBadRequest, fmt.Errorf("--ttl %q: a Go duration of at least 1m", req.TTL))
			return
		}
		ttl = d
	}
	ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
	defer cancel()
	tok, exp, err := u.MintToken(ctx, req.User, req.Admin, ttl)
	if err != nil {
		adminError(w, http.StatusServiceUnavailable, err)
		return
	}
	adminReply(w, http.StatusOK, api.TokenResponse{Token: tok, ExpiresAt: exp})
}

func (u *Users) removeUser(w http.ResponseWriter, r *http.Request) {
	var req AdminUserRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil || req.User == "" {
		adminError(w, http.StatusBadRequest, errors.New("name a user"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
	defer cancel()
	lagging, err := u.RemoveUser(ctx, req.User)
	if err != nil {
		code := http.StatusServiceUnavailable
		if errors.Is(err, raftfsm.ErrNotFound) {
			code = http.StatusNotFound
		}
		adminError(w, code, err)
		return
	}
	msg := "user " + req.User + " removed; every peer refuses its tokens"
	if len(lagging) > 0 {
		msg = "user " + req.User + " removed; peers " + strings.Join(lagging, ", ") + " did not confirm it in time and refuse its tokens once they do; every other peer refuses them now"
	}
	adminReply(w, http.StatusOK, api.Message{Message: msg})
}
