package membudget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
)

// Budget is the memory this process may use.
type Budget struct {
	// Limit is the most memory the Go runtime may hold, in bytes: what it
	// has mapped, less what it has returned to the system (the quantity
	// debug.SetMemoryLimit bounds).
	Limit int64
	// AddressSpace is set when the binding limit counts address space
	// (RLIMIT_AS, RLIMIT_DATA): memory the runtime returned to the system
	// still occupies it, so checks count everything the runtime mapped.
	AddressSpace bool
	// Source is the limit that binds; Sources lists every limit found
	// (Source among them), for --verbose.
	Source  Source
	Sources []Source
	// Outside is the resident memory that is not the runtime's (the
	// binary's pages) when the budget was taken: a size given for the
	// whole process (Given) is reduced by it.
	Outside int64
	// Note, if not empty, says why the budget is not what was asked (an
	// explicit size capped by a hard limit).
	Note string
	// Warn, if not nil, receives the messages of Degrade: a computation
	// that took a slower way to stay within the budget.
	Warn func(msg string)
}

// Source is one limit on the process's memory.
type Source struct {
	// Name says what the limit is, in the user's terms ("RLIMIT_AS
	// (ulimit -v)", "cgroup v2 memory.max of /sys/fs/cgroup/job").
	Name string
	// Limit is the limit as set, in bytes; Used what already counted
	// against it when the budget was taken (the cgroup's usage, the
	// process's address space or data segment; 0 for MemAvailable and
	// the Go-level limits).
	Limit, Used int64
	// Allows is the Go memory (Budget.Limit's unit) this limit allows.
	Allows int64
	// Hard: going past it is a crash or a kill (a cgroup limit, an
	// rlimit), not a slowdown.
	Hard bool
	// AddressSpace: the limit counts address space (see Budget).
	AddressSpace bool
}

// ErrOverBudget is wrapped by every error of Check.
var ErrOverBudget = errors.New("memory budget exceeded")

// Error says which stage does not fit in the budget.
type Error struct {
	Stage  string // what was to be allocated ("derive: transition arrays")
	Need   int64  // bytes it needs
	Have   int64  // bytes left of the budget (may be 0)
	Limit  int64  // the budget
	Source string // where the budget came from
	Hint   string // what would help, or ""
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%v: %s: need %s, %s left of the %s budget (%s)", ErrOverBudget, e.Stage, FormatSize(e.Need), FormatSize(e.Have), FormatSize(e.Limit), e.Source)
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

func (e *Error) Unwrap() error { return ErrOverBudget }

// Given is a budget of bytes for the whole process (pepa's --memory),
// named name: the runtime may hold bytes less what detected found resident
// outside it (the binary), capped by the hard limits among detected's
// sources (nil: none), since past those the process is killed or crashes.
func Given(name string, bytes int64, detected *Budget) *Budget {
	var outside int64
	if detected != nil {
		outside = detected.Outside
	}
	allows := max(1, bytes-outside)
	b := &Budget{Limit: allows, Outside: outside, Source: Source{Name: name, Limit: bytes, Used: outside, Allows: allows}}
	b.Sources = []Source{b.Source}
	if detected == nil {
		return b
	}
	for _, s := range detected.Sources {
		if !s.Hard {
			continue
		}
		b.Sources = append(b.Sources, s)
		if s.Allows < b.Limit {
			b.Limit, b.Source, b.AddressSpace = s.Allows, s, s.AddressSpace
			b.Note = fmt.Sprintf("%s %s is more than %s allows; using %s", name, FormatSize(bytes), s.Name, FormatSize(s.Allows))
		}
	}
	return b
}

// String describes the budget and where it came from, on one line.
func (b *Budget) String() string {
	if b == nil {
		return "no memory budget"
	}
	s := fmt.Sprintf("memory budget %s, from %s", FormatSize(b.Limit), b.Source.describe())
	var others []string
	for _, o := range b.Sources {
		if o.Name != b.Source.Name {
			others = append(others, o.Name+" allows "+FormatSize(o.Allows))
		}
	}
	if len(others) > 0 {
		s += "; " + strings.Join(others, ", ")
	}
	if b.Note != "" {
		s += " (" + b.Note + ")"
	}
	return s
}

func (s Source) describe() string {
	if s.Used > 0 && !s.Hard && !s.AddressSpace {
		return fmt.Sprintf("%s %s less %s resident outside the Go runtime", s.Name, FormatSize(s.Limit), FormatSize(s.Used))
	}
	if s.Used > 0 {
		return fmt.Sprintf("%s %s less %s used", s.Name, FormatSize(s.Limit), FormatSize(s.Used))
	}
	if s.Limit != s.Allows {
		return fmt.Sprintf("%s %s", s.Name, FormatSize(s.Limit))
	}
	return s.Name
}

// SetRuntimeLimit sets the Go runtime's soft memory limit to the budget,
// so that the collector works harder as the budget nears instead of
// letting garbage take it, and returns a function restoring the previous
// limit.
func (b *Budget) SetRuntimeLimit() (restore func()) {
	if b == nil {
		return func() {}
	}
	prev := debug.SetMemoryLimit(b.Limit)
	return func() { debug.SetMemoryLimit(prev) }
}

// inUse is the Go memory that counts against the budget now.
func (b *Budget) inUse() int64 {
	total, released := goMemory()
	if b.AddressSpace {
		return total
	}
	return total - released
}

// samples are goMemory's metrics, read in place: a check allocates nothing
// (an allocation between two large ones can make the runtime zero the
// second one whole, untouched pages included).
var (
	samplesMu sync.Mutex
	samples   = []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
)

// goMemory reads the runtime's mapped memory and the part of it returned
// to the system.
func goMemory() (total, released int64) {
	samplesMu.Lock()
	defer samplesMu.Unlock()
	s := samples
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.Sys), int64(m.HeapReleased)
	}
	return int64(s[0].Value.Uint64()), int64(s[1].Value.Uint64())
}

// Left is what remains of the budget now (0 when it is spent; the largest
// int64 for a nil budget).
func (b *Budget) Left() int64 {
	if b == nil {
		return math.MaxInt64
	}
	return max(0, b.Limit-b.inUse())
}

// Check returns nil if need more bytes fit in the budget now, else an
// *Error naming stage, with hint (what would help; may be empty). A check
// that fails at first collects garbage (and, unless address space binds,
// returns the freed memory to the system) and looks again. A nil budget
// allows everything.
func (b *Budget) Check(stage string, need int64, hint string) error {
	if b == nil || need <= 0 {
		return nil
	}
	if need <= b.Limit-b.inUse() {
		return nil
	}
	if b.AddressSpace {
		runtime.GC()
	} else {
		debug.FreeOSMemory()
	}
	left := b.Limit - b.inUse()
	if need <= left {
		return nil
	}
	return &Error{Stage: stage, Need: need, Have: max(0, left), Limit: b.Limit, Source: b.Source.Name, Hint: hint}
}

type ctxKey struct{}

// NewContext returns ctx carrying b.
func NewContext(ctx context.Context, b *Budget) context.Context {
	return context.WithValue(ctx, ctxKey{}, b)
}

// FromContext returns the budget ctx carries, or nil.
func FromContext(ctx context.Context) *Budget {
	if ctx == nil {
		return nil
	}
	b, _ := ctx.Value(ctxKey{}).(*Budget)
	return b
}

// Check checks need against the budget ctx carries (Budget.Check); without
// one it returns nil.
func Check(ctx context.Context, stage string, need int64, hint string) error {
	return FromContext(ctx).Check(stage, need, hint)
}

// Left is what remains of ctx's budget now (Budget.Left): the largest
// int64 without one.
func Left(ctx context.Context) int64 {
	return FromContext(ctx).Left()
}

// Degrade tells the user, through the budget's Warn, that a computation
// took a slower or lesser way to stay within the budget. Without a budget
// or a Warn it does nothing.
func Degrade(ctx context.Context, format string, args ...any) {
	if b := FromContext(ctx); b != nil && b.Warn != nil {
		b.Warn(fmt.Sprintf(format, args...))
	}
}

// Bytes multiplies counts and sizes into a byte count, saturating at the
// largest int64 instead of overflowing (a need that large fails any check).
func Bytes(factors ...int64) int64 {
	p := int64(1)
	for _, f := range factors {
		if f <= 0 {
			return 0
		}
		if p > math.MaxInt64/f {
			return math.MaxInt64
		}
		p *= f
	}
	return p
}
