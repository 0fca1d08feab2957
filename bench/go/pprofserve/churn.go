// churn.go: the allocation-heavy workload of pprofserve -churn N, for
// bench/heap_stream.sh: N goroutines play a small service whose heap
// profile keeps changing, so that 600 profiles fetched once a second are
// like a real Go program's and not 600 copies of one.
//
// Each worker serves "requests": a handler (six, each allocating its own
// mix: maps of different sizes, slices of structs, byte buffers, strings)
// under a chain of middlewares (four, each on or off per request: 16
// chains), so the same allocation site is reached by many call stacks.
// Most of what a request allocates is garbage at once; some is retained:
//   - a shared cache (map keyed by request key) whose capacity follows a
//     slow wave (period -wave), so in-use bytes and objects rise and fall;
//   - per worker, a ring of recent results whose length follows the same
//     wave, phase-shifted per worker;
//   - a "session" map per worker replaced every few seconds (a burst of
//     frees and new allocations under other stacks).
//
// The handler mix drifts over time (one handler is hot for a while, then
// another), which moves the alloc_* and inuse_* totals between stacks.
// Each worker sleeps between batches: ~10 % of a core in all at -churn 4.
package main

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"time"
)

type item struct {
	id    int64
	name  string
	score float64
	tags  []string
}

type churnState struct {
	mu    sync.Mutex
	cache map[string][]byte
	order []string
	wave  time.Duration
	start time.Time
}

// level is the wave at time now for phase ph: between 0.1 and 1.
func (s *churnState) level(ph float64) float64 {
	t := float64(time.Since(s.start)) / float64(s.wave)
	return 0.55 + 0.45*math.Sin(2*math.Pi*t+ph)
}

// keep retains b under key, evicting the oldest entries beyond the
// wave's current capacity (at most 4,096 entries).
func (s *churnState) keep(key string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.cache[key]; !ok {
		s.order = append(s.order, key)
	}
	s.cache[key] = b
	limit := int(4096 * s.level(0))
	for len(s.order) > limit {
		delete(s.cache, s.order[0])
		s.order = s.order[1:]
	}
}

type request struct {
	rng    *rand.Rand
	key    string
	size   int
	result []byte
}

type handler func(s *churnState, r *request)

//go:noinline
func handleLookup(s *churnState, r *request) {
	m := make(map[string]int, r.size/8)
	for i := 0; i < r.size/8; i++ {
		m[fmt.Sprintf("%s/%d", r.key, i)] = i
	}
	r.result = make([]byte, 64+len(m))
}

//go:noinline
func handleSearch(s *churnState, r *request) {
	recs := make([]item, r.size/16+1)
	for i := range recs {
		recs[i] = item{id: r.rng.Int63(), name: strings.Repeat("x", 8+i%24), score: r.rng.Float64()}
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].score < recs[j].score })
	r.result = []byte(recs[0].name)
}

//go:noinline
func handleRender(s *churnState, r *request) {
	var b strings.Builder
	for i := 0; i < r.size/4; i++ {
		fmt.Fprintf(&b, "<li>%s %d</li>", r.key, i)
	}
	r.result = []byte(b.String())
}

//go:noinline
func handleUpload(s *churnState, r *request) {
	buf := make([]byte, r.size*64)
	r.rng.Read(buf[:256])
	r.result = buf[:r.size*8]
	s.keep(r.key, append([]byte(nil), buf[:r.size*4]...))
}

//go:noinline
func handleIndex(s *churnState, r *request) {
	idx := make(map[int][]int)
	for i := 0; i < r.size/4; i++ {
		k := r.rng.Intn(64)
		idx[k] = append(idx[k], i)
	}
	r.result = make([]byte, len(idx)*16)
}

//go:noinline
func handleReport(s *churnState, r *request) {
	rows := make([][]string, 0, 8)
	for i := 0; i < r.size/32+1; i++ {
		rows = append(rows, []string{r.key, fmt.Sprint(i), strings.Repeat("-", i%40)})
	}
	r.result = []byte(strings.Join(rows[len(rows)-1], ","))
	s.keep("report/"+r.key, r.result)
}

var handlers = []handler{handleLookup, handleSearch, handleRender, handleUpload, handleIndex, handleReport}

// The middlewares: each a distinct frame on the way to the handler.

//go:noinline
func withAuth(s *churnState, r *request, next func()) {
	r.key = "u" + r.key
	next()
}

//go:noinline
func withTrace(s *churnState, r *request, next func()) {
	span := make([]byte, 48)
	next()
	_ = span
}

//go:noinline
func withGzip(s *churnState, r *request, next func()) {
	next()
	r.result = append(make([]byte, 0, len(r.result)+16), r.result...)
}

//go:noinline
func withLimit(s *churnState, r *request, next func()) { next() }

var middlewares = []func(*churnState, *request, func()){withAuth, withTrace, withGzip, withLimit}

// serve runs handler h under the middlewares whose bit is set in mask.
func serve(s *churnState, r *request, h handler, mask int) {
	call := func() { h(s, r) }
	for i := len(middlewares) - 1; i >= 0; i-- {
		if mask&(1<<i) != 0 {
			m, next := middlewares[i], call
			call = func() { m(s, r, next) }
		}
	}
	call()
}

//go:noinline
func newSessions(rng *rand.Rand, n int) map[int64]*item {
	m := make(map[int64]*item, n)
	for i := 0; i < n; i++ {
		m[rng.Int63()] = &item{id: int64(i), tags: make([]string, i%5)}
	}
	return m
}

func churnWorker(s *churnState, w int, seed int64) {
	rng := rand.New(rand.NewSource(seed + int64(w)))
	ph := float64(w) * math.Pi / 3
	var ring [][]byte
	sessions := newSessions(rng, 256)
	lastSessions := time.Now()
	for i := 0; ; i++ {
		// The hot handler drifts: for 20 s handler k gets half the requests.
		hot := (int(time.Since(s.start)/(20*time.Second)) + w) % len(handlers)
		for j := 0; j < 20; j++ {
			h := hot
			if rng.Intn(2) == 0 {
				h = rng.Intn(len(handlers))
			}
			r := &request{rng: rng, key: fmt.Sprintf("k%d", rng.Intn(10000)), size: 16 << uint(rng.Intn(7))}
			serve(s, r, handlers[h], rng.Intn(16))
			ring = append(ring, r.result)
		}
		// Trimmed into a new array, so the dropped results are freed.
		if limit := int(2048 * s.level(ph)); len(ring) > limit {
			ring = append([][]byte(nil), ring[len(ring)-limit:]...)
		}
		if time.Since(lastSessions) > time.Duration(3+w)*time.Second {
			sessions = newSessions(rng, 64+rng.Intn(1024))
			lastSessions = time.Now()
		}
		_ = sessions
		time.Sleep(10 * time.Millisecond)
	}
}

// startChurn starts n churn workers; the retained sets follow a wave of
// the given period.
func startChurn(n int, wave time.Duration, seed int64) {
	s := &churnState{cache: make(map[string][]byte), wave: wave, start: time.Now()}
	for w := 0; w < n; w++ {
		go churnWorker(s, w, seed)
	}
}
