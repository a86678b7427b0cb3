package vz

import (
	"errors"
	"net"
	"strings"
	"testing"
)

// A leases file as bootpd writes it: octets without leading zeros, the
// same guest leased twice (a restart), another guest, unknown keys.
const leasesFile = `{
	name=debian
	ip_address=192.168.64.3
	hw_address=1,52:54:0:ab:c:ef
	identifier=1,52:54:0:ab:c:ef
	lease=0x65a1b2c3
}
{
	name=debian
	ip_address=192.168.64.7
	hw_address=1,52:54:0:ab:c:ef
	identifier=1,52:54:0:ab:c:ef
	lease=0x65a1c000
}
{
	name=macos-14
	ip_address=192.168.64.5
	hw_address=1,a2:f:1:2:3:4
	identifier=1,a2:f:1:2:3:4
	lease=0x65a1b000
	unknown=kept out
}
`

func TestIPForMAC_cases(t *testing.T) {
	leases, err := ParseLeases(strings.NewReader(leasesFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) != 3 || leases[2].Name != "macos-14" {
		t.Fatalf("leases = %+v", leases)
	}
	cases := []struct {
		name, mac, want string
	}{
		{"the newest of two leases", "52:54:00:ab:0c:ef", "192.168.64.7"},
		{"octets written without their leading zeros", "a2:0f:01:02:03:04", "192.168.64.5"},
		{"a guest without a lease", "52:54:00:00:00:01", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mac, _ := net.ParseMAC(c.mac)
			ip, ok := IPForMAC(leases, mac)
			if got := ip.String(); (c.want == "" && ok) || (c.want != "" && got != c.want) {
				t.Fatalf("IPForMAC(%s) = %s, %v; want %q", c.mac, got, ok, c.want)
			}
		})
	}
}

func TestParseLeases_refuses(t *testing.T) {
	cases := []struct{ name, file string }{
		{"an entry inside an entry", "{\n{\n}\n}\n"},
		{"an end without a start", "}\n"},
		{"a field outside an entry", "ip_address=1.2.3.4\n"},
		{"no address", "{\nhw_address=1,52:54:0:0:0:1\n}\n"},
		{"a bad address", "{\nip_address=1.2.3\nhw_address=1,52:54:0:0:0:1\n}\n"},
		{"not Ethernet", "{\nip_address=1.2.3.4\nhw_address=6,52:54:0:0:0:1\n}\n"},
		{"five octets", "{\nip_address=1.2.3.4\nhw_address=1,52:54:0:0:0\n}\n"},
		{"an octet of three digits", "{\nip_address=1.2.3.4\nhw_address=1,52:54:0:0:0:100\n}\n"},
		{"a bad expiry", "{\nip_address=1.2.3.4\nhw_address=1,52:54:0:0:0:1\nlease=0xzz\n}\n"},
		{"an entry that does not end", "{\nip_address=1.2.3.4\n"},
		{"a line over the bound", "{\nname=" + strings.Repeat("x", maxLeaseLine) + "\n}\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ParseLeases(strings.NewReader(c.file)); !errors.Is(err, ErrLeases) {
				t.Fatalf("err = %v, want ErrLeases", err)
			}
		})
	}
}
