package serve

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"pepa/models/observe"
)

const chromium = "/usr/bin/chromium"

// pageShot is where TestBrowserPage leaves a screenshot of the
// page (for the README).
const pageShot = "/tmp/serve-page.png"

// chromiumRun runs headless Chromium on a page with extra arguments and
// returns its standard output.
func chromiumRun(t *testing.T, page string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=5000"}, args...)
	cmd := exec.CommandContext(ctx, chromium, append(all, page)...)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return out.Bytes()
}

// TestBrowserPage: the page, in headless Chromium with the token in
// its #fragment as a person would pass it, lists the posted models and
// draws every machine's conditional CDF with its figures; a screenshot is
// left in /tmp/serve-page.png.
func TestBrowserPage(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no browser to test the page with (%v): apt-get install chromium", err)
	}
	if testing.Short() {
		t.Skip("runs a browser")
	}
	srv := start(t, t.TempDir(), Config{})
	a := postModel(t, srv.url, "mapping-a.pepa", readSeed(t))
	postEvents(t, srv.url, a, seedEvents)
	srcB, err := os.ReadFile(filepath.Join(filepath.Dir(seedPath), "mapping-b.pepa"))
	if err != nil {
		t.Fatal(err)
	}
	b := postModel(t, srv.url, "mapping-b.pepa", string(srcB))
	postEvents(t, srv.url, b, []observe.Event{{Time: 4, Machine: "M2", Action: "compute1"}, {Time: 9.5, Machine: "M1", Action: "compute5"}})

	page := srv.url + "/#token=" + url.QueryEscape(testToken) + "&beta=45"
	dom := string(chromiumRun(t, page, "--dump-dom"))
	for _, want := range []string{
		`data-id="` + a + `"`, `data-id="` + b + `"`,
		">mapping-a.pepa<", ">mapping-b.pepa<",
		"robustness ", " · 6 events, now = ", " · 2 events, now = ",
		"finished at 14", // mapping-a's M1
		"2 models; updated",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Four machines a model, each a row and (computed) a curve.
	if n := strings.Count(dom, `<tr class="machine">`); n != 8 {
		t.Errorf("%d machine rows, want 8", n)
	}
	if n := len(regexp.MustCompile(`<polyline `).FindAllString(dom, -1)); n != 8 {
		t.Errorf("%d curves, want 8", n)
	}
	for _, m := range []string{"M1", "M2", "M3", "M4"} {
		if !strings.Contains(dom, "</span>"+m+"</td>") {
			t.Errorf("the page lacks machine %s", m)
		}
	}
	// The token left the address bar; the page never put it in a URL.
	if strings.Contains(dom, "token=") {
		t.Errorf("the token is in the page:\n%s", dom)
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}

	shot := filepath.Join(t.TempDir(), "page.png")
	chromiumRun(t, page, "--hide-scrollbars", "--window-size=1000,1500", "--screenshot="+shot)
	png, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(pageShot, png, 0o644); err != nil {
		t.Logf("keeping the screenshot: %v", err)
	} else {
		t.Logf("screenshot of the page: %s (%d bytes)", pageShot, len(png))
	}
}
