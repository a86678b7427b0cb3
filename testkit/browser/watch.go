package browser

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
)

// maxLines bounds the page's messages a watcher keeps (the last ones).
const maxLines = 40

// watcher keeps what a failed step's report needs and the page does not
// show: the requests still in flight (a page that never finishes loading a
// module is blank, with no error of its own) and the page's console and
// log messages.
type watcher struct {
	mu       sync.Mutex
	inFlight map[network.RequestID]request
	lines    []string
}

type request struct {
	method, url string
	sent        time.Time
}

type watcherKey struct{}

func newWatcher() *watcher { return &watcher{inFlight: map[network.RequestID]request{}} }

// event takes one DevTools event of the tab (called on chromedp's event
// goroutine; it must not block).
func (w *watcher) event(ev any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		w.inFlight[e.RequestID] = request{method: e.Request.Method, url: e.Request.URL, sent: time.Now()}
	case *network.EventLoadingFinished:
		delete(w.inFlight, e.RequestID)
	case *network.EventLoadingFailed:
		if r, ok := w.inFlight[e.RequestID]; ok {
			w.line(fmt.Sprintf("request failed: %s %s: %s%s", r.method, r.url, e.ErrorText, map[bool]string{true: " (canceled)"}[e.Canceled]))
		}
		delete(w.inFlight, e.RequestID)
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg += " " + d.Exception.Description
		}
		w.line(fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, msg))
	case *runtime.EventConsoleAPICalled:
		var args []string
		for _, a := range e.Args {
			if a.Value != nil {
				args = append(args, string(a.Value))
			} else {
				args = append(args, a.Description)
			}
		}
		w.line(fmt.Sprintf("console.%s: %s", e.Type, strings.Join(args, " ")))
	case *cdplog.EventEntryAdded:
		w.line(fmt.Sprintf("log %s %s: %s %s", e.Entry.Level, e.Entry.Source, e.Entry.Text, e.Entry.URL))
	}
}

func (w *watcher) line(s string) {
	if w.lines = append(w.lines, time.Now().Format("15:04:05.000 ")+s); len(w.lines) > maxLines {
		w.lines = w.lines[len(w.lines)-maxLines:]
	}
}

// report says what the tab of ctx still waits for and what its page said,
// for a failed step's message ("" without a watcher).
func report(ctx context.Context) string {
	w, ok := ctx.Value(watcherKey{}).(*watcher)
	if !ok {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	reqs := make([]request, 0, len(w.inFlight))
	for _, r := range w.inFlight {
		reqs = append(reqs, r)
	}
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].sent.Before(reqs[j].sent) })
	fmt.Fprintf(&b, "\nrequests in flight: %d", len(reqs))
	for _, r := range reqs {
		fmt.Fprintf(&b, "\n  %s %s (for %s)", r.method, r.url, time.Since(r.sent).Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "\nthe page's messages: %d", len(w.lines))
	for _, l := range w.lines {
		b.WriteString("\n  " + l)
	}
	return b.String()
}
