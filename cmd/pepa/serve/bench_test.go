package serve

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// benchServer is a server on a fresh directory with the seed posted and
// its first two events taken, called through its handler (no network).
func benchServer(b *testing.B) (h http.Handler, id string) {
	b.Helper()
	s, err := Open(context.Background(), Config{Dir: b.TempDir(), Token: testToken})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	h = s.Handler()
	src, err := os.ReadFile(seedPath)
	if err != nil {
		b.Fatal(err)
	}
	w := serveOnce(h, "POST", "/v1/models?name=seed", string(src), "")
	if w.Code != 201 {
		b.Fatalf("POST model: %d %s", w.Code, w.Body)
	}
	id = w.Body.String()[strings.Index(w.Body.String(), `"id": "`)+7:][:16]
	if w := serveOnce(h, "POST", "/v1/models/"+id+"/events", eventsJSON(seedEvents[:2]), ""); w.Code != 200 {
		b.Fatalf("POST events: %d %s", w.Code, w.Body)
	}
	return h, id
}

func serveOnce(h http.Handler, method, path, body, key string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// BenchmarkQueryCached: a robustness query the cache answers (the
// figures' JSON made once): the server's side of a controller's poll.
func BenchmarkQueryCached(b *testing.B) {
	h, id := benchServer(b)
	path := "/v1/models/" + id + "/robustness?beta=45"
	serveOnce(h, "GET", path, "", "")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if w := serveOnce(h, "GET", path, "", ""); w.Code != 200 {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
}

// BenchmarkEventPost: one event taken and on disk (appended, fsynced)
// with an Idempotency-Key; a new model every 12 events (outside the
// timer). The fsync sets the cost.
func BenchmarkEventPost(b *testing.B) {
	var evs []string
	for k := 0; k < 3; k++ {
		for m := 1; m <= 4; m++ {
			evs = append(evs, fmt.Sprintf(`{"time": %d, "machine": "M%d", "action": "compute%d"}`, len(evs)+1, m, m+4*k))
		}
	}
	h, id := benchServer(b)
	src, _ := os.ReadFile(seedPath)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(evs) == 0 {
			b.StopTimer()
			w := serveOnce(h, "POST", "/v1/models?name=seed", string(src), "")
			id = w.Body.String()[strings.Index(w.Body.String(), `"id": "`)+7:][:16]
			b.StartTimer()
		}
		if w := serveOnce(h, "POST", "/v1/models/"+id+"/events", evs[i%len(evs)], fmt.Sprint("k", i)); w.Code != 200 {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
}
