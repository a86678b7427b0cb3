package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/svc-project/svc/testkit/testcluster"
)

// benchSelectorWatches is how many door watches each run holds open.
const benchSelectorWatches = 400

// BenchmarkKube_selector_watches opens 400 watches of the door's VMIs
// with the largest labelSelector it takes (4 KiB, 32 requirements) and
// reports the process's heap per watch against 400 watches without one in
// the same run (the watchers' side is in the process too: an upper bound
// of the peer's share). A selector of 60 KB, which held 1.3 MB of the
// peer per watch, is refused now (400).
func BenchmarkKube_selector_watches(b *testing.B) {
	for range b.N {
		c := testcluster.New(b, 1, testcluster.Options{Prefix: "bselector"})
		m := c.WaitLeader()
		token := c.Token("admin", true)
		reqs := make([]string, 32)
		for i := range reqs {
			// label values are at most 63 characters
			reqs[i] = fmt.Sprintf("key%02d in (%s,%s)", i, strings.Repeat("v", 55), strings.Repeat("w", 55))
		}
		big := strings.Join(reqs, ",")
		if len(big) > 4096 {
			b.Fatalf("the selector is %d bytes", len(big))
		}
		heapPerWatch(b, m.Peer.APIAddr(), token, "") // the first opens what every later one reuses
		plain := heapPerWatch(b, m.Peer.APIAddr(), token, "")
		selected := heapPerWatch(b, m.Peer.APIAddr(), token, big)
		b.ReportMetric(plain/1024, "heap-KiB/watch")
		b.ReportMetric(selected/1024, "heap-KiB/selector-watch")
		b.Logf("%d door watches: %.0f KiB each without a selector, %.0f KiB each with a %d-byte one of 32 requirements (heap in use, both sides)", benchSelectorWatches, plain/1024, selected/1024, len(big))
	}
}

// heapPerWatch opens benchSelectorWatches door watches with selector and
// returns the heap they take each, both sides, once all are open.
func heapPerWatch(b *testing.B, addr, token, selector string) float64 {
	b.Helper()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := url.Values{"watch": {"true"}}
	if selector != "" {
		q.Set("labelSelector", selector)
	}
	var opened, done sync.WaitGroup
	var refused sync.Once
	for w := range benchSelectorWatches {
		opened.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(1+w%benchClientAddrs))}}
			hc := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext, DisableCompression: true}}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/apis/orka.macstadium.com/v1/namespaces/svc-default/virtualmachineinstances?"+q.Encode(), nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := hc.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				opened.Done()
				refused.Do(func() {
					var body []byte
					if resp != nil {
						body, _ = io.ReadAll(resp.Body)
					}
					b.Errorf("watch %d: %v %s", w, err, body)
				})
				return
			}
			defer resp.Body.Close()
			opened.Done()
			_, _ = bufio.NewReader(resp.Body).ReadString(0) // until the watch ends
		}()
	}
	opened.Wait()
	runtime.GC()
	var open runtime.MemStats
	runtime.ReadMemStats(&open)
	cancel()
	done.Wait()
	return float64(int64(open.HeapInuse)-int64(before.HeapInuse)) / benchSelectorWatches
}
