package api

import (
	"math"
	"strconv"
	"strings"
)

// ParseSize parses a size with a unit: K, M, G, T (or Ki, Mi, Gi, Ti, the
// same binary multiples, as qemu-img reads them). A bare number is bytes.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	units := []struct {
		suffix string
		mult   int64
	}{
		{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	}
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, invalidf("size %q must be a non-negative number with an optional unit K, M, G or T", s)
	}
	b := v * float64(mult)
	if b > math.MaxInt64/2 {
		return 0, invalidf("size %q is too large", s)
	}
	return int64(b), nil
}
