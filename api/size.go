package api

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// ParseSize parses a size with a unit: K, M, G, T (or Ki, Mi, Gi, Ti, the
// same binary multiples, as qemu-img reads them). A bare number is bytes.
func ParseSize(s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, invalidf("size %q must be a number (digits, an optional fraction) with an optional unit K, M, G or T, e.g. \"10G\"", s)
	}
	mult := map[string]int64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[strings.TrimSuffix(m[2], "i")]
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil || v*float64(mult) > math.MaxInt64/2 {
		return 0, invalidf("size %q is too large", s)
	}
	return int64(v * float64(mult)), nil
}

// sizeRE is a size: digits, an optional fraction, an optional unit; no
// sign, exponent or space.
var sizeRE = regexp.MustCompile(`^([0-9]{1,20}(?:\.[0-9]{1,20})?)((?:K|M|G|T)i?)?$`)
