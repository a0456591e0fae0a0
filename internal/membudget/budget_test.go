package membudget

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"runtime"
	"strings"
	"testing"
)

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// fakeSystem is a machine described by its files, rlimits and environment.
type fakeSystem struct {
	files        map[string]string
	as, data     uint64 // 0: unlimited
	env          map[string]string
	total, inUse int64
}

func (f fakeSystem) system() system {
	return system{
		readFile: func(name string) ([]byte, error) {
			s, ok := f.files[name]
			if !ok {
				return nil, fs.ErrNotExist
			}
			return []byte(s), nil
		},
		rlimit: func(which string) (uint64, bool) {
			v := f.as
			if which == "data" {
				v = f.data
			}
			return v, v != 0
		},
		getenv: func(k string) string { return f.env[k] },
		goHeld: func() (int64, int64) { return f.total, f.inUse },
	}
}

// slurmNode: cgroup v2, the job's cgroup without a limit inside a parent
// with --mem=4G, 1 GiB of it used (300 MiB of it inactive file cache);
// 20 GiB available on the machine.
func slurmNode() fakeSystem {
	return fakeSystem{
		files: map[string]string{
			"/proc/meminfo":        "MemTotal:       32000000 kB\nMemFree:  1000 kB\nMemAvailable:   20971520 kB\n",
			"/proc/self/cgroup":    "0::/slurm/job_42/step_0\n",
			"/proc/self/mountinfo": "22 1 0:21 / /proc rw - proc proc rw\n36 35 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n",
			"/sys/fs/cgroup/slurm/job_42/step_0/memory.max": "max\n",
			"/sys/fs/cgroup/slurm/job_42/memory.max":        "4294967296\n",
			"/sys/fs/cgroup/slurm/job_42/memory.current":    "1073741824\n",
			"/sys/fs/cgroup/slurm/job_42/memory.stat":       "anon 700000000\nfile 373741824\ninactive_file 314572800\nactive_file 10\n",
			"/sys/fs/cgroup/slurm/memory.max":               "max\n",
			"/sys/fs/cgroup/memory.max":                     "max\n",
		},
		env:   map[string]string{},
		total: 20 * mib, inUse: 10 * mib,
	}
}

// allowsFor is the package's rule, written out: held + headroom - margin.
func allowsFor(held, limit, used, fixed, pct int64) int64 {
	head := limit - used
	return held + head - fixed - head*pct/100
}

func TestDetectCgroupV2Parent(t *testing.T) {
	b := detect(slurmNode().system())
	// The job's cgroup: 4 GiB less (1 GiB - 300 MiB of inactive cache).
	used := gib - 300*mib
	want := allowsFor(10*mib, 4*gib, used, 32*mib, 5)
	if b.Limit != want {
		t.Fatalf("limit %d (%s), want %d; sources %+v", b.Limit, FormatSize(b.Limit), want, b.Sources)
	}
	if !strings.Contains(b.Source.Name, "cgroup v2 memory.max of /sys/fs/cgroup/slurm/job_42") || !b.Source.Hard || b.AddressSpace {
		t.Errorf("source %+v", b.Source)
	}
	if b.Source.Used != used || b.Source.Limit != 4*gib {
		t.Errorf("source limit %d used %d", b.Source.Limit, b.Source.Used)
	}
	if len(b.Sources) != 2 || b.Sources[0].Name != "MemAvailable" || b.Sources[0].Limit != 20*gib {
		t.Errorf("sources %+v", b.Sources)
	}
	if s := b.String(); !strings.Contains(s, "cgroup v2") || !strings.Contains(s, "MemAvailable allows") {
		t.Errorf("String %q", s)
	}
}

func TestDetectPicksTheSmallest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*fakeSystem)
		source string
		limit  int64
		as     bool
	}{
		{"memavailable", func(f *fakeSystem) {
			f.files["/proc/meminfo"] = "MemAvailable:   1048576 kB\n"
		}, "MemAvailable", allowsFor(10*mib, gib, 0, 32*mib, 5), false},
		{"memavailable, the binary resident", func(f *fakeSystem) {
			f.files["/proc/meminfo"] = "MemAvailable:   1048576 kB\n"
			f.files["/proc/self/status"] = "VmSize:\t  702640 kB\nVmRSS:\t   16384 kB\n" // 6 MiB besides the runtime's 10
		}, "MemAvailable", allowsFor(4*mib, gib, 0, 32*mib, 5), false},
		{"ulimit -v", func(f *fakeSystem) {
			f.as = uint64(2 * gib)
			f.files["/proc/self/status"] = "Name:\tpepa\nVmPeak:\t  702640 kB\nVmSize:\t  702640 kB\nVmData:\t   40416 kB\n"
		}, "RLIMIT_AS (ulimit -v)", allowsFor(20*mib, 2*gib, 702640*kib, 64*mib, 10), true},
		{"ulimit -d", func(f *fakeSystem) {
			f.data = uint64(512 * mib)
			f.files["/proc/self/status"] = "VmSize:\t  702640 kB\nVmData:\t   40416 kB\n"
		}, "RLIMIT_DATA (ulimit -d)", allowsFor(20*mib, 512*mib, 40416*kib, 64*mib, 10), true},
		{"ulimit -v without /proc/self/status is ignored", func(f *fakeSystem) {
			f.as = uint64(256 * mib)
		}, "cgroup v2", allowsFor(10*mib, 4*gib, gib-300*mib, 32*mib, 5), false},
		{"GOMEMLIMIT", func(f *fakeSystem) { f.env["GOMEMLIMIT"] = "1GiB" }, "GOMEMLIMIT", gib, false},
		{"GOMEMLIMIT off", func(f *fakeSystem) { f.env["GOMEMLIMIT"] = "off" }, "cgroup v2", allowsFor(10*mib, 4*gib, gib-300*mib, 32*mib, 5), false},
		{"nothing readable", func(f *fakeSystem) { f.files = map[string]string{} }, "an assumed 4 GiB", 4 * gib, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := slurmNode()
			tc.change(&f)
			b := detect(f.system())
			if !strings.HasPrefix(b.Source.Name, tc.source) || b.Limit != tc.limit || b.AddressSpace != tc.as {
				t.Errorf("got %s (%d bytes, address space %v), want %s %d %v", b.Source.Name, b.Limit, b.AddressSpace, tc.source, tc.limit, tc.as)
			}
		})
	}
}

func TestDetectCgroupV1(t *testing.T) {
	f := fakeSystem{
		files: map[string]string{
			"/proc/self/cgroup": "12:pids:/a\n4:memory:/process_api/job\n0::/\n",
			"/proc/self/mountinfo": "30 25 0:26 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n" +
				"31 25 0:27 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n",
			"/sys/fs/cgroup/memory/process_api/job/memory.limit_in_bytes": "9223372036854771712\n",
			"/sys/fs/cgroup/memory/process_api/memory.limit_in_bytes":     "2147483648\n",
			"/sys/fs/cgroup/memory/process_api/memory.usage_in_bytes":     "536870912\n",
			"/sys/fs/cgroup/memory/process_api/memory.stat":               "cache 1\ntotal_inactive_file 268435456\n",
			"/sys/fs/cgroup/memory/memory.limit_in_bytes":                 "9223372036854771712\n",
		},
		env:   map[string]string{},
		total: 20 * mib, inUse: 10 * mib,
	}
	b := detect(f.system())
	want := allowsFor(10*mib, 2*gib, 256*mib, 32*mib, 5)
	if b.Source.Name != "cgroup v1 memory.limit_in_bytes of /sys/fs/cgroup/memory/process_api" || b.Limit != want {
		t.Errorf("got %s %d, want %d", b.Source.Name, b.Limit, want)
	}
}

func TestCgroupMountsInNamespace(t *testing.T) {
	// Inside a cgroup namespace the mount's root is the container's
	// cgroup and /proc/self/cgroup is relative to it.
	m := cgroupMounts([]byte("40 30 0:31 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n" +
		"41 30 0:32 / /mnt/with\\040space rw - cgroup cgroup rw,memory,hugetlb\n"))
	if m.v2.root != "/docker/abc" || m.v2.point != "/sys/fs/cgroup" {
		t.Errorf("v2 %+v", m.v2)
	}
	if m.v1memory.root != "" || m.v1memory.point != "/mnt/with space" {
		t.Errorf("v1 %+v", m.v1memory)
	}
	f := fakeSystem{
		files: map[string]string{
			"/proc/self/cgroup":                "0::/docker/abc\n",
			"/proc/self/mountinfo":             "40 30 0:31 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n",
			"/sys/fs/cgroup/memory.max":        "1073741824\n",
			"/sys/fs/cgroup/memory.current":    "0\n",
			"/sys/fs/cgroup/docker/memory.max": "1\n", // outside the namespace: never read
		},
		env: map[string]string{},
	}
	b := detect(f.system())
	if b.Source.Name != "cgroup v2 memory.max of /sys/fs/cgroup" || b.Limit != allowsFor(0, gib, 0, 32*mib, 5) {
		t.Errorf("got %s %d", b.Source.Name, b.Limit)
	}
}

func TestGivenIsCappedByHardLimits(t *testing.T) {
	f := slurmNode()
	d := detect(f.system())
	b := Given("--memory", 8*gib, d)
	if b.Limit != d.Limit || !strings.Contains(b.Note, "--memory 8.00 GiB is more than cgroup v2") {
		t.Errorf("limit %d note %q", b.Limit, b.Note)
	}
	small := Given("--memory", 100*mib, d)
	if small.Limit != 100*mib || small.Source.Name != "--memory" || small.Note != "" {
		t.Errorf("%+v", small)
	}
	// The binary's resident pages count against a size for the process.
	f.files["/proc/self/status"] = "VmRSS:\t   16384 kB\n"
	if b := Given("--memory", 100*mib, detect(f.system())); b.Limit != 94*mib || b.Outside != 6*mib {
		t.Errorf("--memory with 6 MiB outside the runtime: limit %d, outside %d", b.Limit, b.Outside)
	}
	delete(f.files, "/proc/self/status")
	// MemAvailable is no hard limit: --memory may go past it.
	f.files["/proc/meminfo"] = "MemAvailable: 1048576 kB\n"
	if b := Given("--memory", 3*gib, detect(f.system())); b.Limit != 3*gib {
		t.Errorf("--memory past MemAvailable: %d", b.Limit)
	}
}

func TestSizes(t *testing.T) {
	for s, want := range map[string]int64{
		"4G": 4 * gib, "4GB": 4 * gib, "4GiB": 4 * gib, "4 g": 4 * gib, "512M": 512 * mib, "512m": 512 * mib,
		"1.5G": 3 * gib / 2, "1048576": mib, "64KiB": 64 * kib, "2T": 2 << 40, "100B": 100,
	} {
		if got, err := ParseSize(s); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "G", "4X", "-1G", "0", "0.1", "1e30", "4 GB extra", "nan"} {
		if got, err := ParseSize(s); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", s, got)
		}
	}
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.00 KiB", 1536 * kib: "1.50 MiB", 953 * mib: "953 MiB", 37*mib + mib/2: "37.5 MiB", 3 * gib: "3.00 GiB",
	} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestBytesSaturates(t *testing.T) {
	if got := Bytes(1<<40, 1<<40); got != math.MaxInt64 {
		t.Errorf("Bytes overflow: %d", got)
	}
	if got := Bytes(1000, 8, 3); got != 24000 {
		t.Errorf("Bytes = %d", got)
	}
	if got := Bytes(5, 0); got != 0 {
		t.Errorf("Bytes with 0 = %d", got)
	}
}

func TestCheck(t *testing.T) {
	ctx := context.Background()
	if err := Check(ctx, "anything", math.MaxInt64, ""); err != nil {
		t.Fatalf("no budget: %v", err)
	}
	runtime.GC()
	b := &Budget{Source: Source{Name: "a test"}}
	b.Limit = b.inUse() + 64*mib
	ctx = NewContext(ctx, b)
	if FromContext(ctx) != b {
		t.Fatal("FromContext")
	}
	if err := Check(ctx, "small", 16*mib, ""); err != nil {
		t.Errorf("16 MiB of 64 left: %v", err)
	}
	err := Check(ctx, "derive: transition arrays", 256*mib, "use simulate")
	var oe *Error
	if !errors.Is(err, ErrOverBudget) || !errors.As(err, &oe) {
		t.Fatalf("256 MiB of 64 left: %v", err)
	}
	// Have is the limit less the heap in use at the check; the collector
	// may have freed some since the limit was set, so Have can exceed the
	// 64 MiB we left then, never the whole limit.
	if oe.Need != 256*mib || oe.Have <= 0 || oe.Have > b.Limit || oe.Limit != b.Limit || oe.Stage != "derive: transition arrays" {
		t.Errorf("error fields %+v", oe)
	}
	msg := err.Error()
	for _, want := range []string{"memory budget exceeded: derive: transition arrays: need 256 MiB, ", " left of the ", " budget (a test); use simulate"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("message spans lines: %q", msg)
	}
	// What Check allowed really is there: allocate it and the budget's
	// use grows by about that much.
	before := b.inUse()
	keep := make([]byte, 16*mib)
	for i := range keep {
		keep[i] = 1
	}
	if grew := b.inUse() - before; grew < 15*mib {
		t.Errorf("a 16 MiB array raised the use by %d", grew)
	}
	if b.Left() > b.Limit-before-15*mib {
		t.Errorf("Left %d after the allocation", b.Left())
	}
	runtime.KeepAlive(keep)
}

var sink []byte

// TestCheckCollectsGarbage: memory that is garbage when a check fails at
// first is collected and returned, and the check passes.
func TestCheckCollectsGarbage(t *testing.T) {
	runtime.GC()
	b := &Budget{Source: Source{Name: "a test"}}
	b.Limit = b.inUse() + 96*mib
	sink = make([]byte, 128*mib)
	for i := 0; i < len(sink); i += 4096 {
		sink[i] = 1
	}
	sink = nil // garbage, not yet collected
	if err := b.Check("after garbage", 64*mib, ""); err != nil {
		t.Errorf("64 MiB of a 96 MiB budget, 128 MiB of it garbage: %v", err)
	}
}

func TestDegrade(t *testing.T) {
	var got []string
	b := &Budget{Limit: gib, Warn: func(m string) { got = append(got, m) }}
	Degrade(NewContext(context.Background(), b), "passage: %d passages one at a time", 8)
	Degrade(context.Background(), "not heard")
	if len(got) != 1 || got[0] != "passage: 8 passages one at a time" {
		t.Errorf("%q", got)
	}
}

// BenchmarkCheck is the cost of a check that passes: one read of the
// runtime's memory metrics (made once per array growth, per stage).
func BenchmarkCheck(b *testing.B) {
	bud := &Budget{Limit: math.MaxInt64 / 2, Source: Source{Name: "a benchmark"}}
	for b.Loop() {
		if err := bud.Check("x", 1<<20, ""); err != nil {
			b.Fatal(err)
		}
	}
}
