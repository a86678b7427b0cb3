package vz

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/svc-project/svc/internal/rfb"
	"github.com/svc-project/svc/testkit/guest"
)

// guestScreen is a guest's Screen Sharing: RFB asking for guestPassword,
// then a 640×480 screen named "guest-desktop".
func guestScreen(t *testing.T, password string) int {
	t.Helper()
	return guest.Serve(t, "127.0.0.1:0", func(c net.Conn) {
		if rfb.ServeVNCAuth(c, password) != nil {
			return
		}
		var shared [1]byte
		if _, err := io.ReadFull(c, shared[:]); err != nil {
			return
		}
		name := "guest-desktop"
		si := make([]byte, 24)
		binary.BigEndian.PutUint16(si[0:], 640)
		binary.BigEndian.PutUint16(si[2:], 480)
		si[4] = 32
		binary.BigEndian.PutUint32(si[20:], uint32(len(name)))
		_, _ = c.Write(append(si, name...))
		_, _ = io.Copy(io.Discard, c)
	}).Port
}

func TestServeScreen_rfb_password_proxy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	guestPort := guestScreen(t, "guestpw")
	port := guest.FreePort(t, "127.0.0.1")
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	err := ServeScreen(ctx, ScreenConfig{
		Listen: listen, Password: "vm-secret", GuestPassword: "guestpw", GuestPort: guestPort,
		Guest: func() (netip.Addr, bool) { return netip.MustParseAddr("127.0.0.1"), true },
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("none_refused", func(t *testing.T) {
		c := dial(t, listen)
		types, err := rfb.Offer(c)
		if err != nil {
			t.Fatal(err)
		}
		if len(types) != 1 || types[0] != rfb.SecurityVNCAuth {
			t.Fatalf("security types %v, want VNC authentication only", types)
		}
		if _, err := c.Write([]byte{rfb.SecurityNone}); err != nil {
			t.Fatal(err)
		}
		var result [4]byte
		if _, err := io.ReadFull(c, result[:]); err != nil {
			t.Fatal(err)
		}
		if binary.BigEndian.Uint32(result[:]) == 0 {
			t.Fatal("a client without a password was let in")
		}
	})
	t.Run("wrong_password_refused", func(t *testing.T) {
		if _, err := rfb.Authenticate(listen, "guestpw", 10*time.Second); !errors.Is(err, rfb.ErrAuthFailed) {
			t.Fatalf("the guest's own password: %v, want refused", err)
		}
	})
	t.Run("vm_password_reaches_the_guest_screen", func(t *testing.T) {
		c := dial(t, listen)
		if _, err := rfb.Login(c, "vm-secret"); err != nil {
			t.Fatal(err)
		}
		si, err := rfb.ClientInit(c)
		if err != nil {
			t.Fatal(err)
		}
		if si.Name != "guest-desktop" || si.Width != 640 || si.Height != 480 {
			t.Fatalf("server init %+v is not the guest's screen", si)
		}
	})
}

func TestServeScreen_needs_a_password(t *testing.T) {
	err := ServeScreen(context.Background(), ScreenConfig{Listen: "127.0.0.1:0"}, slog.New(slog.DiscardHandler))
	if err == nil {
		t.Fatal("a screen without a password was served")
	}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}
