package option

import (
	"fmt"
	"regexp"
	"sync/atomic"
)

// Library is how a message names the options that are not simply their Go
// name when no caller has spelled them.
var Library = map[string]string{
	"SimulateVerb":       "a simulation (models.Simulate)",
	"SimulateRobustness": "a simulation of the robustness figures (models.Simulate)",
}

var spelling atomic.Pointer[map[string]string]

// Spell sets how messages name options from now on.
func Spell(names map[string]string) {
	m := make(map[string]string, len(names))
	for k, v := range names {
		m[k] = v
	}
	spelling.Store(&m)
}

// Name is how messages name the option key.
func Name(key string) string {
	if m := spelling.Load(); m != nil {
		if s, ok := (*m)[key]; ok {
			return s
		}
	}
	if s, ok := Library[key]; ok {
		return s
	}
	return key
}

var keyPattern = regexp.MustCompile(`\{[A-Z][A-Za-z0-9]*\}`)

// Text replaces every {Key} of s by Name(Key).
func Text(s string) string {
	return keyPattern.ReplaceAllStringFunc(s, func(k string) string { return Name(k[1 : len(k)-1]) })
}

// Errorf is fmt.Errorf with the format's option keys named (Text): %w
// wraps as it does there.
func Errorf(format string, a ...any) error { return fmt.Errorf(Text(format), a...) }

// Sprintf is fmt.Sprintf with the format's option keys named (Text).
func Sprintf(format string, a ...any) string { return fmt.Sprintf(Text(format), a...) }
