package api

import (
	"errors"
	"testing"
)

func TestParseSize_cases(t *testing.T) {
	cases := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"512", 512, false},
		{"10G", 10 << 30, false},
		{"10Gi", 10 << 30, false},
		{"1.5G", 3 << 29, false},
		{"512M", 512 << 20, false},
		{"2T", 2 << 40, false},
		{"4K", 4096, false},
		{" 4K", 0, true},
		{"10G ", 0, true},
		{"+10G", 0, true},
		{"1e3G", 0, true},
		{"0x10G", 0, true},
		{"1.G", 0, true},
		{"10g", 0, true},
		{"99999999999999999999T", 0, true},
		{"", 0, true},
		{"G", 0, true},
		{"-1G", 0, true},
		{"ten", 0, true},
		{"1e30T", 0, true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseSize(c.in)
			if (err != nil) != c.wantErr || got != c.want {
				t.Fatalf("ParseSize(%q) = %d, %v", c.in, got, err)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
		})
	}
}

func TestValidate_cases(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		wantErr bool
	}{
		{"name ok", ValidateName("vm", "web-1", MaxNameLen), false},
		{"name empty", ValidateName("vm", "", MaxNameLen), true},
		{"name upper", ValidateName("vm", "Web", MaxNameLen), true},
		{"name starts with digit", ValidateName("vm", "1web", MaxNameLen), true},
		{"name ends with dash", ValidateName("vm", "web-", MaxNameLen), true},
		{"name too long", ValidateName("vmconfig", "a23456789012345678901234567890123456789012345678901", MaxVMConfigLen), true},
		{"tag ok", ValidateTag("gpu_a100.x-1"), false},
		{"tag space", ValidateTag("a b"), true},
		{"tag empty", ValidateTag(""), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if (c.err != nil) != c.wantErr {
				t.Fatalf("err = %v", c.err)
			}
			if c.err != nil && !errors.Is(c.err, ErrInvalid) {
				t.Fatalf("%v does not wrap ErrInvalid", c.err)
			}
		})
	}
}

func TestFormat_cases(t *testing.T) {
	cases := []struct {
		got, want string
	}{
		{FormatGi(6 << 30), "6Gi"},
		{FormatGi(5 << 29), "2.5Gi"},
		{FormatSize(64 << 20), "64M"},
		{FormatSize(10 << 30), "10G"},
		{FormatSize(3 << 29), "1.5G"},
		{FormatSize(1000), "1000"},
		{FormatSize(17_000_000), "16.21M"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
