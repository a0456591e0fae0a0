package membudget

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// FormatSize writes a byte count with a binary unit: "512 B", "37.5 MiB",
// "3.81 GiB" (three significant digits).
func FormatSize(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	x := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		x /= 1024
		if x < 1024 || u == "PiB" {
			switch {
			case x >= 100:
				return fmt.Sprintf("%.0f %s", x, u)
			case x >= 10:
				return fmt.Sprintf("%.1f %s", x, u)
			}
			return fmt.Sprintf("%.2f %s", x, u)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// ParseSize reads a size: a number, optionally with a fraction, and a unit
// of K, M, G or T (powers of 1024, as Slurm's --mem and GOMEMLIMIT count;
// KB, KiB, k and so on are the same) or B; a bare number is bytes.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToUpper(strings.TrimSpace(t[i:]))
	x, err := strconv.ParseFloat(num, 64)
	if num == "" || err != nil {
		return 0, fmt.Errorf("size %q: want a number of bytes, optionally with K, M, G or T (for example 4G or 512M)", s)
	}
	unit = strings.TrimSuffix(strings.TrimSuffix(unit, "B"), "I")
	shift := map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
	sh, ok := shift[unit]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (want K, M, G or T)", s, strings.TrimSpace(t[i:]))
	}
	v := x * float64(uint64(1)<<sh)
	if !(v >= 1) || v >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q: must be at least one byte and less than 8 EiB", s)
	}
	return int64(v), nil
}
