package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"pepa/models/observe"
)

// The load generator of pepa serve (README, "At run time"): run by hand,
//
//	go test ./cmd/pepa -run '^TestServeLoadMix$' -serve.load [-serve.bin PEPA] [-serve.duration 20s]
//
// It starts 'pepa serve' as a child process (this test binary as pepa, or
// the binary -serve.bin names, so that two builds can be compared on one
// mix) and drives it over loopback with the mix below for the duration,
// then prints p50/p90/p99/max of the latency each kind of request saw, the
// requests' counts, and the CPU time the server and the generator spent
// (the generator must spend far less than the server: it is not what is
// measured). Nothing is asserted about the times: the machine may be
// shared; the figures are for reading.
var (
	serveLoad         = flag.Bool("serve.load", false, "run TestServeLoadMix, pepa serve's load generator")
	serveLoadBin      = flag.String("serve.bin", "", "with -serve.load: the pepa binary to serve (default: this test binary as pepa)")
	serveLoadDuration = flag.Duration("serve.duration", 20*time.Second, "with -serve.load: how long the mix runs")
	servePostEvery    = flag.Duration("serve.post-every", 100*time.Millisecond, "with -serve.load: a controller's think time between events")
	servePollEvery    = flag.Duration("serve.poll-every", 10*time.Millisecond, "with -serve.load: a poller's think time between queries")
)

// The mix: 20 clients on 2 models, 10 a model. On each model one
// controller posts the seed's 12 completions (one a request, with an
// Idempotency-Key) every 100 ms, then posts a new model (the next batch)
// and goes on with it; 9 pollers ask its robustness (beta 40, 45 or 50,
// now the latest event's time; one query in ten now = latest + 5) every
// 10 ms (-serve.post-every, -serve.poll-every). Every client waits for its answer before it thinks again
// (closed loop).
const (
	loadModels      = 2
	loadPollers     = 9 // a model
	loadEventsModel = 12
)

// loadEvents are the seed's completions in an order the model can produce:
// each machine's three applications, the machines in turn.
func loadEvents() []observe.Event {
	var evs []observe.Event
	for k := 0; k < 3; k++ {
		for m := 1; m <= 4; m++ {
			evs = append(evs, observe.Event{Time: float64(len(evs) + 1), Machine: fmt.Sprintf("M%d", m), Action: fmt.Sprintf("compute%d", m+4*k)})
		}
	}
	return evs
}

// latencies collects one kind of request's latencies.
type latencies struct {
	mu   sync.Mutex
	d    []time.Duration
	errs []string
}

func (l *latencies) add(d time.Duration, err string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != "" {
		l.errs = append(l.errs, err)
		return
	}
	l.d = append(l.d, d)
}

func (l *latencies) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return "none"
	}
	sort.Slice(l.d, func(i, j int) bool { return l.d[i] < l.d[j] })
	p := func(q float64) time.Duration { return l.d[int(q*float64(len(l.d)-1))].Round(10 * time.Microsecond) }
	return fmt.Sprintf("%d, p50 %s, p90 %s, p99 %s, max %s (%d failed)", len(l.d), p(0.5), p(0.9), p(0.99), p(1), len(l.errs))
}

func TestServeLoadMix(t *testing.T) {
	if !*serveLoad {
		t.Skip("the load generator runs with -serve.load")
	}
	dir := filepath.Join(t.TempDir(), "state")
	tokenFile := writeTemp(t, "token", serveTestToken+"\n")
	os.Chmod(tokenFile, 0o600)
	var c *serveChild
	if *serveLoadBin != "" {
		c = startServeBinary(t, *serveLoadBin, dir, tokenFile)
	} else {
		c = startServeChild(t, dir, tokenFile)
	}
	seed := readSeed(t)
	evs := loadEvents()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	do := func(method, url, body string, header ...string) (int, []byte, error) {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+serveTestToken)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	var queries, events, creations latencies
	type batchState struct {
		id   atomic.Pointer[string]
		last atomic.Pointer[float64]
	}
	batches := make([]*batchState, loadModels)
	newBatch := func(b *batchState, n int) {
		t0 := time.Now()
		code, body, err := do("POST", c.url+"/v1/models?name=batch-"+fmt.Sprint(n), seed)
		if err != nil || code != 201 {
			t.Fatalf("POST model: %d %s %v", code, body, err)
		}
		creations.add(time.Since(t0), "")
		id := string(body[strings.Index(string(body), `"id": "`)+7:][:16])
		zero := 0.0
		b.last.Store(&zero)
		b.id.Store(&id)
	}
	for i := range batches {
		batches[i] = &batchState{}
		newBatch(batches[i], i)
	}
	stop := time.Now().Add(*serveLoadDuration)
	var usage0 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &usage0)
	var wg sync.WaitGroup
	for mi, b := range batches {
		wg.Add(1)
		go func(mi int, b *batchState) { // the controller
			defer wg.Done()
			next, n := 0, mi
			for time.Now().Before(stop) {
				time.Sleep(*servePostEvery)
				if next == loadEventsModel {
					n += loadModels
					newBatch(b, n)
					next = 0
					continue
				}
				ev := evs[next]
				t0 := time.Now()
				code, body, err := do("POST", c.url+"/v1/models/"+*b.id.Load()+"/events", eventsJSON([]observe.Event{ev}),
					"Idempotency-Key", fmt.Sprintf("batch-%d/event-%d", n, next))
				if err != nil || code != 200 {
					events.add(0, fmt.Sprintf("%d %s %v", code, body, err))
				} else {
					events.add(time.Since(t0), "")
				}
				last := ev.Time
				b.last.Store(&last)
				next++
			}
		}(mi, b)
		for p := 0; p < loadPollers; p++ {
			wg.Add(1)
			go func(p int) { // a poller
				defer wg.Done()
				for i := 0; time.Now().Before(stop); i++ {
					time.Sleep(*servePollEvery)
					q := fmt.Sprintf("?beta=%d", 40+5*((p+i)%3))
					if (p+i)%10 == 7 {
						q += fmt.Sprintf("&now=%g", *b.last.Load()+5)
					}
					t0 := time.Now()
					code, body, err := do("GET", c.url+"/v1/models/"+*b.id.Load()+"/robustness"+q, "")
					switch {
					case err != nil:
						queries.add(0, err.Error())
					case code == 400 && strings.Contains(string(body), "before the record's latest event"):
						// now asked just before an event moved past it: the poller's race, not the server's
					case code != 200:
						queries.add(0, fmt.Sprintf("%d %s", code, body))
					default:
						queries.add(time.Since(t0), "")
					}
				}
			}(p)
		}
	}
	wg.Wait()
	var usage1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &usage1)
	c.cmd.Process.Signal(syscall.SIGTERM)
	<-c.done
	cpu := func(u syscall.Rusage) time.Duration {
		return time.Duration(u.Utime.Nano() + u.Stime.Nano())
	}
	server := c.cmd.ProcessState.UserTime() + c.cmd.ProcessState.SystemTime()
	t.Logf("mix: %d models, %d clients (a controller posting an event every %s, %d pollers asking every %s, a model), %s, on %d CPUs",
		loadModels, loadModels*(1+loadPollers), *servePostEvery, loadPollers, *servePollEvery, *serveLoadDuration, runtime.NumCPU())
	t.Logf("queries:      %s", queries.summary())
	t.Logf("event POSTs:  %s", events.summary())
	t.Logf("model POSTs:  %s", creations.summary())
	t.Logf("CPU: the server %s, the generator %s", server.Round(time.Millisecond), (cpu(usage1) - cpu(usage0)).Round(time.Millisecond))
	for _, l := range []*latencies{&queries, &events} {
		for i, e := range l.errs {
			if i < 5 {
				t.Errorf("failed: %s", e)
			}
		}
	}
}

// startServeBinary is startServeChild with another pepa binary.
func startServeBinary(t *testing.T, bin, dir, tokenFile string) *serveChild {
	t.Helper()
	wrapper := filepath.Join(t.TempDir(), "pepa-serve-wrapper")
	// The child of startServeChild is this test binary; a script that
	// runs the other binary with the same arguments stands in for it.
	script := "#!/bin/sh\nexec " + shellQuote(bin) + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	saved := os.Args[0]
	os.Args[0] = wrapper
	defer func() { os.Args[0] = saved }()
	return startServeChild(t, dir, tokenFile)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
