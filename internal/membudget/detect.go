package membudget

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"path"
	"strconv"
	"strings"
)

// system is what Detect reads, replaceable in tests.
type system struct {
	// readFile reads an absolute path (/proc/..., /sys/fs/cgroup/...).
	readFile func(name string) ([]byte, error)
	// rlimit returns the soft limit of RLIMIT_AS or RLIMIT_DATA ("as",
	// "data"); false when unlimited or unknown.
	rlimit func(which string) (uint64, bool)
	// getenv reads an environment variable.
	getenv func(string) string
	// goHeld is the Go memory held now: mapped, and mapped less released.
	goHeld func() (total, inUse int64)
}

// Margins: what a limit counts beyond the runtime's own memory. An
// address-space limit also counts the runtime's arenas, reserved 64 MiB
// at a time, and its metadata (measured: 919 MiB more address space for
// 802 MiB more runtime memory), so it keeps more back.
const (
	marginFixed        = 32 << 20
	marginPercent      = 5
	marginFixedAS      = 64 << 20
	marginPercentAS    = 10
	assumedMemory      = 4 << 30
	unlimitedThreshold = 1 << 62 // cgroup v1 writes 2^63 - 4096 for "no limit"
)

// Detect finds the process's budget from the system (see the package
// documentation). It never fails: where nothing can be read, 4 GiB is
// assumed, and the source says so.
func Detect() *Budget {
	return detect(hostSystem())
}

func hostSystem() system {
	return system{
		readFile: os.ReadFile,
		rlimit:   rlimit,
		getenv:   os.Getenv,
		goHeld: func() (int64, int64) {
			total, released := goMemory()
			return total, total - released
		},
	}
}

func detect(sys system) *Budget {
	total, inUse := sys.goHeld()
	status := procStatus(sys)
	// The resident memory that is not the runtime's (the binary's pages):
	// a limit on resident memory counts it, the runtime's does not.
	outside := int64(0)
	if rss, ok := status["VmRSS"]; ok {
		outside = max(0, rss-inUse)
	}
	var sources []Source
	// allows turns a limit's headroom into Go memory, less its margin.
	allows := func(s Source) Source {
		head := s.Limit - s.Used
		held, fixed, pct := inUse-outside, int64(marginFixed), int64(marginPercent)
		if s.AddressSpace {
			held, fixed, pct = total, marginFixedAS, marginPercentAS
		}
		s.Allows = max(0, held+head-fixed-head*pct/100)
		return s
	}
	if avail, ok := memAvailable(sys); ok {
		sources = append(sources, allows(Source{Name: "MemAvailable", Limit: avail}))
	}
	sources = append(sources, cgroupSources(sys, allows)...)
	for _, r := range []struct{ which, name, field string }{
		{"as", "RLIMIT_AS (ulimit -v)", "VmSize"},
		{"data", "RLIMIT_DATA (ulimit -d)", "VmData"},
	} {
		lim, ok := sys.rlimit(r.which)
		if !ok || lim >= unlimitedThreshold {
			continue
		}
		used, ok := status[r.field]
		if !ok {
			continue // the address space in use is unknown: the limit cannot be turned into a budget
		}
		sources = append(sources, allows(Source{Name: r.name, Limit: int64(lim), Used: used, Hard: true, AddressSpace: true}))
	}
	if v := strings.TrimSpace(sys.getenv("GOMEMLIMIT")); v != "" && v != "off" {
		if n, err := ParseSize(v); err == nil {
			sources = append(sources, Source{Name: "GOMEMLIMIT", Limit: n, Allows: n})
		}
	}
	if len(sources) == 0 {
		sources = append(sources, Source{Name: "an assumed 4 GiB (no limit could be read)", Limit: assumedMemory, Allows: assumedMemory})
	}
	b := &Budget{Sources: sources, Limit: math.MaxInt64, Outside: outside}
	for _, s := range sources {
		if s.Allows < b.Limit {
			b.Limit, b.Source, b.AddressSpace = s.Allows, s, s.AddressSpace
		}
	}
	// A limit that allows less than the runtime holds already still
	// leaves the process what it has (checks then fail at once).
	b.Limit = max(b.Limit, 1)
	return b
}

// memAvailable reads MemAvailable from /proc/meminfo.
func memAvailable(sys system) (int64, bool) {
	b, err := sys.readFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemAvailable:" {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return kb << 10, true
			}
		}
	}
	return 0, false
}

// procStatus reads the Vm* fields of /proc/self/status, in bytes.
func procStatus(sys system) map[string]int64 {
	out := map[string]int64{}
	b, err := sys.readFile("/proc/self/status")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && strings.HasPrefix(f[0], "Vm") && f[2] == "kB" {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				out[strings.TrimSuffix(f[0], ":")] = kb << 10
			}
		}
	}
	return out
}

// cgroupSources finds the memory limits of the process's cgroups, v2 and
// v1: at each level from the process's own cgroup up to the hierarchy's
// root, the limit less the usage (file cache the kernel drops first not
// counted); the level that leaves least is the source.
func cgroupSources(sys system, allows func(Source) Source) []Source {
	cg, err := sys.readFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	mi, err := sys.readFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	mounts := cgroupMounts(mi)
	var out []Source
	for _, line := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
		// hierarchy-ID:controllers:path
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		v2 := f[0] == "0" && f[1] == ""
		memory := false
		for _, c := range strings.Split(f[1], ",") {
			memory = memory || c == "memory"
		}
		if !v2 && !memory {
			continue
		}
		var m cgroupMount
		var ok bool
		if v2 {
			m, ok = mounts.v2, mounts.v2.point != ""
		} else {
			m, ok = mounts.v1memory, mounts.v1memory.point != ""
		}
		if !ok {
			continue
		}
		rel, ok := strings.CutPrefix(f[2], m.root)
		if !ok || (rel != "" && rel[0] != '/') {
			continue // the cgroup is outside the mount (another namespace)
		}
		var best *Source
		for dir := path.Join(m.point, rel); ; dir = path.Dir(dir) {
			if s, ok := cgroupLevel(sys, dir, v2); ok {
				s = allows(s)
				if best == nil || s.Allows < best.Allows {
					best = &s
				}
			}
			if dir == m.point || !strings.HasPrefix(dir, m.point) || dir == "/" {
				break
			}
		}
		if best != nil {
			out = append(out, *best)
		}
	}
	return out
}

// cgroupLevel reads the limit and usage of one cgroup directory.
func cgroupLevel(sys system, dir string, v2 bool) (Source, bool) {
	limitFile, usageFile, cacheKey, name := "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file", "cgroup v1 memory.limit_in_bytes of "
	if v2 {
		limitFile, usageFile, cacheKey, name = "memory.max", "memory.current", "inactive_file", "cgroup v2 memory.max of "
	}
	lim, ok := readNumber(sys, path.Join(dir, limitFile))
	if !ok || lim >= unlimitedThreshold {
		return Source{}, false
	}
	used, ok := readNumber(sys, path.Join(dir, usageFile))
	if !ok {
		used = 0
	}
	if st, err := sys.readFile(path.Join(dir, "memory.stat")); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(st))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == cacheKey {
				if x, err := strconv.ParseInt(f[1], 10, 64); err == nil && x <= used {
					used -= x
				}
			}
		}
	}
	return Source{Name: name + dir, Limit: lim, Used: used, Hard: true}, true
}

// readNumber reads a file holding one number ("max" is no number).
func readNumber(sys system, name string) (int64, bool) {
	b, err := sys.readFile(name)
	if err != nil {
		return 0, false
	}
	x, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return x, err == nil
}

type cgroupMount struct{ root, point string }

type cgroupMountSet struct{ v2, v1memory cgroupMount }

// cgroupMounts finds the cgroup2 mount and the cgroup v1 mount holding the
// memory controller in /proc/self/mountinfo:
//
//	36 35 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw
//	41 33 0:36 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
func cgroupMounts(mountinfo []byte) cgroupMountSet {
	var out cgroupMountSet
	for _, line := range strings.Split(string(mountinfo), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		m := cgroupMount{root: unescapeMount(f[3]), point: unescapeMount(f[4])}
		switch g[0] {
		case "cgroup2":
			if out.v2.point == "" {
				out.v2 = m
			}
		case "cgroup":
			for _, o := range strings.Split(g[2], ",") {
				if o == "memory" && out.v1memory.point == "" {
					out.v1memory = m
				}
			}
		}
	}
	if out.v2.root == "/" {
		out.v2.root = ""
	}
	if out.v1memory.root == "/" {
		out.v1memory.root = ""
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if x, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(x))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
