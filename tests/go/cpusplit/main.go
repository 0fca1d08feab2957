// cpusplit is a workload with known shape for Kiln's black-box tests
// (tests/blackbox/gosplit.test.mjs, scrape*.test.mjs). It serves
// net/http/pprof on -addr (default 127.0.0.1:0; the scrape tests give each
// program its own loopback address, 127.0.0.2 …, as a pod IP) and prints
// "port=N" on stdout once it listens. Standard library only (the test
// machines reach no module proxy).
//
//   - CPU: one goroutine calls main.hot three times and main.cold once per
//     round; both do the same work unit, so hot:cold CPU is about 3:1. The
//     loops are written out in each function (no shared callee) so that each
//     is the leaf of its own samples.
//   - Heap: main.allocator allocates 64 KiB buffers and keeps the last 256
//     (16 MiB in use).
//   - Goroutines: -parked goroutines block forever in main.parked.
//   - Mutex: -mutexers goroutines fight over one sync.Mutex in main.mutexer.
//   - Block: main.chanSender / main.chanReceiver block on an unbuffered channel.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"sync"
	"time"
)

const unit = 2_000_000 // iterations per work unit (~1-2 ms)

var sink uint64

//go:noinline
func hot() {
	x := sink | 1
	for i := 0; i < unit; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	sink = x
}

//go:noinline
func cold() {
	x := sink | 1
	for i := 0; i < unit; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	sink = x
}

func burn() {
	for {
		hot()
		hot()
		hot()
		cold()
		// Yield between rounds so the runtime never has to preempt the loops
		// asynchronously (runtime.asyncPreempt would take leaf samples from
		// hot/cold); the test also runs with GODEBUG=asyncpreemptoff=1.
		runtime.Gosched()
	}
}

var retained [256][]byte

//go:noinline
func allocator() {
	for i := 0; ; i++ {
		b := make([]byte, 64<<10)
		b[0] = byte(i)
		retained[i%len(retained)] = b
		time.Sleep(200 * time.Microsecond)
	}
}

//go:noinline
func parked(ch chan struct{}, wg *sync.WaitGroup) {
	wg.Done()
	<-ch
}

var mu sync.Mutex
var shared int

//go:noinline
func mutexer() {
	for {
		mu.Lock()
		shared++
		time.Sleep(100 * time.Microsecond)
		mu.Unlock()
	}
}

//go:noinline
func chanSender(ch chan int) {
	for i := 0; ; i++ {
		time.Sleep(time.Millisecond)
		ch <- i
	}
}

//go:noinline
func chanReceiver(ch chan int) {
	for {
		<-ch
	}
}

func main() {
	nParked := flag.Int("parked", 37, "goroutines to park forever")
	nMutex := flag.Int("mutexers", 4, "goroutines contending on one mutex")
	addr := flag.String("addr", "127.0.0.1:0", "address to serve net/http/pprof on")
	flag.Parse()

	runtime.SetBlockProfileRate(1)
	runtime.SetMutexProfileFraction(1)
	runtime.MemProfileRate = 64 << 10

	var wg sync.WaitGroup
	never := make(chan struct{})
	for i := 0; i < *nParked; i++ {
		wg.Add(1)
		go parked(never, &wg)
	}
	wg.Wait()
	for i := 0; i < *nMutex; i++ {
		go mutexer()
	}
	ch := make(chan int)
	go chanSender(ch)
	go chanReceiver(ch)
	go allocator()
	go burn()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("port=%d\n", ln.Addr().(*net.TCPAddr).Port)
	os.Stdout.Sync()
	log.Fatal(http.Serve(ln, nil))
}
