// pprofserve plays N Go pods for bench/scrape.sh: one process listening on N
// loopback addresses (127.1.0.1, 127.1.0.2, ... — Linux routes all of
// 127/8 to lo) on the same port, each serving real net/http/pprof profiles
// of this process, and recording when every request arrived so that the
// benchmark measures scrape lateness outside Kiln. Standard library only.
//
//	pprofserve -n 1000 -port 6060 [-refresh 1s] [-cpu-hold=true] [-cpu-capture 2s]
//	pprofserve -n 0 -control-port 6061 -churn 4 [-wave 120s] [-seed 1]
//
// Prints "ready n=N port=P control=C" on stdout once every address listens
// (C: the control listener's port, the one bound when -control-port is 0).
//
//   - /debug/pprof/heap, /debug/pprof/goroutine: the profiles of this
//     process (runtime/pprof, the bytes net/http/pprof serves), taken anew
//     every -refresh (see cached; -refresh 0: net/http/pprof's live handlers,
//     one profile per request). A goroutine allocates and keeps buffers from
//     several call sites (a heap profile with some content) and -parked
//     goroutines block.
//   - /debug/pprof/profile: Go's own handler allows one CPU profile per
//     process at a time (1,000 pods are 1,000 processes), so this serves a
//     real CPU profile of this process captured once at startup
//     (runtime/pprof, -cpu-capture long). With -cpu-hold (default) the answer
//     comes after `seconds`, as a real Go program answers; the request is
//     recorded when it arrives.
//   - The control listener (127.0.0.1, port -control-port, default
//     ephemeral): GET /arrivals → "ADDR_INDEX TYPE UNIX_NS" per request so
//     far (TYPE cpu|memory|goroutine); GET /debug/pprof/* profiles this
//     program itself, live (net/http/pprof).
//   - -churn N (default 0: off) adds N goroutines of an allocation-heavy
//     workload whose heap profile keeps changing (churn.go): what
//     bench/heap_stream.sh fetches from the control listener's
//     /debug/pprof/heap (-n 0: no pod listeners).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"hash/fnv"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	rpprof "runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

type arrival struct {
	idx int32
	typ uint8
	ns  int64
}

var (
	mu       sync.Mutex
	arrivals []arrival
	typNames = []string{"cpu", "memory", "goroutine"}
	cpuProf  []byte
	sink     uint64
	kept     [][]byte
	keptMu   sync.Mutex
)

func record(idx int, typ uint8) {
	a := arrival{int32(idx), typ, time.Now().UnixNano()}
	mu.Lock()
	arrivals = append(arrivals, a)
	mu.Unlock()
}

// work hashes n bytes (FNV-1a): CPU for the captured profile.
//
//go:noinline
func work(n int) {
	h := fnv.New64a()
	var b [1]byte
	for i := 0; i < n; i++ {
		b[0] = byte(i)
		h.Write(b[:])
	}
	sink = h.Sum64()
}

//go:noinline
func allocSmall() []byte { return make([]byte, 512) }

//go:noinline
func allocMedium() []byte { return make([]byte, 16<<10) }

//go:noinline
func allocLarge() []byte { return make([]byte, 256<<10) }

// deep calls f under d extra frames: distinct stacks for the profiles.
//
//go:noinline
func deep(d int, f func()) {
	if d <= 0 {
		f()
		return
	}
	deep(d-1, f)
}

// allocator keeps the last 512 buffers from three call sites at 32 stack
// depths each, ~400 allocations per second.
func allocator() {
	fs := []func() []byte{allocSmall, allocSmall, allocMedium, allocLarge}
	for i := 0; ; i++ {
		var b []byte
		deep(i%32, func() { b = fs[i%len(fs)]() })
		keptMu.Lock()
		if len(kept) < 512 {
			kept = append(kept, b)
		} else {
			kept[i%512] = b
		}
		keptMu.Unlock()
		if i%4 == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func parked(ch chan struct{}) { <-ch }

// captureCPU profiles this process for d while burning CPU in a few functions.
func captureCPU(d time.Duration) []byte {
	var b bytes.Buffer
	if err := rpprof.StartCPUProfile(&b); err != nil {
		log.Fatal(err)
	}
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(end); i++ {
				deep(i%32, func() { work(50000) })
				allocSmall()
			}
		}()
	}
	wg.Wait()
	rpprof.StopCPUProfile()
	return b.Bytes()
}

// cached serves the profile name of this process as taken at most every d
// ago: real bytes, without the per-request cost (a goroutine profile stops
// the world and walks every goroutine, 1,000 of which are this program's
// listeners, so one process answering for 1,000 pods would spend both cores
// on it; each real pod pays that for its own few goroutines).
func cached(name string, d time.Duration) http.Handler {
	var cur atomic.Value
	take := func() {
		var b bytes.Buffer
		if err := rpprof.Lookup(name).WriteTo(&b, 0); err != nil {
			log.Fatal(err)
		}
		cur.Store(b.Bytes())
	}
	take()
	go func() {
		for range time.Tick(d) {
			take()
		}
	}()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name))
		w.Write(cur.Load().([]byte))
	})
}

func main() {
	n := flag.Int("n", 1000, "listen addresses (pods)")
	port := flag.Int("port", 6060, "port on every address")
	hold := flag.Bool("cpu-hold", true, "answer /debug/pprof/profile after `seconds`, as Go does")
	capture := flag.Duration("cpu-capture", 2*time.Second, "length of the CPU profile served")
	nParked := flag.Int("parked", 50, "goroutines blocked forever")
	refresh := flag.Duration("refresh", time.Second, "serve heap/goroutine profiles taken this often (0: take one per request)")
	ctlPort := flag.Int("control-port", 0, "port of the control listener on 127.0.0.1 (0: ephemeral)")
	churn := flag.Int("churn", 0, "goroutines of the allocation-heavy workload (churn.go)")
	wave := flag.Duration("wave", 2*time.Minute, "period of the churn workload's retained-set wave")
	seed := flag.Int64("seed", 1, "seed of the churn workload")
	flag.Parse()

	cpuProf = captureCPU(*capture)
	ch := make(chan struct{})
	for i := 0; i < *nParked; i++ {
		go deep(i%32, func() { parked(ch) })
	}
	go allocator()
	startChurn(*churn, *wave, *seed)

	heap, gor := http.Handler(pprof.Handler("heap")), http.Handler(pprof.Handler("goroutine"))
	if *refresh > 0 {
		heap, gor = cached("heap", *refresh), cached("goroutine", *refresh)
	}
	for i := 0; i < *n; i++ {
		idx := i
		addr := fmt.Sprintf("%s:%d", Addr(i), *port)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			log.Fatalf("listen %s: %v", addr, err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/heap", func(w http.ResponseWriter, r *http.Request) {
			record(idx, 1)
			heap.ServeHTTP(w, r)
		})
		mux.HandleFunc("/debug/pprof/goroutine", func(w http.ResponseWriter, r *http.Request) {
			record(idx, 2)
			gor.ServeHTTP(w, r)
		})
		mux.HandleFunc("/debug/pprof/profile", func(w http.ResponseWriter, r *http.Request) {
			record(idx, 0)
			if *hold {
				sec, _ := strconv.Atoi(r.URL.Query().Get("seconds"))
				if sec <= 0 {
					sec = 30
				}
				select {
				case <-time.After(time.Duration(sec) * time.Second):
				case <-r.Context().Done():
					return
				}
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Disposition", `attachment; filename="profile"`)
			w.Write(cpuProf)
		})
		go func() { log.Fatal(http.Serve(ln, mux)) }()
	}

	cmux := http.NewServeMux()
	cmux.HandleFunc("/arrivals", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		a := append([]arrival(nil), arrivals...)
		mu.Unlock()
		var b bytes.Buffer
		for _, x := range a {
			fmt.Fprintf(&b, "%d %s %d\n", x.idx, typNames[x.typ], x.ns)
		}
		w.Write(b.Bytes())
	})
	cmux.HandleFunc("/debug/pprof/", pprof.Index)
	cmux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	cln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *ctlPort))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("ready n=%d port=%d control=%d\n", *n, *port, cln.Addr().(*net.TCPAddr).Port)
	os.Stdout.Sync()
	log.Fatal(http.Serve(cln, cmux))
}

// Addr is the loopback address of pod i: 127.1.(i/250).(i%250+1).
func Addr(i int) string { return fmt.Sprintf("127.1.%d.%d", i/250, i%250+1) }
